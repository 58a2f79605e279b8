# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type


class ModuleDocFragment(object):
    """The control_plane option of the VM modules the maintenance_cycle role runs over either transport."""

    DOCUMENTATION = r"""
options:
  control_plane:
    description:
      - For a host read through Azure's control plane instead of its IMDS (the M(azure_imds.scheduled_events.maintenance_cycle)
        role sets it for hosts whose C(maintenance_cycle_transport) is C(control_plane)). The task then runs on the
        controller and does not contact the VM. Its IMDS requests are answered from the control plane, the document
        from C(read) (a result of M(azure_imds.scheduled_events.scheduled_events_control_plane_info)), or a fresh
        Resource Graph read of this VM when C(read) is not given, and an approval is a Microsoft.Maintenance acknowledge
        on the event's scope. The VM's files (state, lock) are kept in the controller's state store, C(store) (a URL,
        as C(maintenance_cycle_state_store) gives it), by default files under C(state_dir)/<inventory host>/.
      - "Keys: C(vm_id) (the VM's ARM id, required), C(store) (V(file:) by default, V(file:/dir),
        V(sqlite:///path/to/state.db) or V(postgresql://user@host/database)), C(state_dir) (required by the default
        store), C(read), C(max_age) (seconds a read
        is trusted, default 60), C(fault_domain) (the VM's platform fault domain, which the control plane does not
        tell; unknown holds every new fault domain of its set; a uniform scale set's VM needs C(zone) with it), C(zone),
        C(subscriptions), C(api_version) (of acknowledge)."
      - What the read cannot vouch for fails the task in one sentence, so that the cycle counts the host as busy.
        Azure credentials come from the controller's environment or profile, as for
        M(azure_imds.scheduled_events.scheduled_events_acknowledge).
    type: dict
"""
