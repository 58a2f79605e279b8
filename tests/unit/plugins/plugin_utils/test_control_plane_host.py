"""control_plane_host: a control-plane host's document and facts from the run's read, its files on the controller,
and what the read cannot vouch for failing the task in one sentence (so that the cycle counts the host as busy)."""
from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_read import ControlPlaneBlind
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import iso_utc
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.claim import run_claim
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    acknowledge_argument_spec,
    arm_client_for,
    read_control_plane,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import TaskFailed
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.control_plane_host import (
    ControlPlaneHost,
    checked_options,
    controller_path,
)
from tests.unit.plugins.module_utils.control_plane.test_host_read import IDS, WEB0, event, read


def fresh_read(*events: Dict[str, Any]) -> Dict[str, Any]:
    return read(*events, read_at=iso_utc(datetime.now(timezone.utc)))


def claim(tmp_path: Path, given: Dict[str, Any], warnings: List[str]) -> Dict[str, Any]:
    state_path = controller_path(str(tmp_path), "web0", "/var/lib/se/state.json")
    host = ControlPlaneHost("web0", {"vm_id": WEB0, "state_dir": str(tmp_path), "fault_domain": 1, "read": given},
                            warnings.append, state_path)
    params = {"resource_name": None, "include_instance": True, "state_path": state_path, "owner": "run 1",
              "lease_seconds": 60.0}
    return run_claim(params, host)


def test_a_claim_reads_the_hosts_events_from_the_read_and_takes_its_lock_on_the_controller(tmp_path: Path) -> None:
    warnings: List[str] = []
    result = claim(tmp_path, fresh_read(event(IDS[0], not_before="2099-01-01T00:00:00Z")), warnings)
    assert [e["event_id"] for e in result["events_for_this_vm"]] == [IDS[0]]
    assert result["this_vm"]["name"] == "Web-VM0" and result["this_vm"]["fault_domain"] == 1
    assert result["state_path"] == str(tmp_path / "web0" / "state.json") and not result["quiet"]
    assert (tmp_path / "web0" / "state.json.lock").exists(), "the lock is this run's, on the controller"


def test_a_read_that_cannot_vouch_for_the_host_fails_its_claim_in_one_sentence(tmp_path: Path) -> None:
    with pytest.raises(TaskFailed) as raised:
        claim(tmp_path, dict(fresh_read(), unreadable=["The Resource Graph row has no id."]), [])
    assert raised.value.msg.endswith("web0 counts as busy (unread).") and "Traceback" not in raised.value.msg
    assert not (tmp_path / "web0" / "state.json.lock").exists(), "a failed read gives its lock back"


def test_an_approval_of_an_event_the_read_does_not_place_on_the_host_sends_nothing() -> None:
    host = ControlPlaneHost("web0", {"vm_id": WEB0, "state_dir": "/unused", "read": fresh_read(event(IDS[0]))}, print)
    with pytest.raises(ControlPlaneBlind, match="does not list event %s on web0, so it is not acknowledged" % IDS[1]):
        host.approve([IDS[1]])


def test_the_acknowledge_options_are_complete_so_missing_credentials_fail_in_one_sentence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AZURE_CLIENT_ID", "AZURE_SECRET", "AZURE_TENANT", "AZURE_SUBSCRIPTION_ID", "AZURE_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", "/nonexistent")
    monkeypatch.setenv("PATH", "/nonexistent")  # no Azure CLI to fall back to
    params = ControlPlaneHost.params(scope="x")
    assert set(acknowledge_argument_spec()) <= set(params)  # a missing one was a KeyError, not a sentence
    with pytest.raises(TaskFailed, match=r"^There is no service principal to log in as, and no Azure CLI \(az\) "
                                         r"here: give a service principal, or install az and run az login\.$"):
        read_control_plane(arm_client_for(params), None, {}, {}, lambda text: None)


@pytest.mark.parametrize("options, cause", [
    ({"vm_id": WEB0}, "control_plane.state_dir must name"),
    ({"state_dir": "/x"}, "web0 has no VM ARM id"),
])
def test_options_the_host_cannot_be_read_without_are_refused_in_one_sentence(
        options: Dict[str, Any], cause: str) -> None:
    with pytest.raises(TaskFailed, match=cause):
        checked_options("web0", options)


def test_a_state_store_the_controller_cannot_reach_makes_the_host_busy_not_a_traceback(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")  # a file where the database's folder should be: it cannot be created
    host = ControlPlaneHost("web0", {"vm_id": WEB0, "store": "sqlite://%s/file/state.db" % tmp_path,
                                     "read": fresh_read()}, print, "/var/lib/se/state.json")
    with pytest.raises(TaskFailed, match=r"^Cannot read web0's state in the controller's state store \(cannot reach "
                                         r"the state store sqlite://.*\); web0 counts as busy \(unread\)\.$"):
        host.document()
