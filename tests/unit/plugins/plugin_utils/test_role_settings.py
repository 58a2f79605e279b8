"""plugin_utils/role_settings.py: a bad role setting in one sentence, without the specification."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.role_settings import settings_error

OPTIONS = {"maintenance_cycle_max_fault_domains_in_maintenance": {"type": "int", "default": 1, "description": "x"},
           "maintenance_cycle_serialisation_unit": {"type": "str", "choices": ["fault_domain", "update_domain"]},
           "maintenance_cycle_locking": {"type": "bool", "default": True}}


def test_valid_settings_and_unknown_names_are_no_error() -> None:
    assert settings_error(OPTIONS, {"maintenance_cycle_max_fault_domains_in_maintenance": "2",
                                    "maintenance_cycle_locking": "yes", "target": "azure_vms",
                                    "maintenance_cycle_something_else": "left to the role"}) == ""
    assert settings_error(OPTIONS, {}) == ""


def test_a_bad_value_is_one_sentence_naming_the_setting_and_saying_nothing_was_done() -> None:
    message = settings_error(OPTIONS, {"maintenance_cycle_max_fault_domains_in_maintenance": "abc"})
    assert message.startswith("A setting of the maintenance_cycle role is not valid, so nothing was read or approved: ")
    assert "'maintenance_cycle_max_fault_domains_in_maintenance'" in message and message.endswith(".")
    assert "description" not in message and "maintenance_cycle_locking" not in message, "no specification"


def test_more_than_one_bad_value_gives_the_first_and_counts_the_rest() -> None:
    message = settings_error(OPTIONS, {"maintenance_cycle_max_fault_domains_in_maintenance": "abc",
                                       "maintenance_cycle_serialisation_unit": "zone",
                                       "maintenance_cycle_locking": "perhaps"})
    assert message.endswith(" (and 2 more).")
