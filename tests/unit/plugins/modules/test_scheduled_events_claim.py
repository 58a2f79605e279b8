"""scheduled_events_claim's main(), on the simulator over real HTTP and real lock files: the lock is taken
before the read and kept only when the VM has work; a quiet VM or a failed read gives it back in the same
call; another run's live lock is reported and never touched; check mode writes nothing."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_claim

from ...simulated_imds import Simulator, inject
from .module_runner import run

VM = "avset-web-vm0"


def claim(sim: Simulator, state: Path, owner: str = "run a", check_mode: bool = False, **args: Any) -> Dict[str, Any]:
    base = {"imds_url": sim.vm_url(VM), "retries": 0, "state_path": str(state), "owner": owner}
    return run(scheduled_events_claim, dict(base, **args), check_mode)


def lock_owner(state: Path) -> str:
    return json.loads(Path(str(state) + ".lock").read_text())["owner"]


def test_a_vm_with_work_keeps_the_lock_taken_before_its_read(sim: Simulator, tmp_path: Path) -> None:
    event_id = inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "vm" / "state.json"
    result = claim(sim, state)
    assert result["failed"] is False and result["quiet"] is False
    assert [e["event_id"] for e in result["events_for_this_vm"]] == [event_id]
    assert result["lock"]["taken"] is True and result["lock"]["path"] == str(state) + ".lock"
    assert result["changed"] is True and lock_owner(state) == "run a", "a lock left for the run is a change"
    assert result["state_status"] == "missing" and not state.exists(), "the state is the caller's to save"


def test_a_quiet_vm_gets_its_lock_back_in_the_same_call(sim: Simulator, tmp_path: Path) -> None:
    inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": ["avset-web-vm1"]}})  # not this VM
    state = tmp_path / "state.json"
    result = claim(sim, state)
    assert result["quiet"] is True and result["lock"]["taken"] is False and result["lock"]["released"] is True
    assert result["changed"] is False and not Path(str(state) + ".lock").exists()


def test_another_runs_live_lock_is_reported_and_left_as_it_is(sim: Simulator, tmp_path: Path) -> None:
    inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "state.json"
    lock = Path(str(state) + ".lock")
    lock.write_text(lock_text("run b (AWX job 9)", datetime.now(timezone.utc), 900))
    before = lock.read_text()
    result = claim(sim, state)
    assert result["failed"] is False and result["lock"]["taken"] is False and result["changed"] is False
    assert result["lock"]["held_by"]["owner"] == "run b (AWX job 9)" and "run b" in result["lock"]["message"]
    assert result["events_for_this_vm"], "the read still happens: the plan counts the VM as held, not unread"
    assert lock.read_text() == before


def test_a_failed_read_gives_the_lock_back_and_names_the_vm_in_one_sentence(sim: Simulator, tmp_path: Path) -> None:
    state = tmp_path / "state.json"
    result = claim(sim, state, imds_url="http://127.0.0.1:9", timeout=0.5, first_call_timeout=0.5)
    assert result["failed"] and "Traceback" not in result["msg"] and result["msg"].endswith(".")
    assert result["lock"]["taken"] is False and not Path(str(state) + ".lock").exists()


def test_an_expired_lock_is_taken_over_with_a_warning(sim: Simulator, tmp_path: Path) -> None:
    inject(sim, {"type": "Freeze", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "state.json"
    Path(str(state) + ".lock").write_text(lock_text("dead run", datetime.now(timezone.utc) - timedelta(hours=2), 60))
    result = claim(sim, state)
    assert result["lock"]["taken"] and lock_owner(state) == "run a"
    assert any("took over the expired lock" in w for w in result["warnings"])


def test_check_mode_judges_the_lock_and_writes_nothing(sim: Simulator, tmp_path: Path) -> None:
    inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    state = tmp_path / "vm" / "state.json"
    result = claim(sim, state, check_mode=True)
    assert result["failed"] is False and result["quiet"] is False and result["lock"]["taken"] is False
    assert not (tmp_path / "vm").exists()


def test_lease_zero_is_a_plain_read_with_no_lock(sim: Simulator, tmp_path: Path) -> None:
    inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [VM]}})
    result = claim(sim, tmp_path / "state.json", lease_seconds=0)
    assert result["lock"] == {} and result["changed"] is False and result["events_for_this_vm"]
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("args, fragment", [
    ({"owner": " "}, "lock_owner must be a non-empty name"),
    ({"lease_seconds": 86401}, "at most 86400"),
    ({"wait_for_change": True}, "Unsupported parameters"),  # a wait must not hold the VM's lock
])
def test_bad_requests_fail_in_one_sentence_before_imds_is_asked(sim: Simulator, tmp_path: Path,
                                                                args: Dict[str, Any], fragment: str) -> None:
    result = claim(sim, tmp_path / "state.json", **args)
    assert result["failed"] and fragment in result["msg"] and "Traceback" not in result["msg"]
    assert sim.engine.vms[VM].enabled_at is None, "IMDS was not asked"
    assert list(tmp_path.iterdir()) == []
