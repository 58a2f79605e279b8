# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where the control node keeps its files per target (the run lock, the memory of VMs): one naming rule."""

from __future__ import annotations

import re

DIRECTORY = "~/.ansible/azure_imds_scheduled_events"


def control_node_path(target, prefix, suffix):
    """DIRECTORY/<prefix>-<target><suffix>, the target reduced to a safe file name (no slash, no space)."""
    safe = re.sub(r"[^A-Za-z0-9_.-]+", "_", str(target))
    return "%s/%s-%s%s" % (DIRECTORY, prefix, safe, suffix)


class FilterModule(object):
    def filters(self):
        return {"control_node_path": control_node_path}
