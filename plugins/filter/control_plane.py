# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts of a cycle read through Azure's control plane, by their VM ids (the run's one Resource Graph read)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Dict, Iterable


def control_plane_vm_ids(hosts: Iterable[str], hostvars: Mapping) -> Dict[str, str]:
    """{host: maintenance_cycle_vm_id} of the hosts whose maintenance_cycle_transport is control_plane (set in the
    inventory or with -e) and that have an id. One without is left out of the read: its own claim then fails in one
    sentence (plugin_utils/control_plane_host.py), so that it alone counts as busy."""
    chosen: Dict[str, Any] = {}
    for host in hosts or []:
        try:
            host_vars = hostvars[host]
        except KeyError:
            continue
        if host_vars.get("maintenance_cycle_transport") == "control_plane" and host_vars.get("maintenance_cycle_vm_id"):
            chosen[str(host)] = str(host_vars["maintenance_cycle_vm_id"])
    return chosen


class FilterModule(object):
    def filters(self):
        return {"control_plane_vm_ids": control_plane_vm_ids}
