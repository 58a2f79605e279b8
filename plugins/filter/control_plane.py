# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hosts read through Azure's control plane: their VM ids (the cycle's one Resource Graph read), and the sentence
that stops a playbook that cannot read them yet."""

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


def control_plane_error(hosts: Iterable[str], hostvars: Mapping, playbook: str) -> str:
    """'' when no host of `hosts` has maintenance_cycle_transport control_plane or `playbook` reads through it (only
    the cycle does yet), else the sentence that stops the run before anything is read: the other playbooks read
    every host's IMDS, where a control-plane host would only ever be unread."""
    chosen = [str(h) for h in hosts or [] if (hostvars.get(h) or {}).get("maintenance_cycle_transport") == "control_plane"]
    if not chosen or playbook == "cycle":
        return ""
    shown = ", ".join(chosen[:5]) + (" and %d more" % (len(chosen) - 5) if len(chosen) > 5 else "")
    return ("The %s playbook reads every host through its IMDS, and %s use%s maintenance_cycle_transport "
            "control_plane (read from Azure's control plane, their VMs not contacted), so nothing was read, prepared "
            "or approved; run the cycle playbook for them (on a schedule), or leave them out of this run's target."
            % (playbook, shown, "s" if len(chosen) == 1 else ""))


class FilterModule(object):
    def filters(self):
        return {"control_plane_vm_ids": control_plane_vm_ids, "control_plane_error": control_plane_error}
