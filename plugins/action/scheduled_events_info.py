# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_info: the module on Linux VMs, the same code via win_uri on Windows VMs."""

from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import argument_spec, run_info
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.host_transport import HostTransportAction


class ActionModule(HostTransportAction):
    RUN = staticmethod(run_info)
    ARGUMENT_SPEC = staticmethod(argument_spec)
    PATH_OPTIONS = ("state_path",)

    def labelled(self, result, transport):
        result["transport"] = transport  # the role picks how to save its state file from this
        return result
