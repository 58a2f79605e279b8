"""A VM deleted by its own Preempt or Terminate (module_utils/cycle/deleted.py), and what the plan does with it."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import plan_cycle
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.deleted import (
    DELETED_AFTER_S,
    own_delete_started,
    started_deletes,
    taken_as_deleted,
)

NOW = datetime(2026, 11, 27, 12, 0, tzinfo=timezone.utc)


def event(event_id: str, resources: list, event_type: str = "Preempt", status: str = "Started") -> dict:
    return {"event_id": event_id, "event_type": event_type, "event_status": status, "resources": resources,
            "not_before": None if status == "Started" else "2026-11-27T12:15:00Z", "event_source": "Platform",
            "duration_in_seconds": -1, "description": "", "known_type": True, "known_status": True}


@pytest.mark.parametrize("events, sighting", [
    ([event("E1", ["vm0"])], {"event_id": "E1", "event_type": "Preempt"}),
    ([event("E1", ["VM0"], event_type="Terminate")], {"event_id": "E1", "event_type": "Terminate"}),
    ([event("E1", ["vm0"], status="Scheduled")], None),        # not begun: it may still be cancelled
    ([event("E1", ["vm1"])], None),                            # another VM's eviction
    ([event("E1", ["vm0"], event_type="Reboot")], None),       # a reboot comes back
    ([], None),
])
def test_only_the_vms_own_preempt_or_terminate_started_is_a_sighting(events: list, sighting: object) -> None:
    assert own_delete_started(started_deletes(events), "vm0") == sighting


def seen(seconds_ago: float) -> dict:
    return {"event_id": "E1", "event_type": "Preempt", "started_seen_at": (NOW - timedelta(seconds=seconds_ago)).isoformat()}


def test_silence_counts_as_deletion_only_after_the_bound() -> None:
    assert taken_as_deleted(seen(DELETED_AFTER_S), NOW) and not taken_as_deleted(seen(DELETED_AFTER_S - 1), NOW)
    for damaged in (None, {}, {"started_seen_at": "soon"}, {"started_seen_at": "2026-11-27T11:00:00"}):  # no zone
        assert not taken_as_deleted(damaged, NOW), damaged


def read(vm: str, fault_domain: int, events: list) -> dict:
    return {"events": events, "document_available": True, "document_incarnation": 3, "state": None,
            "this_vm": {"name": vm, "fault_domain": fault_domain, "zone": "", "vm_scale_set_name": "web"}}


def vm(name: str, fault_domain: int) -> dict:
    return {"name": name, "fault_domain": fault_domain, "zone": "", "vm_scale_set_name": "web"}


def hosts(deleting: dict, result: object = None, left_alone: bool = False) -> dict:
    reboot = event("E2", ["vm1"], event_type="Reboot", status="Scheduled")
    return {"vm0": {"result": result, "last_vm": vm("vm0", 0), "deleting": deleting, "left_alone": left_alone},
            "vm1": {"result": read("vm1", 1, [reboot])}}


def test_a_silent_vm_whose_own_eviction_was_seen_started_frees_its_fault_domain() -> None:
    """Issue 27: measured with relays and the rulebook, a Reboot on vm1 (fault domain 1) waited behind an evicted
    vm0 (fault domain 0) for as long as vm0 stayed in the inventory."""
    p = plan_cycle(hosts(seen(DELETED_AFTER_S)), {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "deleted"
    assert p["fault_domains_in_maintenance"] == ["scale set web / fault domain 1"], "vm1's, admitted; not vm0's"
    assert [e["event_id"] for e in p["hosts"]["vm1"]["prepare"]] == ["E2"]
    assert any(n.startswith("vm0 is taken as deleted: its own Preempt E1 was seen Started") for n in p["notes"])
    left_alone = plan_cycle(hosts(seen(600), left_alone=True), {"max_fault_domains_in_maintenance": 1}, NOW)
    assert left_alone["hosts"]["vm0"]["status"] == "deleted", "its relay says IMDS does not answer: the same silence"


@pytest.mark.parametrize("deleting", [seen(DELETED_AFTER_S - 1), None], ids=["too soon", "silence alone"])
def test_an_unconfirmed_silence_still_holds_the_fault_domain(deleting: object) -> None:
    p = plan_cycle(hosts(deleting), {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "unread" and p["fault_domains_in_maintenance"] == ["scale set web / fault domain 0"]
    assert p["hosts"]["vm1"]["prepare"] == [] and p["hosts"]["vm1"]["deferred"] != []


def test_a_read_that_failed_is_the_same_silence() -> None:
    """The controller cannot tell a VM that is gone from one it cannot reach; the sighting and its age decide."""
    p = plan_cycle(hosts(seen(600), {"failed": True, "msg": "timed out"}), {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "deleted"


def test_a_vm_that_answers_is_fresh_whatever_the_memory_says() -> None:
    """A Spot VM evicted with the Deallocate policy and started again: its first read makes it an ordinary host."""
    p = plan_cycle(hosts(seen(600), result=read("vm0", 0, [])), {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "fresh"


def test_regression_a_sighting_matched_by_a_shared_vm_name_deletes_neither_host() -> None:
    """Two hosts whose VMs share a name (two resource groups): a Preempt Started that lists the name is remembered for
    both, and the ambiguity check skipped deleted hosts, so both were taken as deleted and freed their fault
    domains, the one still there included. Now they are ambiguous: busy, as any two hosts sharing a VM name are."""
    twins = hosts(seen(600))
    twins["vm0-rg2"] = {"result": None, "last_vm": vm("vm0", 2), "deleting": seen(600)}
    p = plan_cycle(twins, {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "ambiguous" and p["hosts"]["vm0-rg2"]["status"] == "ambiguous"
    assert p["hosts"]["vm1"]["prepare"] == [] and p["hosts"]["vm1"]["deferred"] != [], "vm1's Reboot waits"


def test_regression_a_control_plane_host_is_never_taken_as_deleted() -> None:
    """A Spot VM evicted with Deallocate and started again: Resource Graph keeps its Completed Preempt row for hours,
    so the control-plane host is unread, and with the memory's sighting it was taken as deleted: free, its recover
    never run, though the VM was back and drained. The control plane's silence is not the VM's: it holds its domain."""
    given = hosts(seen(600))
    given["vm0"]["silent_when_gone"] = False
    p = plan_cycle(given, {"max_fault_domains_in_maintenance": 1}, NOW)
    assert p["hosts"]["vm0"]["status"] == "unread" and p["fault_domains_in_maintenance"] == ["scale set web / fault domain 0"]
    assert p["hosts"]["vm1"]["prepare"] == []
