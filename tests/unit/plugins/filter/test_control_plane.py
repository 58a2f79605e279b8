"""control_plane_vm_ids: only hosts whose transport is the control plane, and only with an id (one without is left
to fail its own claim, not the whole read)."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.filter.control_plane import control_plane_vm_ids


def test_only_control_plane_hosts_with_an_id_are_read() -> None:
    hostvars = {"a": {"maintenance_cycle_transport": "control_plane", "maintenance_cycle_vm_id": "/id/a"},
                "b": {"maintenance_cycle_transport": "control_plane"},
                "c": {"maintenance_cycle_vm_id": "/id/c"},
                "d": {"maintenance_cycle_transport": "imds", "maintenance_cycle_vm_id": "/id/d"}}
    assert control_plane_vm_ids(["a", "b", "c", "d", "not-in-hostvars"], hostvars) == {"a": "/id/a"}


def test_only_the_cycle_runs_over_control_plane_hosts_the_others_stop_in_one_sentence() -> None:
    from ansible_collections.azure_imds.scheduled_events.plugins.filter.control_plane import control_plane_error
    hostvars = {"a": {"maintenance_cycle_transport": "control_plane"}, "b": {}}
    assert control_plane_error(["a", "b"], hostvars, "cycle") == ""
    assert control_plane_error(["b"], hostvars, "approve") == ""
    sentence = control_plane_error(["a", "b"], hostvars, "approve")
    assert sentence.startswith("The approve playbook reads every host through its IMDS, and a uses ")
    assert sentence.endswith("or leave them out of this run's target.") and sentence.count(".") == 1
