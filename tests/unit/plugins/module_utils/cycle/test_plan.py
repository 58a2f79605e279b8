"""The cycle's decisions (module_utils/cycle/plan.py), rule by rule, in milliseconds.

Each `test_regression_*` reproduces a defect an independent review found on the cycle before the
pure state machine; it fails on that code and passes now.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import confirm_approvals, plan_cycle
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import PolicyError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.transition import (
    AFTER_RECOVER,
    BEFORE_PREPARE,
    PREPARED,
    state_after,
    state_for_step,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import UNKNOWN_DOMAIN, UNSEEN_DOMAIN
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    event_record,
    load_state,
    state_text,
)

NOW = datetime(2026, 11, 22, 2, 45, tzinfo=timezone.utc)
IDS = {name: "%08x-0000-4000-8000-%012x" % (n, n) for n, name in enumerate(["E0", "E1", "E2", "E3", "U1"])}


def event(name: str, resources: List[str], status: str = "Scheduled", source: str = "Platform",
          event_type: str = "Reboot", duration: int = -1, minutes: float = 15) -> Dict[str, Any]:
    not_before = (NOW + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"event_id": IDS.get(name, name), "event_type": event_type, "event_status": status,
            "resources": resources, "not_before": not_before if status == "Scheduled" else None,
            "event_source": source, "duration_in_seconds": duration, "description": "Host maintenance.",
            "known_type": True, "known_status": True}


def saved(events: List[Dict[str, Any]], prepared: List[str] = (), approved: List[str] = (),
          prepare: str = "done") -> Dict[str, Any]:
    ids = [IDS.get(p, p) for p in prepared]
    return {"version": 2, "document_incarnation": 2, "approved": [IDS.get(a, a) for a in approved],
            "events": [event_record(e, prepare if e["event_id"] in ids else None) for e in events]}


def result(vm: str, fault_domain: int, events: Optional[List[Dict[str, Any]]], state: Optional[Dict[str, Any]] = None,
           **this_vm: Any) -> Dict[str, Any]:
    """An info result; events None means the document was not available (an empty 200)."""
    return {"events": events or [], "document_available": events is not None,
            "document_incarnation": 3 if events is not None else None,
            "this_vm": dict({"name": vm, "fault_domain": fault_domain, "zone": "", "vm_scale_set_name": ""}, **this_vm),
            "state": state}


def plan(results: Dict[str, Any], policy: Optional[Dict[str, Any]] = None, **extra: Dict[str, Any]) -> Dict[str, Any]:
    """plan_cycle over hosts given by their results; `extra` host inputs (e.g. unread hosts) are added as given."""
    hosts = {h: {"result": r, "availability_set": "as1"} for h, r in results.items()}
    hosts.update(extra)
    return plan_cycle(hosts, policy, NOW)


def ids(items: List[Dict[str, Any]]) -> List[str]:
    return [i["event_id"] for i in items]


def failed_read() -> Dict[str, Any]:
    return {"failed": True, "msg": "IMDS did not answer"}


# ------------------------------------------------------------------------------------- the basic rules

@pytest.mark.parametrize("source", ["Platform", "User"])
def test_a_host_prepares_only_events_its_own_read_shows_so_that_its_write_ahead_records_them(source: str) -> None:
    """Found by the fault model: the reads of one cycle are spread over time, and an event that appeared between
    vm0's read and vm1's was planned for vm0 from vm1's read; vm0's write-ahead (from its own read) recorded
    nothing, so a later recover for another event undid the drain this one still needed. A user's event, approved
    at once, waits for it too."""
    reboot = event("E1", ["vm0", "vm1"], source=source)
    reads = {"vm0": result("vm0", 0, []), "vm1": result("vm1", 0, [reboot])}
    p = plan(reads)
    for host, host_plan in p["hosts"].items():
        written = state_for_step(reads[host], host_plan, BEFORE_PREPARE)
        assert set(ids(host_plan["prepare"])) <= set(ids(written["events"])), f"{host} prepares what it records"
    assert ids(p["hosts"]["vm0"]["prepare"]) == [] and ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    waiting = [w["reason"] for h in p["hosts"].values() for w in h["waiting"]]
    assert all(h["approve"] == [] for h in p["hosts"].values()) and waiting == ["not prepared on vm0: approved once every listed host is prepared"]


@pytest.mark.parametrize("newer_first", [True, False])
def test_regression_a_host_prepares_only_events_its_own_read_lists_it_in(newer_first: bool) -> None:
    """Found by the fault model once news could reach a VM late: an event widened to vm0 was planned for vm0 from
    vm1's newer read while vm0's own read showed the event without vm0; vm0 drained, and its next cycle, reading
    its own document again, found the event no longer listing it and recovered: the drain undone while the event
    still listed vm0. vm0 now waits for its own read to list it (and the approval waits for vm0)."""
    before = event("E1", ["vm1"])
    widened = event("E1", ["vm1", "vm0"])
    reads = {"vm0": result("vm0", 0, [before]), "vm1": result("vm1", 0, [widened])}
    p = plan(dict(reversed(list(reads.items()))) if newer_first else reads)
    assert ids(p["hosts"]["vm0"]["prepare"]) == [] and ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    assert all(h["approve"] == [] for h in p["hosts"].values())
    assert [w["reason"] for h in p["hosts"].values() for w in h["waiting"]] == ["not prepared on vm0: approved once every listed host is prepared"]


def test_a_prepared_event_is_approved_once_by_its_first_listed_host() -> None:
    reboot = event("E1", ["vm1", "vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot]), "vm1": result("vm1", 0, [reboot])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    assert p["hosts"]["vm1"]["approve"] == [IDS["E1"]] and p["hosts"]["vm0"]["approve"] == []
    assert p["approvals"][IDS["E1"]]["hosts"] == ["vm1", "vm0"]


def test_a_preempt_is_prepared_and_approved_by_the_cycle_that_first_reads_it() -> None:
    """A Spot eviction's 30 s of notice leave no second cycle: its one VM prepares, then approves it at once."""
    evict = event("E1", ["vm0"], event_type="Preempt", minutes=0.5)
    p = plan({"vm0": result("vm0", 0, [evict]), "vm1": result("vm1", 1, [])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and p["hosts"]["vm0"]["approve"] == [IDS["E1"]]
    assert p["hosts"]["vm1"]["prepare"] == [] and p["hosts"]["vm1"]["approve"] == []


def test_user_events_are_approved_at_once_and_prepared_first() -> None:
    user = event("U1", ["vm0"], source="User")
    p = plan({"vm0": result("vm0", 0, [user])})
    assert p["hosts"]["vm0"]["approve"] == [IDS["U1"]] and ids(p["hosts"]["vm0"]["prepare"]) == [IDS["U1"]]
    assert plan({"vm0": result("vm0", 0, [user])}, {"approve_user_events": False, "prepare_configured": False}
                )["hosts"]["vm0"]["approve"] == []


def test_without_prepare_tasks_only_at_once_events_are_approved() -> None:
    reboot = event("E1", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot])}, {"prepare_configured": False})
    assert p["hosts"]["vm0"]["prepare"] == [] and p["hosts"]["vm0"]["approve"] == []
    assert "left to NotBefore" in p["hosts"]["vm0"]["waiting"][0]["reason"]


def test_a_short_freeze_is_approved_at_once_without_a_drain_and_a_long_one_is_prepared() -> None:
    short = event("E1", ["vm0"], event_type="Freeze", duration=5)
    long = event("E2", ["vm0"], event_type="Freeze", duration=30)
    p = plan({"vm0": result("vm0", 0, [short, long])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E2"]]
    assert sorted(p["hosts"]["vm0"]["approve"]) == sorted([IDS["E1"], IDS["E2"]])
    asked = plan({"vm0": result("vm0", 0, [short])}, {"prepare_short_freezes": True})
    assert ids(asked["hosts"]["vm0"]["prepare"]) == [IDS["E1"]]


def test_event_types_left_out_of_prepare_are_neither_prepared_nor_approved_early() -> None:
    reboot = event("E1", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot])}, {"prepare_event_types": ["Freeze"]})
    assert p["hosts"]["vm0"]["prepare"] == [] and p["hosts"]["vm0"]["approve"] == []
    assert "no prepare tasks run for Reboot" in p["hosts"]["vm0"]["waiting"][0]["reason"]


def test_types_left_to_not_before_and_unknown_types_are_never_approved() -> None:
    reboot, odd = event("E1", ["vm0"]), dict(event("E2", ["vm0"]), event_type="Hibernate", known_type=False)
    p = plan({"vm0": result("vm0", 0, [reboot, odd])}, {"leave_to_not_before": ["Reboot"]})
    reasons = sorted(w["reason"] for w in p["hosts"]["vm0"]["waiting"])
    assert p["hosts"]["vm0"]["approve"] == []
    assert reasons == ["policy leaves Reboot events to NotBefore: Azure starts it then, and no cycle approves it early",
                       "unknown EventType or EventStatus"]


def test_an_event_listing_vms_outside_the_target_is_refused_unless_allowed() -> None:
    reboot = event("E1", ["vm0", "vm9"])
    p = plan({"vm0": result("vm0", 0, [reboot])})
    assert p["hosts"]["vm0"]["prepare"] == [] and p["hosts"]["vm0"]["approve"] == []
    assert ids(p["hosts"]["vm0"]["refused"]) == [IDS["E1"]] and p["admissions"] == {IDS["E1"]: "refused"}
    assert "outside this target" in p["hosts"]["vm0"]["waiting"][0]["reason"]
    assert p["split_sets"] == {"availability set as1": ["vm9"]}
    allowed = plan({"vm0": result("vm0", 0, [reboot])}, {"approve_outside_inventory": True})
    assert allowed["hosts"]["vm0"]["approve"] == [IDS["E1"]] and allowed["split_sets"] == {}


def test_a_host_of_the_target_outside_this_runs_limit_is_no_split_but_its_event_waits_for_it() -> None:
    """An event-driven run covers the hosts with news (--limit): vm9 is a host of the target, only not of this run."""
    reboot = event("E1", ["vm0", "vm9"])
    p = plan_cycle({"vm0": {"result": result("vm0", 0, [reboot]), "availability_set": "as1"}}, None, NOW, ["vm9"])
    assert p["split_sets"] == {} and p["hosts"]["vm0"]["refused"] == []
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and p["hosts"]["vm0"]["approve"] == []
    assert "outside this play (vm9)" in p["hosts"]["vm0"]["waiting"][0]["reason"]


def test_an_already_approved_event_is_not_approved_again() -> None:
    reboot = event("E1", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot], saved([reboot], prepared=["E1"], approved=["E1"]))})
    assert p["hosts"]["vm0"]["approve"] == [] and p["hosts"]["vm0"]["waiting"] == []


def test_a_second_fault_domain_waits_for_the_first() -> None:
    first, second = event("E1", ["vm0"], minutes=10), event("E2", ["vm1"], minutes=14)
    p = plan({"vm0": result("vm0", 0, [first, second]), "vm1": result("vm1", 1, [first, second])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and p["hosts"]["vm1"]["prepare"] == []
    assert "availability set as1 / fault domain 1 waits" in p["hosts"]["vm1"]["deferred"][0]["reason"]
    assert p["fault_domains_in_maintenance"] == ["availability set as1 / fault domain 0"]
    two = plan({"vm0": result("vm0", 0, [first, second]), "vm1": result("vm1", 1, [first, second])},
               {"max_fault_domains_in_maintenance": 2})
    assert ids(two["hosts"]["vm1"]["prepare"]) == [IDS["E2"]]


def test_a_failed_prepare_drops_every_approval_that_lists_the_host() -> None:
    reboot, other = event("E1", ["vm0", "vm1"]), event("E2", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot, other]), "vm1": result("vm1", 0, [reboot, other])})
    confirmed = confirm_approvals(p, ["vm0"])  # vm1 failed its prepare
    assert ids(confirmed["vm0"]) == [IDS["E2"]] and confirmed["vm1"] == []
    assert confirmed["vm0"][0] == {"event_id": IDS["E2"], "event_type": "Reboot", "resources": ["vm0"]}


def test_bad_policies_are_one_sentence() -> None:
    with pytest.raises(PolicyError, match="at least 1"):
        plan({}, {"max_fault_domains_in_maintenance": 0})
    with pytest.raises(PolicyError, match="unknown policy setting"):
        plan({}, {"approve_everything": True})


# --------------------------------------------------------------------------------- what it cannot see

def test_a_blind_host_recovers_nothing_keeps_its_state_and_holds_its_domain() -> None:
    started = event("E1", ["vm0"], status="Started")
    previous = saved([started], prepared=["E1"], approved=["E1"])
    p = plan({"vm0": result("vm0", 0, None, previous), "vm1": result("vm1", 1, [event("E2", ["vm1"])])})
    assert p["hosts"]["vm0"]["recover"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]
    assert state_after(result("vm0", 0, None, previous)) == previous
    seeing = plan({"vm0": result("vm0", 0, [], previous)})  # a real empty document: the event is gone
    assert ids(seeing["hosts"]["vm0"]["recover"]) == [IDS["E1"]]


def test_a_started_event_of_vms_outside_the_target_holds_an_unseen_fault_domain() -> None:
    reboot = event("E1", ["vm1", "vm4"], status="Started")
    p = plan({"vm2": result("vm2", 2, [reboot, event("E2", ["vm2"])])})
    assert p["hosts"]["vm2"]["prepare"] == [] and p["fault_domains_in_maintenance"] == [UNSEEN_DOMAIN]


def held(info: Dict[str, Any], by: str = "run a") -> Dict[str, Any]:
    """A host input: read, but its lock is another run's."""
    return {"result": info, "availability_set": "as1",
            "lock": {"taken": False, "owner": "run b", "held_by": {"owner": by}}}


def test_a_host_another_run_holds_is_left_alone_and_holds_its_fault_domain() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")
    p = plan({"vm1": result("vm1", 1, [user])}, vm0=held(result("vm0", 0, [user, event("E0", ["vm0"])])))
    assert p["hosts"]["vm0"]["prepare"] == [] and p["approvals"] == {}
    assert p["hosts"]["vm1"]["waiting"][0]["reason"] == "another maintenance run holds vm0"
    assert "availability set as1 / fault domain 0" in p["fault_domains_in_maintenance"]


# ------------------------------------------------------------------------------------------ regressions

def test_regression_what_was_prepared_is_saved_before_the_post_and_recovered_after_a_later_failure() -> None:
    reboot = event("E1", ["vm0"])
    checkpoint = state_after(result("vm0", 0, [reboot]), prepared_now=[IDS["E1"]])  # saved before the POST
    # The approval POST (or a lock, a recover, a cancelled job) then failed the host: nothing else was saved.
    # The event ran and is gone before the next good cycle:
    after = plan({"vm0": result("vm0", 0, [], checkpoint)})
    assert ids(after["hosts"]["vm0"]["recover"]) == [IDS["E1"]]
    loaded, status, _message = load_state(state_text(checkpoint))
    assert status == "loaded" and loaded == checkpoint


def test_regression_a_fault_domain_stays_in_maintenance_until_its_recover_is_saved() -> None:
    done = event("E1", ["vm0"])  # prepared, ran, and is gone: vm0 recovers in this cycle, last
    previous = saved([done], prepared=["E1"])
    nxt = event("E2", ["vm1"])
    p = plan({"vm0": result("vm0", 0, [nxt], previous), "vm1": result("vm1", 1, [nxt])})
    assert ids(p["hosts"]["vm0"]["recover"]) == [IDS["E1"]]
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]
    # A recover that keeps failing keeps the domain: nothing was saved, so the next cycle sees the same.
    recovered = state_after(result("vm0", 0, [nxt], previous), recovered=[IDS["E1"]])
    later = plan({"vm0": result("vm0", 0, [nxt], recovered), "vm1": result("vm1", 1, [nxt])})
    assert ids(later["hosts"]["vm1"]["prepare"]) == [IDS["E2"]]


def test_regression_a_host_that_cannot_be_read_holds_its_last_known_fault_domain() -> None:
    nxt = event("E2", ["vm1"])
    last_vm = {"name": "vm0", "fault_domain": 0}
    p = plan({"vm1": result("vm1", 1, [nxt])},
             vm0={"result": failed_read(), "availability_set": "as1", "last_vm": last_vm})
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]
    assert p["hosts"]["vm0"]["status"] == "unread" and "could not be read" in p["notes"][0]
    own = plan({"vm1": result("vm1", 0, [event("E3", ["vm1"])])},
               vm0={"result": failed_read(), "availability_set": "as1", "last_vm": last_vm})
    assert ids(own["hosts"]["vm1"]["prepare"]) == [IDS["E3"]]  # its own domain is already in maintenance


def test_regression_a_host_never_read_blocks_every_new_fault_domain() -> None:
    p = plan({"vm1": result("vm1", 1, [event("E2", ["vm1"])])}, vm0={"result": None})
    assert p["hosts"]["vm1"]["prepare"] == [] and UNKNOWN_DOMAIN in p["fault_domains_in_maintenance"]


def test_regression_an_event_listing_a_host_that_was_not_read_is_not_approved() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")
    p = plan({"vm1": result("vm1", 1, [user])}, vm0={"result": {"unreachable": True}})
    assert p["approvals"] == {} and p["hosts"]["vm1"]["waiting"][0]["reason"] == "vm0 could not be read"


def test_a_host_left_alone_counts_as_unread_whatever_result_it_carries() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")
    alone = plan({"vm1": result("vm1", 1, [user])}, vm0={"result": None, "left_alone": True})
    assert alone["hosts"]["vm0"]["status"] == "unread" and "was left alone" in alone["notes"][0]
    assert alone["approvals"] == {} and alone["hosts"]["vm1"]["waiting"][0]["reason"] == "vm0 was left alone"
    carried = plan({"vm1": result("vm1", 1, [event("E2", ["vm1"])])},
                   vm0={"result": result("vm0", 0, []), "availability_set": "as1", "left_alone": True})
    assert carried["hosts"]["vm0"]["status"] == "unread"
    assert carried["hosts"]["vm1"]["prepare"] == [], "its fault domain is busy: another one does not start"


@pytest.mark.parametrize("first, second", [
    ({"zone": "1"}, {"zone": "2"}),  # zonal VMs: all report fault domain 0
    ({"vm_scale_set_name": "web"}, {"vm_scale_set_name": "api"}),  # two scale sets reuse the numbers
])
def test_regression_fault_domains_of_different_zones_or_sets_are_different(
        first: Dict[str, str], second: Dict[str, str]) -> None:
    a, b = event("E1", ["vm0"], minutes=10), event("E2", ["vm1"])
    p = plan_cycle({"vm0": {"result": result("vm0", 0, [a], **first)}, "vm1": {"result": result("vm1", 0, [b], **second)}},
                   None, NOW)
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


def test_regression_two_availability_sets_reuse_fault_domain_numbers() -> None:
    a, b = event("E1", ["vm0"], minutes=10), event("E2", ["vm1"])
    p = plan_cycle({"vm0": {"result": result("vm0", 0, [a]), "availability_set": "web"},
                    "vm1": {"result": result("vm1", 0, [b]), "availability_set": "db"}}, None, NOW)
    assert ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


def test_an_availability_sets_update_domain_walk_goes_one_update_domain_at_a_time() -> None:
    """Reboot maintenance of an availability set walks update domains: vm0 and vm1 share update domain 0 across two
    fault domains, vm2 is update domain 1. Counted by update domain, the walk's second event waits for the first."""
    ud0, ud1 = event("E1", ["vm0", "vm1"]), event("E2", ["vm2"])
    hosts = {"vm0": result("vm0", 0, [ud0, ud1], saved([ud0], prepared=["E1"]), update_domain=0),
             "vm1": result("vm1", 1, [ud0, ud1], saved([ud0], prepared=["E1"]), update_domain=0),
             "vm2": result("vm2", 0, [ud0, ud1], update_domain=1)}
    by_ud = plan(hosts, {"serialisation_unit": "update_domain"})
    assert by_ud["hosts"]["vm2"]["prepare"] == [] and ids(by_ud["hosts"]["vm2"]["deferred"]) == [IDS["E2"]]
    assert ids(plan(hosts)["hosts"]["vm2"]["prepare"]) == [IDS["E2"]], "by fault domain, vm2 joins domain 0"
    with pytest.raises(PolicyError, match="^serialisation_unit must be one of fault_domain, update_domain, zone.$"):
        plan(hosts, {"serialisation_unit": "rack"})


@pytest.mark.parametrize("bad", [
    {"events": [{"event_id": "x", "event_type": "Reboot", "resources": []}], "approved": []},  # no event_status
    {"events": [dict(event_record(event("E1", ["vm0"])), resources=None)], "approved": []},
    {"events": [], "approved": [], "document_incarnation": -1},
    {"events": [], "approved": [], "document_incarnation": "7"},
    {"events": [dict(event_record(event("E1", ["vm0"])), prepare="maybe")], "approved": []},
    {"events": [], "approved": [None]},
])
def test_regression_a_state_with_bad_fields_is_corrupt_for_that_host_only(bad: Dict[str, Any]) -> None:
    import json
    state, status, message = load_state(json.dumps(dict({"version": 2, "document_incarnation": 1}, **bad)))
    assert status == "corrupt" and state is None and message.endswith("so that the next cycle starts afresh.")
    # A bad state that reached the plan anyway plans as no state, and fails nobody.
    reboot = event("E2", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot], dict({"version": 2}, **bad)), "vm1": result("vm1", 0, [reboot])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E2"]]


def test_regression_an_event_spanning_two_fault_domains_is_prepared_as_a_whole() -> None:
    both = event("E1", ["vm0", "vm1"])
    p = plan({"vm0": result("vm0", 0, [both]), "vm1": result("vm1", 1, [both])})
    assert ids(p["hosts"]["vm0"]["prepare"]) == ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    assert p["hosts"]["vm0"]["approve"] == [IDS["E1"]]


def test_regression_deferral_does_not_outlast_the_notice() -> None:
    busy = event("E0", ["vm0"], status="Started")
    soon = event("E2", ["vm1"], minutes=5)  # inside prepare_anyway_seconds (480)
    p = plan({"vm0": result("vm0", 0, [busy, soon]), "vm1": result("vm1", 1, [busy, soon])})
    assert ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E2"]] and p["approvals"] == {}
    assert "left to NotBefore" in p["hosts"]["vm1"]["waiting"][0]["reason"]
    later = event("E2", ["vm1"], minutes=12)
    p = plan({"vm0": result("vm0", 0, [busy, later]), "vm1": result("vm1", 1, [busy, later])})
    assert ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


def test_regression_approvals_carry_what_was_planned() -> None:
    reboot = event("E1", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [reboot])})
    planned = {"event_id": IDS["E1"], "event_type": "Reboot", "resources": ["vm0"]}
    assert p["approvals"][IDS["E1"]]["planned"] == planned


def test_regression_at_once_approvals_wait_for_a_blind_host() -> None:
    user = event("U1", ["vm0", "vm1"], source="User")
    freeze = event("E1", ["vm0", "vm1"], event_type="Freeze", duration=5)
    p = plan({"vm0": result("vm0", 0, None), "vm1": result("vm1", 0, [user, freeze])})
    assert p["approvals"] == {}
    assert {w["reason"] for w in p["hosts"]["vm1"]["waiting"]} == {"vm0 has no Scheduled Events document yet"}


def test_regression_ids_stay_as_served() -> None:
    lower = dict(event("E1", ["vm0"], source="User"), event_id="602d9444-d2cd-49c7-8624-8643e7171297")
    p = plan({"vm0": result("vm0", 0, [lower])})
    assert p["hosts"]["vm0"]["approve"] == [lower["event_id"]]
    assert confirm_approvals(p, ["vm0"])["vm0"][0]["event_id"] == lower["event_id"]


def test_regression_a_host_dropped_from_resources_after_it_prepared_is_recovered() -> None:
    reboot = event("E1", ["vm0", "vm1"])
    previous = saved([reboot], prepared=["E1"])
    narrowed = dict(reboot, resources=["vm1"])
    p = plan({"vm0": result("vm0", 0, [narrowed], previous)})
    assert ids(p["hosts"]["vm0"]["recover"]) == [IDS["E1"]]
    state = state_after(result("vm0", 0, [narrowed], previous), recovered=[IDS["E1"]])
    assert [r["prepare"] for r in state["events"]] == [None]


def test_regression_two_hosts_with_one_vm_name_are_left_alone() -> None:
    user = event("U1", ["web0"], source="User")
    p = plan({"rg1-web0": result("web0", 0, [user], resource_id="/rg1/web0"),
              "rg2-web0": result("web0", 1, [user], resource_id="/rg2/web0")})
    assert p["approvals"] == {} and all(h["prepare"] == [] for h in p["hosts"].values())
    assert any("shares its VM name web0" in n for n in p["notes"])


def test_a_failed_prepare_is_remembered_as_begun_and_prepared_again() -> None:
    reboot = event("E1", ["vm0"])
    begun = state_after(result("vm0", 0, [reboot]), prepared_now=[IDS["E1"]], failed=True)
    assert [r["prepare"] for r in begun["events"]] == ["started"]
    p = plan({"vm0": result("vm0", 0, [reboot], begun)})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]]  # again, and approved once that succeeds
    gone = plan({"vm0": result("vm0", 0, [], begun)})
    assert ids(gone["hosts"]["vm0"]["recover"]) == [IDS["E1"]]


def test_an_unprepared_event_that_listed_the_host_is_recovered_once_gone_and_then_forgotten() -> None:
    crash = event("E1", ["vm0"], status="Started")  # a hardware failure: never Scheduled, never prepared
    started = plan({"vm0": result("vm0", 0, [crash])})
    assert started["hosts"]["vm0"]["prepare"] == [] and started["approvals"] == {}, "no notice: nothing to do early"
    assert all(h["approve"] == [] for h in started["hosts"].values())
    seen = state_after(result("vm0", 0, [crash]))
    p = plan({"vm0": result("vm0", 0, [], seen)})
    assert ids(p["hosts"]["vm0"]["recover"]) == [IDS["E1"]]
    assert state_after(result("vm0", 0, [], seen), recovered=[IDS["E1"]])["events"] == []
    assert state_after(result("vm0", 0, [], seen))["events"] == seen["events"]  # not recovered yet: kept


def test_an_event_whose_only_unseen_host_is_its_own_goes_ahead_but_another_unseen_host_blocks_it() -> None:
    both = event("E1", ["vm0", "vm1"])  # vm0 could not be read yet (its domain is unknown)
    p = plan({"vm1": result("vm1", 1, [both])}, vm0={"result": None})
    assert ids(p["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    assert p["approvals"] == {}  # vm0 was not read: never approved without it
    other = plan({"vm1": result("vm1", 1, [event("E2", ["vm1"])])}, vm0={"result": None})
    assert other["hosts"]["vm1"]["prepare"] == []


def test_a_failed_read_that_named_its_vm_holds_that_vm_s_fault_domain() -> None:
    failed = dict(failed_read(), this_vm={"name": "vm0", "fault_domain": 0, "zone": "", "vm_scale_set_name": ""})
    p = plan({"vm1": result("vm1", 1, [event("E2", ["vm1"])])}, vm0={"result": failed, "availability_set": "as1"})
    assert p["hosts"]["vm0"]["fault_domain"] == "availability set as1 / fault domain 0"
    assert ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


def test_an_event_that_now_lists_the_host_is_saved_before_anything_is_approved() -> None:
    before = event("E1", ["vm1"])
    widened = dict(before, resources=["vm1", "vm0"])  # vm0 added to Resources since the last save
    p = plan({"vm0": result("vm0", 0, [widened], saved([before])), "vm1": result("vm1", 0, [widened], saved([before]))})
    assert p["hosts"]["vm0"]["save_first"] is True
    assert p["hosts"]["vm0"]["renew"] is False, "the first save renews the lock in its own call"
    known = saved([widened], prepared=["E1"], approved=["E1"])  # nothing new, nothing to prepare
    quiet = plan({"vm0": result("vm0", 0, [widened], known), "vm1": result("vm1", 0, [widened], known)})
    assert quiet["hosts"]["vm0"]["save_first"] is False


def test_a_host_an_approval_affects_renews_its_lock_where_no_first_save_does() -> None:
    known = event("E1", ["vm0"])
    prepared = saved([known], prepared=["E1"])  # seen and prepared by an earlier cycle: nothing new now
    p = plan({"vm0": result("vm0", 0, [known], prepared)}, {"approve_prepared_events": True, "prepare_configured": True})
    assert p["approvals"][IDS["E1"]]["hosts"] == ["vm0"], "E1 is approved now"
    assert p["hosts"]["vm0"]["save_first"] is False and p["hosts"]["vm0"]["renew"] is True


def test_no_other_event_joins_the_fault_domains_of_an_event_that_spans_beyond_the_limit() -> None:
    wide = event("E1", ["vm0", "vm1"], minutes=10)  # Azure takes fault domains 0 and 1 together
    narrow = event("E2", ["vm2"])  # fault domain 1 alone: approved early, it would go down on its own
    results = {"vm0": result("vm0", 0, [wide, narrow]), "vm1": result("vm1", 1, [wide, narrow]),
               "vm2": result("vm2", 1, [wide, narrow])}
    p = plan(results)
    assert p["admissions"] == {IDS["E1"]: "admitted", IDS["E2"]: "deferred"}


def test_regression_two_events_spanning_beyond_the_limit_are_not_admitted_in_one_cycle() -> None:
    """Found by make invariants (seed 436): E1 spans fault domains 0 and 2, E2 spans 0, 1 and 2. E1 goes as a whole
    (nothing else in maintenance); E2 counted as alone too, since the only busy domains were ones it needs, but
    the first event holds them: admitted, it brought domain 1 as well."""
    first = event("E1", ["vm0", "vm2"], minutes=10)
    second = event("E2", ["vm0", "vm1", "vm2"], minutes=12)
    both = [first, second]
    p = plan({"vm0": result("vm0", 0, both), "vm1": result("vm1", 1, both), "vm2": result("vm2", 2, both)})
    assert p["admissions"] == {IDS["E1"]: "admitted", IDS["E2"]: "deferred"}


# ------------------------------------------------------------ safe whatever happens (issue 25), rule by rule

def step_state(info: Dict[str, Any], host_plan: Dict[str, Any], step: str, approved: List[str] = ()) -> Dict[str, Any]:
    return state_for_step(info, host_plan, step, list(approved))


def test_regression_the_prepares_are_on_record_before_the_prepare_tasks_run() -> None:
    """Killed or lost mid-prepare: the write-ahead save is all there is; the event then leaves the document."""
    reboot, nxt = event("E1", ["vm0"]), event("E2", ["vm1"], minutes=60)
    first = plan({"vm0": result("vm0", 0, [reboot]), "vm1": result("vm1", 1, [])})
    ahead = step_state(result("vm0", 0, [reboot]), first["hosts"]["vm0"], BEFORE_PREPARE)
    assert [(r["event_id"], r["prepare"]) for r in ahead["events"]] == [(IDS["E1"], "started")]
    # The run died during the prepare tasks; the event was cancelled before the next cycle.
    later = plan({"vm0": result("vm0", 0, [nxt], ahead), "vm1": result("vm1", 1, [nxt])})
    assert ids(later["hosts"]["vm0"]["recover"]) == [IDS["E1"]]
    assert later["hosts"]["vm1"]["prepare"] == [] and later["approvals"] == {}, "fault domain 0 is still drained"


def test_the_save_points_of_a_cycle_in_order() -> None:
    reboot, gone = event("E1", ["vm0"]), event("E0", ["vm0"])
    info = result("vm0", 0, [reboot], saved([gone], prepared=["E0"]))
    host_plan = plan({"vm0": info})["hosts"]["vm0"]
    assert ids(host_plan["prepare"]) == [IDS["E1"]] and host_plan["recover"] == []  # E1 keeps the drain
    assert host_plan["drained_for"] == [IDS["E1"]]
    prepared = step_state(info, host_plan, PREPARED)
    assert {r["event_id"]: r["prepare"] for r in prepared["events"]} == {IDS["E0"]: "done", IDS["E1"]: "done"}
    end = step_state(info, host_plan, AFTER_RECOVER, [IDS["E1"]])
    assert end["approved"] == [IDS["E1"]] and len(end["events"]) == 2, "E0's recover still waits for E1's end"
    with pytest.raises(PolicyError, match="unknown save step"):
        step_state(info, host_plan, "whenever")


@pytest.mark.parametrize("overlap", [
    dict(event_type="Freeze", duration=5),                # a short Freeze, approved at once, no drain
    dict(event_type="Reboot", source="Platform"),         # a hardware-failure reboot: started at once, gone
])
def test_regression_a_recover_never_undoes_a_drain_another_pending_event_needs(overlap: Dict[str, Any]) -> None:
    reboot = event("E1", ["vm0"], minutes=60)
    other = event("E2", ["vm0"], **overlap)
    drained = saved([reboot, other], prepared=["E1"])  # prepared for the Reboot, saw the other event
    p = plan({"vm0": result("vm0", 0, [reboot], drained)})  # the other event ran and is gone
    assert p["hosts"]["vm0"]["recover"] == [] and p["hosts"]["vm0"]["drained_for"] == [IDS["E1"]]
    assert any("vm0 stays drained for %s" % IDS["E1"] in n for n in p["notes"])
    kept = step_state(result("vm0", 0, [reboot], drained), p["hosts"]["vm0"], AFTER_RECOVER)
    assert [r["event_id"] for r in kept["events"]] == sorted([IDS["E1"], IDS["E2"]]), "the owed recover is kept"
    # The Reboot ran and is gone: one recover covers both events, once.
    done = plan({"vm0": result("vm0", 0, [], kept)})
    assert sorted(ids(done["hosts"]["vm0"]["recover"])) == sorted([IDS["E1"], IDS["E2"]])


def test_regression_no_recover_runs_in_a_cycle_that_prepares_the_host_again() -> None:
    gone, nxt = event("E0", ["vm0"]), event("E1", ["vm0"])
    p = plan({"vm0": result("vm0", 0, [nxt], saved([gone], prepared=["E0"]))})
    assert ids(p["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and p["hosts"]["vm0"]["recover"] == []


def test_regression_a_host_unread_now_still_makes_its_vm_name_ambiguous() -> None:
    reboot = event("E1", ["web"])
    remembered = {"result": failed_read(), "availability_set": "as1", "last_vm": {"name": "web", "fault_domain": 1}}
    p = plan({"rg1-web": result("web", 0, [reboot])}, **{"rg2-web": remembered})
    assert p["hosts"]["rg1-web"]["status"] == "ambiguous"
    assert p["hosts"]["rg1-web"]["prepare"] == [] and p["approvals"] == {}


def test_regression_an_event_prepared_late_is_left_to_not_before_by_later_cycles() -> None:
    started = event("E0", ["vm0"], status="Started")
    near = event("E1", ["vm1"], minutes=5)  # under prepare_anyway_seconds (8 min): prepared anyway, late
    vm0 = result("vm0", 0, [started, near], saved([started], prepared=["E0"]))
    first = plan({"vm0": vm0, "vm1": result("vm1", 1, [started, near])})
    assert first["admissions"][IDS["E1"]] == "late" and first["hosts"]["vm1"]["late"] == [IDS["E1"]]
    state = step_state(result("vm1", 1, [started, near]), first["hosts"]["vm1"], PREPARED)
    assert state["events"][-1]["late"] is True
    later = plan({"vm0": vm0, "vm1": result("vm1", 1, [started, near], state)})
    assert later["approvals"] == {} and "left to NotBefore" in later["hosts"]["vm1"]["waiting"][0]["reason"]
    # The late drain holds its domain but licenses nobody to join it while fault domain 0 is in maintenance.
    joiner = event("E2", ["vm2"])
    third = plan({"vm0": vm0, "vm1": result("vm1", 1, [started, near, joiner], state),
                  "vm2": result("vm2", 1, [started, near, joiner])})
    assert third["hosts"]["vm2"]["prepare"] == [] and ids(third["hosts"]["vm2"]["deferred"]) == [IDS["E2"]]


def test_regression_an_event_of_an_unknown_status_holds_its_fault_domain() -> None:
    odd = dict(event("E0", ["vm0"]), event_status="Paused", known_status=False)
    p = plan({"vm0": result("vm0", 0, [odd]), "vm1": result("vm1", 1, [odd, event("E1", ["vm1"])])})
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E1"]]


def test_regression_a_blind_host_holds_its_fault_domain() -> None:
    p = plan({"vm0": result("vm0", 0, None), "vm1": result("vm1", 1, [event("E1", ["vm1"])])})
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E1"]]


def test_regression_a_damaged_state_is_kept_and_its_host_is_busy() -> None:
    damaged = dict(result("vm0", 0, []), state=None, state_status="corrupt", state_path="/var/lib/x/state.json")
    p = plan({"vm0": damaged, "vm1": result("vm1", 1, [event("E1", ["vm1"])])})
    assert p["hosts"]["vm0"]["status"] == "damaged" and not p["hosts"]["vm0"]["saves"]
    assert ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E1"]]
    assert any("mv /var/lib/x/state.json /var/lib/x/state.json.damaged" in n for n in p["notes"])
    with pytest.raises(PolicyError, match="cannot be trusted"):
        state_after(damaged)


def test_regression_a_drain_owed_only_a_recover_licenses_no_event_to_join_its_domain() -> None:
    """Found by the fault model: the recover ran, the run died before its save; the stale record must not let a
    new event of that domain in while another domain is in maintenance (the VM is no longer drained)."""
    gone, user = event("E0", ["vm0"]), event("U1", ["vm0"], source="User")
    stale = saved([gone], prepared=["E0"])
    p = plan({"vm0": result("vm0", 0, [user], stale)},
             vm1={"result": failed_read(), "availability_set": "as1", "last_vm": {"name": "vm1", "fault_domain": 1}})
    assert p["hosts"]["vm0"]["prepare"] == [] and ids(p["hosts"]["vm0"]["deferred"]) == [IDS["U1"]]
    assert ids(p["hosts"]["vm0"]["recover"]) == [IDS["E0"]]


def test_regression_a_set_split_over_two_runs_is_refused_also_once_the_other_runs_events_are_gone() -> None:
    """Windows VMs on the scheduled cycle, Linux VMs event-driven: each run plans over its own hosts only, and cannot
    see the other's drains. Holding the other run's VMs busy while an event listed them (as before) left the gap
    between that event's end and the other run's recover: the fault model found two domains drained at once."""
    theirs, ours = event("E0", ["win0"], minutes=60), event("E1", ["vm1"])
    p = plan({"vm1": result("vm1", 1, [theirs, ours])})
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["refused"]) == [IDS["E1"]]
    assert any("availability set as1 has VMs outside this target (win0)" in n and "run one target per set" in n
               for n in p["notes"])
    # Their event is gone: the control node still remembers win0 (vm_memory), so the set stays refused.
    later = plan_cycle({"vm1": {"result": result("vm1", 1, [ours]), "availability_set": "as1"}}, None, NOW, (),
                       {"availability set as1": ["win0"]})
    assert later["hosts"]["vm1"]["prepare"] == [] and ids(later["hosts"]["vm1"]["refused"]) == [IDS["E1"]]
    # Another set's events are not refused.
    other = plan_cycle({"vm1": {"result": result("vm1", 1, [ours]), "availability_set": "as2"}}, None, NOW, (),
                       {"availability set as1": ["win0"]})
    assert ids(other["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]
    trusted = plan({"vm1": result("vm1", 1, [theirs, ours])}, {"approve_outside_inventory": True})
    assert ids(trusted["hosts"]["vm1"]["prepare"]) == [IDS["E1"]]


def test_a_refused_set_still_runs_its_owed_recovers() -> None:
    """Never leave a VM drained: refusing a set stops new drains in it, not the undoing of old ones."""
    gone, ours, theirs = event("E0", ["vm1"]), event("E1", ["vm1"]), event("E2", ["win0"])
    p = plan({"vm1": result("vm1", 1, [ours, theirs], saved([gone], prepared=["E0"]))})
    assert ids(p["hosts"]["vm1"]["refused"]) == [IDS["E1"]] and ids(p["hosts"]["vm1"]["recover"]) == [IDS["E0"]]


def test_regression_a_drain_merely_begun_licenses_no_event_to_join_its_domain() -> None:
    """Found by the fault model: written ahead, then the run died before the prepare tasks drained anything; a
    Started event holds fault domain 1, so fault domain 0's event must wait, not join a drain that may not be."""
    reboot, started = event("E1", ["vm0"]), event("E0", ["vm1"], status="Started")
    begun = saved([reboot], prepared=["E1"], prepare="started")
    p = plan({"vm0": result("vm0", 0, [reboot, started], begun), "vm1": result("vm1", 1, [reboot, started])})
    assert p["hosts"]["vm0"]["prepare"] == [] and ids(p["hosts"]["vm0"]["deferred"]) == [IDS["E1"]]


def test_regression_the_leader_is_a_host_whose_own_read_shows_the_event_so_that_its_approval_stays_on_record() -> None:
    """Found by the fault model's event-driven half: a short Freeze appeared between vm0's read and vm1's; vm0, listed
    first, led the approval, and its save (from its own read, which did not show the Freeze) dropped the approval
    from its state, so the next cycle approved it again."""
    freeze = event("E1", ["vm0", "vm1"], event_type="Freeze", duration=5)
    reads = {"vm0": result("vm0", 0, []), "vm1": result("vm1", 0, [freeze])}
    p = plan(reads)
    assert p["hosts"]["vm0"]["approve"] == [] and p["hosts"]["vm1"]["approve"] == [IDS["E1"]]
    kept = state_for_step(reads["vm1"], p["hosts"]["vm1"], AFTER_RECOVER, [IDS["E1"]])
    assert kept["approved"] == [IDS["E1"]]
    again = plan({"vm0": result("vm0", 0, [freeze]), "vm1": result("vm1", 0, [freeze], kept)})
    assert all(h["approve"] == [] for h in again["hosts"].values()), "approved once"


def test_regression_a_started_event_licenses_no_event_to_join_its_domain() -> None:
    """Found by the fault model's event-driven half: fault domain 1 is busy (vm2 unread, drained for all we know);
    fault domain 0 holds only a Started Freeze of 5 s, which stays Started for minutes and may end before the next
    task. A user's reboot on vm0 must wait: joining domain 0 on the Freeze's word would, once it ended, be a second
    domain in maintenance."""
    freeze = event("E0", ["vm0"], status="Started", event_type="Freeze", duration=5)
    reboot = event("U1", ["vm0"], source="User")
    p = plan({"vm0": result("vm0", 0, [freeze, reboot]), "vm1": result("vm1", 0, [freeze, reboot])},
             vm2={"result": failed_read(), "availability_set": "as1", "last_vm": {"name": "vm2", "fault_domain": 1}})
    assert p["hosts"]["vm0"]["prepare"] == [] and ids(p["hosts"]["vm0"]["deferred"]) == [IDS["U1"]]
    assert p["hosts"]["vm0"]["approve"] == []
    # With nothing else in maintenance, it joins the Started domain as before (it brings no other domain).
    alone = plan({"vm0": result("vm0", 0, [freeze, reboot]), "vm1": result("vm1", 0, [freeze, reboot])})
    assert ids(alone["hosts"]["vm0"]["prepare"]) == [IDS["U1"]] and alone["hosts"]["vm0"]["approve"] == [IDS["U1"]]


@pytest.mark.parametrize("lock", [{}, {"taken": False, "supported": False}], ids=["locking off", "Windows VM"])
def test_regression_side_by_side_cycles_refuse_hosts_without_a_vm_lock(lock: Dict[str, Any]) -> None:
    reboot = event("E1", ["vm0"])
    hosts = {"vm0": {"result": result("vm0", 0, [reboot]), "availability_set": "as1", "lock": lock},
             "vm1": {"result": result("vm1", 1, []), "availability_set": "as1", "lock": {"taken": True}}}
    with pytest.raises(PolicyError, match=r"^vm0 takes no VM lock .* set max_parallel_runs to 1"):
        plan_cycle(hosts, {"parallel_runs": 3}, NOW)
    assert ids(plan_cycle(hosts, {"parallel_runs": 1}, NOW)["hosts"]["vm0"]["prepare"]) == [IDS["E1"]]
    with pytest.raises(PolicyError, match="parallel_runs must be a whole number"):
        plan_cycle(hosts, {"parallel_runs": 0}, NOW)


def test_regression_two_vms_whose_fault_domains_are_unknown_are_never_taken_for_one_domain() -> None:
    """Issue 27 (no compute metadata, Microsoft's mock server): both were 'availability set as1 / fault domain ?', so
    a drain on one licensed the other's event to join, although their fault domains may differ."""
    first, second = event("E1", ["vm0"]), event("E2", ["vm1"])
    p = plan({"vm0": result("vm0", None, [first, second], saved([first], prepared=["E1"])),  # type: ignore[arg-type]
              "vm1": result("vm1", None, [first, second])})  # type: ignore[arg-type]
    assert p["hosts"]["vm0"]["fault_domain"] != p["hosts"]["vm1"]["fault_domain"]
    assert "unknown" in p["hosts"]["vm1"]["fault_domain"] and p["hosts"]["vm1"]["prepare"] == []
    assert ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


# ------------------------------------------------------------------------------- coupled Terminates

def test_a_scale_sets_terminates_are_approved_together_or_none_early() -> None:
    """Azure: an approved Terminate is not deleted while another of its scale set waits unapproved, so approving
    one alone shortens nothing (issue 27)."""
    first = event("E1", ["vm0"], event_type="Terminate", source="User")
    second = event("E2", ["vm1"], event_type="Terminate", source="User")
    scale_set = {"vm_scale_set_name": "web"}
    both = plan({"vm0": result("vm0", 0, [first, second], saved([first], prepared=["E1"]), **scale_set),
                 "vm1": result("vm1", 1, [first, second], saved([second], prepared=["E2"]), **scale_set)})
    assert both["hosts"]["vm0"]["approve"] == [IDS["E1"]] and both["hosts"]["vm1"]["approve"] == [IDS["E2"]]
    one = plan({"vm0": result("vm0", 0, [first, second], saved([first], prepared=["E1"]), **scale_set)},
               vm1={"result": failed_read(), "availability_set": "as1"})
    assert one["hosts"]["vm0"]["approve"] == [] and one["approvals"] == {}
    (waiting,) = one["hosts"]["vm0"]["waiting"]
    assert waiting["event_id"] == IDS["E1"] and "every pending Terminate of its set" in waiting["reason"]
    assert IDS["E2"].upper() in waiting["reason"]


def test_a_set_s_terminates_planned_together_are_confirmed_together_or_none() -> None:
    """A prepare that fails after the plan drops that Terminate's approval; its set's others then shorten nothing
    (Azure holds them), so they are dropped too and wait for a cycle that can approve the set whole."""
    first = event("E1", ["vm0"], event_type="Terminate", source="User")
    second = event("E2", ["vm1"], event_type="Terminate", source="User")
    reboot = event("E3", ["vm2"], source="User")
    scale_set = {"vm_scale_set_name": "web"}
    p = plan({"vm0": result("vm0", 0, [first, second], saved([first], prepared=["E1"]), **scale_set),
              "vm1": result("vm1", 1, [first, second], saved([second], prepared=["E2"]), **scale_set),
              "vm2": result("vm2", 2, [reboot], saved([reboot], prepared=["E3"]))})
    confirmed = confirm_approvals(p, ["vm0", "vm1", "vm2"])
    assert {host: ids(events) for host, events in confirmed.items()} == {
        "vm0": [IDS["E1"]], "vm1": [IDS["E2"]], "vm2": [IDS["E3"]]}
    confirmed = confirm_approvals(p, ["vm0", "vm2"])  # vm1 failed its prepare
    assert {host: ids(events) for host, events in confirmed.items()} == {"vm0": [], "vm1": [], "vm2": [IDS["E3"]]}, (
        "its set's other Terminate is not sent alone; another event is")


def test_a_terminate_goes_once_the_other_terminates_of_its_set_were_approved() -> None:
    first = event("E1", ["vm0"], event_type="Terminate", source="User")
    second = event("E2", ["vm1"], event_type="Terminate", source="User")
    scale_set = {"vm_scale_set_name": "web"}
    p = plan({"vm0": result("vm0", 0, [first, second], saved([first], prepared=["E1"]), **scale_set)},
             vm1={"result": result("vm1", 1, [first, second], saved([second], prepared=["E2"], approved=["E2"]),
                                   **scale_set), "availability_set": ""})
    assert p["hosts"]["vm0"]["approve"] == [IDS["E1"]]
    other_set = plan({"vm0": result("vm0", 0, [first], saved([first], prepared=["E1"]), **scale_set)})
    assert other_set["hosts"]["vm0"]["approve"] == [IDS["E1"]], "a Terminate alone in its set goes at once"


# ------------------------------------------------------------------------------- advisories and unknown types

def advisory(name: str, resources: List[str]) -> Dict[str, Any]:
    return dict(event(name, resources), event_type="SpotRebalanceRecommendation", known_type=False, duration=0)


def test_an_advisory_is_prepared_only_when_listed_never_approved_and_recovered_once_gone() -> None:
    """Issue 27: a type Azure does not document yet (SpotRebalanceRecommendation, which third-party mocks serve)."""
    notice = advisory("E1", ["vm0"])
    unlisted = plan({"vm0": result("vm0", 0, [notice])})
    assert unlisted["hosts"]["vm0"]["prepare"] == [] and unlisted["approvals"] == {}
    assert unlisted["hosts"]["vm0"]["waiting"][0]["reason"] == "unknown EventType or EventStatus"
    types = {"prepare_event_types": ["Reboot", "SpotRebalanceRecommendation"]}
    listed = plan({"vm0": result("vm0", 0, [notice])}, types)
    assert ids(listed["hosts"]["vm0"]["prepare"]) == [IDS["E1"]] and listed["approvals"] == {}
    gone = plan({"vm0": result("vm0", 0, [], saved([notice], prepared=["E1"]))}, types)
    assert ids(gone["hosts"]["vm0"]["recover"]) == [IDS["E1"]], "its recover is owed once it leaves"


def test_a_drain_for_an_advisory_counts_in_the_fault_domain_limit() -> None:
    notice, reboot = advisory("E1", ["vm0"]), event("E2", ["vm1"])
    types = {"prepare_event_types": ["Reboot", "SpotRebalanceRecommendation"]}
    p = plan({"vm0": result("vm0", 0, [notice, reboot], saved([notice], prepared=["E1"])),
              "vm1": result("vm1", 1, [notice, reboot])}, types)
    assert p["hosts"]["vm1"]["prepare"] == [] and ids(p["hosts"]["vm1"]["deferred"]) == [IDS["E2"]]


@pytest.mark.parametrize("types", ["Reboot", ["Reboot", ""], ["Re boot"], [1]])
def test_prepare_event_types_that_are_not_type_names_are_one_sentence(types: Any) -> None:
    with pytest.raises(PolicyError, match=r"^prepare_event_types must be a list of event type names .*\.$"):
        plan({"vm0": result("vm0", 0, [])}, {"prepare_event_types": types})


# ------------------------------------------------------------------------ one policy per run (group vars)

def test_regression_a_groups_policy_is_not_decided_by_another_groups_host() -> None:
    """Group db leaves Reboots to NotBefore, group web does not. The plan ran once, with the first host's policy:
    a run whose first host with work was a web VM approved db's user Reboot early. Now each host's own policy is
    given and settings that differ between the hosts of one run refuse it, naming setting, hosts, values and fix."""
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import run_policy
    web, db = event("U1", ["web0"], source="User"), event("E1", ["db0"], source="User")
    hosts = {"web0": {"result": result("web0", 0, [web]), "availability_set": "web"},
             "db0": {"result": result("db0", 0, [db]), "availability_set": "db"}}
    policies = {"web0": {}, "db0": {"leave_to_not_before": ["Reboot"]}, "db1": {"leave_to_not_before": ["Reboot"]}}
    with pytest.raises(PolicyError) as refused:
        plan_cycle(hosts, {}, NOW, host_policies=policies)
    assert str(refused.value) == (
        "maintenance_cycle_leave_to_not_before differs between hosts of this run (db0, db1: [Reboot]; web0: []), and "
        "one run plans every host with one policy (its fault-domain limit and its events span them), so nothing was "
        "read, prepared or approved: run a cycle per group that sets it (-e target=GROUP), or give every host of the "
        "target the same value.")
    # The same hosts agreeing: that policy is the plan's (the run policy given beside it is not used).
    two = {"max_fault_domains_in_maintenance": 2}  # web's and db's domains at once: only the policy holds them back
    agreed = {h: dict(two, leave_to_not_before=["Reboot", "Redeploy"]) for h in hosts}
    agreed["db0"] = dict(two, leave_to_not_before=["Redeploy", "Reboot"])  # the same list in another order
    p = plan_cycle(hosts, {"leave_to_not_before": []}, NOW, host_policies=agreed)
    assert p["approvals"] == {}
    assert sorted(run_policy(agreed)["leave_to_not_before"]) == ["Reboot", "Redeploy"]
    assert set(plan_cycle(hosts, two, NOW)["approvals"]) == {IDS["U1"], IDS["E1"]}, "the control: both approved"


def test_each_differing_setting_is_named_with_its_variable_and_unset_means_the_default() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import run_policy
    with pytest.raises(PolicyError, match=r"^maintenance_cycle_max_fault_domains_in_maintenance differs between hosts "
                                          r"of this run \(a, b, c and 1 more: 1; e: 2\)"):
        run_policy({"a": {}, "b": {}, "c": {"max_fault_domains_in_maintenance": 1}, "d": {}, "e": {
            "max_fault_domains_in_maintenance": 2}})
    with pytest.raises(PolicyError, match=r"^maintenance_cycle_prepare_tasks \(given or not\) differs .*\(a: false; "
                                          r"b: true\)"):
        run_policy({"a": {"prepare_configured": False}, "b": {}})
    assert run_policy({}) == run_policy({"a": {}}), "no host noted: the defaults"


def test_regression_an_approved_event_still_shown_scheduled_holds_its_fault_domain() -> None:
    """A user Reboot approved on fault domain 0 without prepare tasks (no drain on record) is still Scheduled in the
    next read (Resource Graph's lag; IMDS holding a Terminate for its set). It held no domain, so a user Redeploy on
    fault domain 1 was approved beside it: two domains in maintenance at once."""
    reboot = event("U1", ["vm0"], source="User")
    redeploy = event("E1", ["vm1"], source="User", event_type="Redeploy")
    policy = {"prepare_configured": False}
    results = {"vm0": result("vm0", 0, [reboot, redeploy], saved([reboot], approved=["U1"])),
               "vm1": result("vm1", 1, [reboot, redeploy])}
    p = plan(results, policy)
    assert p["approvals"] == {}, "the Redeploy waits while the approved Reboot's domain is in maintenance"
    assert p["admissions"][IDS["E1"]] == "deferred" and ids(p["hosts"]["vm1"]["waiting"]) == [IDS["E1"]]
    assert "wait for their fault domain" in p["hosts"]["vm1"]["waiting"][0]["reason"]
    assert p["fault_domains_in_maintenance"] == ["availability set as1 / fault domain 0"]
    control = {"vm0": result("vm0", 0, [reboot, redeploy], saved([reboot])), "vm1": result("vm1", 1, [reboot, redeploy])}
    assert len(plan(control, policy)["approvals"]) == 1, "the control: neither approved yet, one goes, one waits"
