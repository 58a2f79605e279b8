"""scheduled_events_info's main(), on the simulator over real HTTP: it reads and changes nothing (the _info
convention), in check mode or not; bad options fail in one sentence before IMDS is asked."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_info

from ...simulated_imds import Simulator, inject
from .module_runner import run

VM = "avset-web-vm0"


def info(sim: Simulator, check_mode: bool = False, **args: Any) -> Dict[str, Any]:
    return run(scheduled_events_info, dict({"imds_url": sim.vm_url(VM), "retries": 0}, **args), check_mode)


def files_under(root: Path) -> Dict[str, str]:
    return {str(p.relative_to(root)): p.read_text() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("check_mode", [False, True])
def test_it_reads_events_and_the_state_file_and_writes_nothing(sim: Simulator, tmp_path: Path,
                                                               check_mode: bool) -> None:
    event_id = inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "state.json"
    state.write_text(json.dumps({"version": 2, "document_incarnation": 1, "events": [], "approved": []}))
    before = files_under(tmp_path)
    result = info(sim, check_mode, state_path=str(state))
    assert result["failed"] is False and result["changed"] is False
    assert [e["event_id"] for e in result["events_for_this_vm"]] == [event_id]
    assert result["state_status"] == "loaded" and [e["event_id"] for e in result["diff"]["new"]] == [event_id]
    assert result["quiet"] is False and "lock" not in result
    assert files_under(tmp_path) == before, "an _info module changes nothing on the VM"
    assert sim.violations == []


def test_a_vm_without_events_or_state_is_quiet(sim: Simulator, tmp_path: Path) -> None:
    result = info(sim, state_path=str(tmp_path / "none" / "state.json"))
    assert result["quiet"] is True and result["state_status"] == "missing" and "warnings" not in result
    assert not (tmp_path / "none").exists()


@pytest.mark.parametrize("args, fragment", [
    ({"lock_path": "/tmp/x.lock"}, "Unsupported parameters"),  # the lock is scheduled_events_lock's
    ({"wait_timeout": -1}, "wait_timeout must be 0 or more"),
    ({"poll_interval": 0}, "poll_interval positive"),
])
def test_bad_options_fail_in_one_sentence_before_imds_is_asked(sim: Simulator, args: Dict[str, Any],
                                                               fragment: str) -> None:
    result = info(sim, **args)
    assert result["failed"] and fragment in result["msg"] and "Traceback" not in result["msg"]
    assert sim.engine.vms[VM].enabled_at is None, "IMDS was not asked"


def test_imds_that_does_not_answer_is_one_sentence(tmp_path: Path) -> None:
    result = run(scheduled_events_info, {"imds_url": "http://127.0.0.1:9", "retries": 0, "timeout": 1})
    assert result["failed"] and "Traceback" not in result["msg"] and result["msg"].endswith(".")
