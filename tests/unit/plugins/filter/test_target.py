"""plugins/filter/target.py: a target that matches no host gets one sentence naming the inventory's groups."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.filter.target import target_error


def test_a_target_that_matches_a_host_is_no_error() -> None:
    assert target_error("azure_vms", ["vm0"], {"all": ["vm0"], "azure_vms": ["vm0"]}) == ""


def test_a_target_that_matches_nothing_is_one_sentence_naming_the_users_groups() -> None:
    message = target_error("azure_vmz", [], {"all": ["vm0"], "ungrouped": [], "web": ["vm1"], "azure_vms": ["vm0"]})
    assert message.startswith("The target 'azure_vmz' matches no host of the inventory (its groups: azure_vms, web)")
    assert message.count(". ") == 0 and message.endswith("."), "one sentence"
    assert "all" not in message.split("(")[1].split(")")[0].split(", "), "Ansible's own groups are no help"


def test_an_inventory_without_groups_says_so() -> None:
    assert "(it has no group)" in target_error("vm9", [], {"all": [], "ungrouped": []})
    assert "(it has no group)" in target_error("vm9", None, None)
