"""The cycle filters' edge (plugins/filter/cycle.py): what goes from the play's host variables into the memory."""
from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

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


def test_the_plan_and_the_run_check_read_each_hosts_own_policy_from_its_variables() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.filter.cycle import cycle_plan, run_policy_error
    hostvars = {"a": {"maintenance_cycle_host_policy": {"approve_user_events": False}},
                "b": {"maintenance_cycle_host_policy": {"approve_user_events": True}},
                "c": {}}  # failed before the note: not compared
    assert run_policy_error(["a", "c"], hostvars) == ""
    assert run_policy_error(["a", "b", "c"], hostvars).startswith(
        "maintenance_cycle_approve_user_events differs between hosts of this run (a: false; b: true)")
    # The plan refuses as the check does, should a playbook skip the check: never one host's policy for both.
    with pytest.raises(AnsibleFilterError, match="differs between hosts"):
        cycle_plan(["a", "b"], hostvars, {"approve_user_events": True})


def test_a_control_plane_hosts_silence_is_not_its_vms() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.filter.cycle import _host_input
    hostvars = {"cp": {"maintenance_cycle_transport": "control_plane"}, "vm": {}}
    assert _host_input(hostvars, "cp", {})["silent_when_gone"] is False
    assert _host_input(hostvars, "vm", {})["silent_when_gone"] is True
