"""scheduled_events_approve's main(), on the simulator over real HTTP: `changed` only when a POST is (or in
check mode would be) sent; what was planned, the VM's place in Resources, the ids and the document's incarnation are
checked before anything is sent; ids go back as served. One real ansible-playbook run per behaviour is
tests/modules/test_modules.py's."""
from __future__ import annotations

from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_approve

from ...simulated_imds import Simulator, inject
from .module_runner import run

LEADER, OUTSIDE = "avset-web-vm0", "avset-web-vm2"


def approve(sim: Simulator, vm: str = LEADER, check_mode: bool = False, **args: Any) -> Dict[str, Any]:
    return run(scheduled_events_approve, dict({"imds_url": sim.vm_url(vm), "retries": 0}, **args), check_mode)


def status(sim: Simulator, event_id: str) -> str:
    with sim.lock:
        sim.engine.advance_to(sim.clock.now())
        return {e["event_id"]: e["status"] for e in sim.engine.event_summaries()}[event_id]


@pytest.fixture
def reboot(sim: Simulator) -> str:
    return inject(sim, {"type": "Reboot", "notice_s": 900, "resources": {"names": [LEADER]}})


def test_check_mode_reports_the_change_and_sends_nothing(sim: Simulator, reboot: str) -> None:
    result = approve(sim, check_mode=True, event_ids=[reboot])
    assert result["changed"] is True and result["approved"] == [reboot]
    assert sim.engine.approvals == [] and status(sim, reboot) == "Scheduled"


def test_one_post_starts_the_event_and_is_the_only_change(sim: Simulator, reboot: str) -> None:
    result = approve(sim, event_ids=[reboot.lower()])  # matched case-insensitively, sent as served
    assert result["changed"] is True and result["approved"] == [reboot]
    (entry,) = sim.engine.approvals
    assert entry["accepted"] and entry["event_ids"] == [reboot] and status(sim, reboot) == "Started"
    again = approve(sim, event_ids=[reboot])
    assert again["changed"] is False and again["already_started"] == [reboot] and len(sim.engine.approvals) == 1


def test_an_event_that_does_not_list_this_vm_is_refused_and_nothing_is_sent(sim: Simulator, reboot: str) -> None:
    result = approve(sim, OUTSIDE, event_ids=[reboot])
    assert result["failed"] and result["changed"] is False
    assert result["refused"] == [reboot] and result["approved"] == []
    assert f"does not list this VM ({OUTSIDE}) in Resources" in result["msg"]
    assert sim.engine.approvals == [] and status(sim, reboot) == "Scheduled"


def test_force_sends_an_event_that_does_not_list_this_vm(sim: Simulator, reboot: str) -> None:
    result = approve(sim, OUTSIDE, event_ids=[reboot], force=True)
    assert result["changed"] is True and result["approved"] == [reboot]
    (entry,) = sim.engine.approvals
    assert entry["vm"] == OUTSIDE and entry["in_resources"] == {reboot: False}


def test_a_document_that_moved_on_or_a_missing_id_sends_nothing(sim: Simulator, reboot: str) -> None:
    ghost = "00000000-0000-0000-0000-000000000000"
    moved = approve(sim, event_ids=[reboot], expected_incarnation=999)
    assert moved["failed"] and "the document moved on" in moved["msg"]
    missing = approve(sim, event_ids=[reboot, ghost])
    assert missing["failed"] and missing["missing"] == [ghost] and "nothing was approved" in missing["msg"]
    assert sim.engine.approvals == [] and status(sim, reboot) == "Scheduled"


def test_missing_ignore_approves_the_rest_and_waits_for_its_start(sim: Simulator, reboot: str) -> None:
    ghost = "00000000-0000-0000-0000-000000000000"
    result = approve(sim, event_ids=[reboot, ghost], missing="ignore", wait_for_start=True, wait_timeout=10,
                     poll_interval=0.2)
    assert result["approved"] == [reboot] and result["started"] == [reboot]
    assert len(sim.engine.approvals) == 1


def test_an_event_changed_since_the_plan_is_stale_and_not_sent(sim: Simulator, reboot: str) -> None:
    planned = [{"event_id": reboot, "event_type": "Reboot", "resources": [LEADER, OUTSIDE]}]  # it listed two
    result = approve(sim, event_ids=[reboot], planned=planned)
    assert result["changed"] is False and result["stale"] == [reboot] and result["approved"] == []
    assert sim.engine.approvals == []


@pytest.mark.parametrize("args, fragment", [
    ({}, "one of the following is required"),
    ({"event_ids": ["x"], "events": [{"event_id": "x"}]}, "mutually exclusive"),
    ({"event_ids": [""]}, "event id '' is empty or not text."),
    ({"event_ids": ["x"], "lock_path": "/tmp/l"}, "Unsupported parameters"),  # the lock is scheduled_events_lock's
])
def test_bad_requests_fail_in_one_sentence_and_send_nothing(sim: Simulator, args: Dict[str, Any],
                                                            fragment: str) -> None:
    result = approve(sim, **args)
    assert result["failed"] and fragment in result["msg"] and "Traceback" not in result["msg"]
    assert sim.engine.approvals == []


# ------------------------------------------------------------------ write-ahead: on record before the POST

def test_the_approval_is_on_record_in_the_state_before_the_post(sim: Simulator, reboot: str, tmp_path: Any) -> None:
    import json
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks import approve as task

    state_path = tmp_path / "state.json"
    seen_at_post = []
    post = task.record_approval

    def spy(params: Dict[str, Any], ids: Any, edges: Any) -> None:
        post(params, ids, edges)
        seen_at_post.append(json.loads(state_path.read_text())["approved"])

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(task, "record_approval", spy)
        result = approve(sim, event_ids=[reboot], state_path=str(state_path))
    assert result["approved"] == [reboot] and seen_at_post == [[reboot]] and sim.engine.approvals
    assert json.loads(state_path.read_text())["approved"] == [reboot]


def test_a_run_whose_lock_was_taken_over_records_and_sends_nothing(sim: Simulator, reboot: str, tmp_path: Any) -> None:
    state_path = tmp_path / "state.json"
    from datetime import datetime, timezone
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
    (tmp_path / "state.json.lock").write_text(lock_text("thief run", datetime.now(timezone.utc), 600))
    result = approve(sim, event_ids=[reboot], state_path=str(state_path), lock_owner="this run")
    assert result["failed"] and "Nothing was approved" in result["msg"] and "thief run" in result["msg"]
    assert sim.engine.approvals == [] and not state_path.exists()


def test_a_damaged_state_file_fails_the_task_and_nothing_is_sent(sim: Simulator, reboot: str, tmp_path: Any) -> None:
    state_path = tmp_path / "state.json"
    state_path.write_text("{not json")
    result = approve(sim, event_ids=[reboot], state_path=str(state_path))
    assert result["failed"] and result["msg"].startswith(str(state_path)) and "Nothing was approved." in result["msg"]
    assert sim.engine.approvals == [] and state_path.read_text() == "{not json"
