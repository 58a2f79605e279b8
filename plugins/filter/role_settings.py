# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance_cycle role's settings, checked against its argument specification before the role runs
(plugin_utils/role_settings.py)."""

from __future__ import annotations

import os

import yaml

from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.role_settings import settings_error

# plugins/filter/role_settings.py -> the collection's root -> the role's specification, installed beside it
SPEC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__)))),
                    "roles", "maintenance_cycle", "meta", "argument_specs.yml")


def _options():
    with open(SPEC, encoding="utf-8") as handle:
        # the C loader when PyYAML has it: this is read once per host of every run
        spec = yaml.load(handle, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    return spec["argument_specs"]["main"]["options"]


def role_settings_error(variables):
    """'' or the sentence for a host's variables (hostvars[inventory_hostname]); only the settings it has."""
    options = _options()
    given = dict((name, variables[name]) for name in options if name in variables)
    return settings_error(options, given)


class FilterModule(object):
    def filters(self):
        return {"role_settings_error": role_settings_error}
