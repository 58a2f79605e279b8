"""plugins/filter/role_settings.py: the role's own specification, read where the collection installs it."""
from __future__ import annotations

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.filter.role_settings import _options, role_settings_error


def test_the_specifications_own_defaults_are_valid_settings() -> None:
    options = _options()
    assert "maintenance_cycle_max_fault_domains_in_maintenance" in options
    defaults = dict((name, spec["default"]) for name, spec in options.items() if "default" in spec)
    assert len(defaults) > 10 and role_settings_error(defaults) == ""


@pytest.mark.parametrize("name, value", [("maintenance_cycle_max_fault_domains_in_maintenance", "abc"),
                                         ("maintenance_cycle_serialisation_unit", "rack"),
                                         ("maintenance_cycle_approve_user_events", "perhaps")])
def test_a_bad_value_of_the_role_is_named(name: str, value: str) -> None:
    message = role_settings_error({name: value, "inventory_hostname": "vm0"})
    assert f"'{name}'" in message or name in message, message
