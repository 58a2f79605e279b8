"""The cycle policy where hosts cannot tell everything: no document (an empty 200), VMs that dropped
out of the play, and hosts whose cycle failed."""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_policy import (
    UNSEEN_DOMAIN,
    cycle_state,
    plan_cycle,
    remembered_state,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import next_state


def event(event_id: str, resources: List[str], status: str = "Scheduled", source: str = "Platform") -> Dict[str, Any]:
    return {"event_id": event_id, "event_type": "Reboot", "event_status": status, "resources": resources,
            "not_before": "2026-11-22T03:00:00Z" if status == "Scheduled" else None, "event_source": source,
            "duration_in_seconds": -1, "description": "Host server is undergoing maintenance."}


def result(vm: str, fault_domain: int, events: Optional[List[Dict[str, Any]]], state: Optional[Dict[str, Any]] = None,
           ) -> Dict[str, Any]:
    """An info result; events None means the document was not available (empty body)."""
    return {"events": events or [], "document_available": events is not None,
            "document_incarnation": 3 if events is not None else None,
            "this_vm": {"name": vm, "fault_domain": fault_domain}, "state": state}


def saved(events: List[Dict[str, Any]], prepared: List[str] = (), approved: List[str] = ()) -> Dict[str, Any]:
    return next_state(2, events, list(prepared), list(approved))


def test_a_blind_host_recovers_nothing_and_keeps_its_state() -> None:
    reboot = event("E1", ["vm0"])
    previous = saved([reboot], prepared=["E1"])
    results = {"vm0": result("vm0", 0, None, previous)}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm0"]["recover"] == [] and plan["hosts"]["vm0"]["prepare"] == []
    assert cycle_state(results["vm0"], [], []) == previous
    seeing = {"vm0": result("vm0", 0, [], previous)}  # a real empty document: the event is gone
    assert [e["event_id"] for e in plan_cycle(seeing)["hosts"]["vm0"]["recover"]] == ["E1"]


def test_a_blind_host_never_leads_an_approval() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")  # approved at once, by the first listed host that can
    results = {"vm0": result("vm0", 0, None), "vm1": result("vm1", 0, [user])}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm0"]["approve"] == [] and plan["hosts"]["vm1"]["approve"] == ["U1"]


def test_an_event_waits_while_an_affected_host_is_blind() -> None:
    reboot = event("E1", ["vm0", "vm1"])
    results = {"vm0": result("vm0", 0, [reboot]), "vm1": result("vm1", 0, None)}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm0"]["approve"] == []
    assert "not prepared on vm1" in plan["hosts"]["vm0"]["waiting"][0]["reason"]


def test_a_blind_host_in_maintenance_still_holds_its_fault_domain() -> None:
    started = event("E1", ["vm0"], status="Started")
    results = {"vm0": result("vm0", 0, None, saved([started], prepared=["E1"], approved=["E1"])),
               "vm1": result("vm1", 1, [event("E2", ["vm1"])])}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm1"]["prepare"] == [] and plan["hosts"]["vm1"]["deferred"][0]["event_id"] == "E2"
    assert plan["fault_domains_in_maintenance"] == [0]


def test_a_started_event_of_vms_outside_the_play_holds_an_unseen_fault_domain() -> None:
    # vm1 and vm4 are rebooting (they cannot answer, so they are not in the play); vm2 sees their event.
    reboot = event("E1", ["vm1", "vm4"], status="Started")
    results = {"vm2": result("vm2", 2, [reboot, event("E2", ["vm2"])])}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm2"]["prepare"] == [] and plan["fault_domains_in_maintenance"] == [UNSEEN_DOMAIN]
    assert "unseen in maintenance" in plan["hosts"]["vm2"]["deferred"][0]["reason"]
    ours = {"vm1": result("vm1", 1, [reboot, event("E2", ["vm1"])]), "vm4": result("vm4", 1, [reboot])}
    assert [e["event_id"] for e in plan_cycle(ours)["hosts"]["vm1"]["prepare"]] == ["E2"]  # its own domain


def held(info: Dict[str, Any], by: str = "run a") -> Dict[str, Any]:
    """The same info result, for a VM whose lock another run holds."""
    return dict(info, lock={"taken": False, "owner": "run b",
                            "held_by": {"owner": by, "expires_at": "2026-11-22T03:15:00Z"}})


def test_a_host_another_run_holds_is_left_alone() -> None:
    reboot = event("E1", ["vm0"])
    gone = event("E0", ["vm0"])
    results = {"vm0": held(result("vm0", 0, [reboot], saved([gone])))}
    plan = plan_cycle(results)["hosts"]["vm0"]
    assert plan["prepare"] == [] and plan["approve"] == [] and plan["recover"] == []


def test_a_held_host_holds_its_fault_domain() -> None:
    results = {"vm0": held(result("vm0", 0, [event("E1", ["vm0"])])), "vm1": result("vm1", 1, [event("E2", ["vm1"])])}
    plan = plan_cycle(results)
    assert plan["hosts"]["vm1"]["prepare"] == [] and plan["hosts"]["vm1"]["deferred"][0]["event_id"] == "E2"
    assert plan["fault_domains_in_maintenance"] == [0]


def test_no_event_that_lists_a_held_host_is_approved_by_this_run() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")  # would be approved at once
    prepared = event("E1", ["vm0", "vm1"])
    results = {"vm0": result("vm0", 0, [user, prepared], saved([prepared], prepared=["E1"])),
               "vm1": held(result("vm1", 0, [user, prepared], saved([prepared], prepared=["E1"])))}
    plan = plan_cycle(results)
    assert plan["approvals"] == {}
    reasons = [w["reason"] for w in plan["hosts"]["vm0"]["waiting"]]
    assert reasons == ["another maintenance run holds vm1"] * 2
    only_held = {"vm1": held(result("vm1", 0, [user]))}
    assert plan_cycle(only_held)["approvals"] == {}


def test_a_failed_cycle_remembers_what_it_saw_but_records_no_progress() -> None:
    old, new = event("E1", ["vm0"]), event("E2", ["vm0"], status="Started")
    previous = saved([old], prepared=["E1"])
    remembered = remembered_state(result("vm0", 0, [new], previous))
    assert [e["event_id"] for e in remembered["events"]] == ["E1", "E2"]  # E1 is gone but not yet recovered
    assert remembered["prepared"] == ["E1"] and remembered["approved"] == []
    assert remembered["document_incarnation"] == previous["document_incarnation"]
    later = plan_cycle({"vm0": result("vm0", 0, [], remembered)})
    assert sorted(e["event_id"] for e in later["hosts"]["vm0"]["recover"]) == ["E1", "E2"]
    assert remembered_state(result("vm0", 0, None, previous)) == previous  # blind: nothing new to remember
