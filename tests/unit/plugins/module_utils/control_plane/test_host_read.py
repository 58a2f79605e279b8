"""host_read: the run's control-plane read seen from one host (its document and compute facts, normalised as a read
from IMDS is), and every way the read cannot vouch for a host (each must make the host blind, so that the cycle counts
it as busy)."""
from __future__ import annotations

from datetime import datetime, timezone
from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_read import (
    ControlPlaneBlind,
    acknowledgements,
    check_host,
    check_owed,
    check_present,
    check_read,
    document_for,
    ended_for,
    facts_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    DocumentError,
    normalise_event,
    parse_document,
)

from .payloads import SUBSCRIPTION

NOW = datetime(2026, 11, 27, 10, 0, 0, tzinfo=timezone.utc)
GROUP = f"/subscriptions/{SUBSCRIPTION}/resourceGroups/rg-web/providers/Microsoft.Compute"
WEB0 = f"{GROUP}/virtualMachines/Web-VM0"
SET_VM = f"{GROUP}/virtualMachineScaleSets/web/virtualMachines/3"
SCOPE = f"{GROUP}/availabilitySets/avset-web"
IDS = ["0D8E4C51-3F1A-4B62-9C7D-1E2F3A4B5C6D", "7A1B2C3D-4E5F-4061-8273-9A8B7C6D5E4F",
       "3C2B1A09-8F7E-4D6C-9B5A-4E3D2C1B0A98"]


def event(event_id: str, status: str = "Scheduled", hosts=("web0",), not_before: str = "2026-11-27T10:15:00Z",
          scope: str = SCOPE) -> Dict[str, Any]:
    return {"event_id": event_id, "event_type": "Reboot", "event_status": status, "resource_type": "VirtualMachine",
            "resources": ["Web-VM0"], "not_before": not_before if status == "Scheduled" else None,
            "description": "Host maintenance", "event_source": "Platform", "duration_in_seconds": -1,
            "known_type": True, "known_status": status in ("Scheduled", "Started"), "scope": scope,
            "seen_at": "2026-11-27T09:59:55Z", "source": "resource_graph", "hosts": list(hosts)}


def read(*events: Dict[str, Any], **changes: Any) -> Dict[str, Any]:
    base = {"changed": False, "events": list(events), "unmapped": {}, "ambiguous": {}, "unreadable": [],
            "read_at": "2026-11-27T09:59:55Z", "subscriptions": [SUBSCRIPTION], "vm_ids": {"web0": WEB0}}
    base.update(changes)
    return base


def test_the_document_lists_the_hosts_events_normalised_and_leaves_out_the_ended_ones() -> None:
    got = read(event(IDS[0]), event(IDS[1], "Completed"), event(IDS[2], hosts=("web1",)))
    parsed = document_for(got, "web0", NOW)
    (only,) = parsed["events"]
    assert only == normalise_event(parsed["raw"]["Events"][0]), "the same event a read from IMDS would give"
    assert parse_document(parsed["raw"]) == parsed, "the history's record of the document is the document"
    assert (only["event_id"], only["event_status"], only["not_before"]) == (IDS[0], "Scheduled", "2026-11-27T10:15:00Z")
    assert parsed["raw"]["Events"][0]["NotBefore"] == "Fri, 27 Nov 2026 10:15:00 GMT", "RFC 1123, as IMDS serves it"
    assert [(e["EventId"], e["EventStatus"], e["NotBefore"]) for e in ended_for(got, "web0", NOW)] == [
        (IDS[1], "Completed", "")]


def test_a_row_still_scheduled_after_its_not_before_is_served_started() -> None:
    late = event(IDS[0], not_before="2026-11-27T09:59:00Z")
    served = document_for(read(late), "web0", NOW)
    assert [(e["event_status"], e["not_before"]) for e in served["events"]] == [("Started", None)]
    assert (served["raw"]["Events"][0]["EventStatus"], served["raw"]["Events"][0]["NotBefore"]) == ("Started", "")


def test_a_row_without_the_fields_resource_graph_may_lack_gets_imds_defaults_and_an_unknown_type_its_warning() -> None:
    bare = dict(event(IDS[0]), event_type="Hibernate", resource_type=None, description=None, event_source=None,
                duration_in_seconds=None)
    parsed = document_for(read(bare), "web0", NOW)
    (only,) = parsed["events"]
    assert (only["resource_type"], only["description"], only["event_source"]) == ("VirtualMachine", "", "Platform")
    assert only["known_type"] is False and "unknown EventType 'Hibernate'" in parsed["warnings"][0]
    assert parse_document(parsed["raw"]) == parsed


def test_the_incarnation_changes_with_the_events_and_not_otherwise() -> None:
    one = document_for(read(event(IDS[0])), "web0", NOW)["document_incarnation"]
    assert document_for(read(event(IDS[0])), "web0", NOW)["document_incarnation"] == one
    assert document_for(read(event(IDS[0], "Started")), "web0", NOW)["document_incarnation"] != one
    assert document_for(read(), "web0", NOW)["document_incarnation"] == 0


def test_a_read_that_vouches_for_the_host_gives_its_vm_name() -> None:
    assert check_read(read(), "web0", WEB0, NOW, 60) == "web-vm0"


@pytest.mark.parametrize("broken, cause", [
    (dict(failed=True, msg="Resource Graph answered 429"), "read failed (Resource Graph answered 429)"),
    (dict(read_at="2026-11-27T09:58:00Z"), "120 s old, more than the 60 s allowed"),
    (dict(unreadable=["The Resource Graph row has no id."]), "1 row(s) it could not parse"),
    (dict(vm_ids={"web1": WEB0}), "did not place web0 by its VM id"),
    (dict(vm_ids={"web0": WEB0.replace("Web-VM0", "Other")}), "did not place web0 by its VM id"),
    (dict(subscriptions=["0f0f0f0f-0000-0000-0000-000000000000"]), f"did not cover subscription {SUBSCRIPTION}"),
    (dict(ambiguous={IDS[0]: {"Web-VM0": ["web0", "web0-again"]}}), "which web0 and web0-again share"),
])
def test_what_the_read_cannot_vouch_for_makes_the_host_count_as_busy(broken: Dict[str, Any], cause: str) -> None:
    with pytest.raises(ControlPlaneBlind) as raised:
        check_read(read(event(IDS[0]), **broken), "web0", WEB0, NOW, 60)
    assert isinstance(raised.value, DocumentError), "a task fails on it as on a document it cannot use"
    assert cause in str(raised.value) and str(raised.value).endswith("web0 counts as busy (unread).")


def test_no_read_at_all_and_a_host_id_that_is_no_vm_id_are_blind_too() -> None:
    for given, vm_id in (({"skipped": True}, WEB0), (read(), "/subscriptions/x/not-a-vm")):
        with pytest.raises(ControlPlaneBlind, match="counts as busy"):
            check_read(given, "web0", vm_id, NOW, 60)


def test_compute_facts_name_the_vm_as_resources_lists_it_and_say_only_the_fault_domain_it_was_given() -> None:
    assert facts_for("web0", WEB0, 2)["name"] == "Web-VM0"
    assert facts_for("web0", WEB0, 2)["fault_domain"] == 2 and facts_for("web0", WEB0, "2")["fault_domain"] == 2
    assert facts_for("web0", WEB0, "")["fault_domain"] is None, "unknown stays unknown"
    facts = facts_for("web3", SET_VM, None)
    assert (facts["name"], facts["vm_scale_set_name"]) == ("web_3", "web")


def test_a_scale_set_vms_fault_domain_is_used_only_with_its_zone() -> None:
    """Fault-domain numbers repeat in each zone of a scale set: without the zone, two VMs of fault domain 0 in two
    zones would be one fault domain to the plan, and both could be in maintenance at once."""
    assert facts_for("web3", SET_VM, 0)["fault_domain"] is None
    zonal = facts_for("web3", SET_VM, 0, "2")
    assert (zonal["fault_domain"], zonal["zone"]) == (0, "2")


def test_acknowledgements_go_to_each_events_scope_and_never_to_an_event_the_read_does_not_place() -> None:
    other = f"{GROUP}/virtualMachines/Web-VM0"
    got = read(event(IDS[0]), event(IDS[1], scope=other), event(IDS[2], hosts=("web1",)))
    assert acknowledgements(got, "web0", [IDS[0].lower(), IDS[1]]) == {SCOPE: [IDS[0].lower()], other: [IDS[1]]}
    with pytest.raises(ControlPlaneBlind, match="does not list event %s on web0" % IDS[2]):
        acknowledgements(got, "web0", [IDS[2]])


def test_an_event_the_state_owes_a_recover_for_must_be_shown_listed_or_ended() -> None:
    state = {"events": [dict(event(IDS[0]), prepare="started")]}
    with pytest.raises(ControlPlaneBlind, match=f"shows neither {IDS[0]} nor its end, which web0 has on record"):
        check_owed(read(), "web0", state)
    # An approval already sent (the fault model's seed 48: a read gone back in time dropped it, and the next read,
    # newer again, approved the event a second time), and a mere sighting, are on record too.
    for recorded in ({"approved": [IDS[1]]}, {"events": [dict(event(IDS[2]), prepare=None)]}):
        with pytest.raises(ControlPlaneBlind, match="shows neither"):
            check_owed(read(event(IDS[0])), "web0", recorded)
    check_owed(read(event(IDS[0].lower(), "Completed")), "web0", state)  # its end is shown: the recover may run
    check_owed(read(event(IDS[0], hosts=("web1",))), "web0", state)  # no longer lists web0: as IMDS would say
    check_owed(read(), "web0", None)


def test_a_host_whose_own_terminate_completed_is_gone_not_read_while_a_started_event_lists_it() -> None:
    """The control plane goes on listing a deleted VM's events; read as the VM's, they kept a fault domain in the
    plan that no VM was in, and it licensed a second one (the fault model's seed 1)."""
    terminated = dict(event(IDS[0], "Completed"), event_type="Terminate")
    with pytest.raises(ControlPlaneBlind, match=f"web0's own Terminate {IDS[0]} Completed: its VM is gone"):
        check_present(read(terminated, event(IDS[1], "Started")), "web0", NOW)
    check_present(read(dict(terminated, event_status="Started"), dict(event(IDS[1], "Completed"))), "web0", NOW)
    check_present(read(dict(terminated, hosts=["web1"])), "web0", NOW)


def test_a_spot_vm_evicted_and_started_again_is_read_so_that_its_drain_is_undone() -> None:
    """Regression (the fault model's spot-restart seed 2, and seed 6 with a Redeploy days ahead): unread while
    Resource Graph kept its Completed Preempt, then blind for the event on record that the read no longer showed,
    a Spot VM deallocated and started again stayed drained for good, its fault domain held all along."""
    evicted = dict(event(IDS[0], "Completed"), event_type="Preempt")
    state = {"events": [dict(event(IDS[0], "Started"), event_type="Preempt", prepare="started")]}
    check_host(read(evicted), "web0", WEB0, NOW, 60, state)  # its end is shown: the owed recover runs
    check_host(read(evicted, event(IDS[1])), "web0", WEB0, NOW, 60, state)  # a Scheduled event holds no domain
    check_host(read(), "web0", WEB0, NOW, 60, {"events": []})  # the row dropped once the recover ran
    for holding in (event(IDS[1], "Started"), event(IDS[1], not_before="2026-11-27T09:59:00Z"),
                    event(IDS[1], "Paused")):  # Started, Scheduled past its NotBefore, a status not known
        with pytest.raises(ControlPlaneBlind, match=f"and {IDS[1]}, which would count its fault domain"):
            check_host(read(evicted, holding), "web0", WEB0, NOW, 60, state)
    # A drain on record for an event still listed would count its domain in maintenance, and license a join, while
    # no VM of it is (found in review): unread.
    drained = {"events": state["events"] + [dict(event(IDS[1]), prepare="done")]}
    with pytest.raises(ControlPlaneBlind, match=f"and {IDS[1]}, which would count its fault domain"):
        check_host(read(evicted, event(IDS[1])), "web0", WEB0, NOW, 60, drained)
