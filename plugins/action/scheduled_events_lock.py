# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_lock: the module on Linux VMs; on Windows VMs a warning that no lock is taken yet."""

from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.lock import argument_spec, run_lock
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.host_transport import HostTransportAction


class ActionModule(HostTransportAction):
    RUN = staticmethod(run_lock)
    ARGUMENT_SPEC = staticmethod(argument_spec)
    PATH_OPTIONS = ("path",)
