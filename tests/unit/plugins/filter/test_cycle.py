"""The cycle filters' edge (plugins/filter/cycle.py): what goes from the play's host variables into the memory."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.filter.cycle import read_vms

VM0 = {"name": "vm0", "fault_domain": 0, "vm_scale_set_name": "web"}


def query(*events: dict) -> dict:
    return {"events": list(events), "this_vm": VM0, "document_available": True}


def test_read_vms_carries_the_preempts_and_terminates_a_read_shows_started() -> None:
    started = {"event_id": "E1", "event_type": "Preempt", "event_status": "Started", "resources": ["vm9"]}
    hostvars = {"a": {"maintenance_cycle_query": query(started)},
                "b": {"maintenance_cycle_query": query(dict(started, event_status="Scheduled"))},
                "c": {"maintenance_cycle_query": query(started), "maintenance_cycle_left_alone": True},
                "d": {"maintenance_cycle_query": {"failed": True}}}
    seen = read_vms(["a", "b", "c", "d"], hostvars)
    sighting = {"event_id": "E1", "event_type": "Preempt", "resources": ["vm9"]}
    assert seen == {"a": dict(VM0, started_deletes=[sighting]), "b": VM0}
