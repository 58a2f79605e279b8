"""Sets split over runs (module_utils/cycle/split_sets.py): which VMs are outside the target, and which sets are refused."""
from __future__ import annotations

from typing import Any, Dict, List

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.split_sets import (
    outside_vms,
    refusal,
    set_of,
    split_sets,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import domain_key


def view(vm: str, domain: str, listed: List[List[str]]) -> Dict[str, Any]:
    return {"vm_name": vm, "domain": domain, "seen": [{"resources": names} for names in listed]}


def test_the_set_of_a_fault_domain_is_the_scale_set_across_its_zones_or_the_availability_set() -> None:
    zonal = domain_key({"name": "vm0", "fault_domain": 0, "zone": "2", "vm_scale_set_name": "web"})
    assert set_of(zonal) == "scale set web"
    assert set_of(domain_key({"name": "vm0", "fault_domain": 1}, "as1")) == "availability set as1"
    assert set_of(domain_key({"name": "vm0", "fault_domain": 1, "zone": "3"})) == "zone 3"


def test_names_no_vm_of_the_target_has_are_outside_by_set_whatever_their_case() -> None:
    views = {"a": view("vm0", "availability set as1 / fault domain 0", [["VM0", "win0"], ["vm1"]]),
             "b": view("vm5", "availability set as2 / fault domain 1", [["vm5"]])}
    assert outside_vms(views, ["VM1"]) == {"availability set as1": ["win0"]}
    assert outside_vms(views, ["vm1", "WIN0"]) == {}


def test_a_remembered_name_that_is_the_targets_own_now_splits_nothing() -> None:
    remembered = {"availability set as1": ["win0", "win1"], "availability set as2": ["db0"]}
    assert split_sets({"availability set as1": ["win2"]}, remembered, ["WIN1", "db0"]) == {
        "availability set as1": ["win0", "win2"]}


def test_the_refusal_is_one_sentence_naming_the_set_a_few_vms_and_both_ways_out() -> None:
    """Both ways out, and the one a sliced AWX job needs: job slicing splits hosts round-robin, so every set."""
    sentence = refusal("availability set as1", ["vm%d" % n for n in range(8)])
    assert sentence.startswith("availability set as1 has VMs outside this target (vm0, vm1, vm2, vm3, vm4 and 3 more)")
    assert "run one target per set" in sentence and "maintenance_cycle_approve_outside_inventory" in sentence
    assert "job slicing splits every set: partition the inventory by whole sets instead" in sentence
    assert sentence.count(". ") == 0 and sentence.endswith(").")
