# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""scheduled_events_claim: the module on Linux VMs; on Windows VMs the same read through win_uri, no lock yet."""

from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.action.scheduled_events_info import (
    ActionModule as InfoAction,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.claim import argument_spec, run_claim


class ActionModule(InfoAction):
    """Labelled with its transport, as scheduled_events_info's results are (the role saves its state by it)."""
    RUN = staticmethod(run_claim)
    ARGUMENT_SPEC = staticmethod(argument_spec)
