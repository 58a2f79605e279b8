"""What the plan sees of each host (module_utils/cycle/views.py) on its own: the key of the fault domain (or other
serialisation unit) a VM belongs to. The plan's use of the views, host by host, is in test_plan.py."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import domain_key


def test_fault_domain_keys() -> None:
    assert domain_key({"vm_scale_set_name": "web", "zone": "2", "fault_domain": 1}) == \
        "scale set web / zone 2 / fault domain 1"
    assert domain_key({"name": "vm0", "fault_domain": 1}, "db") == "availability set db / fault domain 1"
    assert domain_key({"name": "vm0", "fault_domain": 0, "zone": "3"}) == "zone 3"
    assert domain_key({"name": "vm0", "fault_domain": 0}) == "vm vm0"  # no known set: a domain of its own


def test_serialisation_unit_keys() -> None:
    """Issue 27: what a set's maintenance walks (the policy's serialisation_unit), never merging a set's zones."""
    vm = {"name": "vm0", "fault_domain": 1, "update_domain": 4}
    assert domain_key(vm, "db", "update_domain") == "availability set db / update domain 4"
    zonal = {"name": "vm0", "vm_scale_set_name": "web", "zone": "2", "fault_domain": 0, "update_domain": 3}
    assert domain_key(zonal, unit="zone") == "scale set web / zone 2"
    assert domain_key(zonal, unit="update_domain") == "scale set web / zone 2 / update domain 3"
    assert domain_key(vm, "db", "zone") == "availability set db / fault domain 1", "no zone: by fault domain"
    assert domain_key(dict(vm, update_domain=None), "db", "update_domain") == \
        "availability set db / update domain unknown (vm0)"
