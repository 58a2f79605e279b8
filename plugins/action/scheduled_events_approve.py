# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_approve: the module on Linux VMs, the same code via win_uri on Windows VMs."""

from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.approve import (
    MUTUALLY_EXCLUSIVE,
    REQUIRED_ONE_OF,
    argument_spec,
    run_approve,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.host_transport import HostTransportAction


class ActionModule(HostTransportAction):
    RUN = staticmethod(run_approve)
    ARGUMENT_SPEC = staticmethod(argument_spec)
    REQUIRED_ONE_OF = REQUIRED_ONE_OF
    MUTUALLY_EXCLUSIVE = MUTUALLY_EXCLUSIVE
    PATH_OPTIONS = ("state_path",)
