# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_state: the module on the VM; for a host read through the control plane, the same save of the
state (and its lock) kept on the controller."""

from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.state_file import argument_spec, run_save
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.host_transport import HostTransportAction


class ActionModule(HostTransportAction):
    RUN = staticmethod(run_save)
    ARGUMENT_SPEC = staticmethod(argument_spec)
    PATH_OPTIONS = ("path",)
