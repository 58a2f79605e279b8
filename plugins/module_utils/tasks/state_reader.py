# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reading the cycle's state file on a Linux VM: the `read_text` edge of the modules that read it."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.text.converters import to_native

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import StateUnreadable


def read_text(path):
    """The state file's text; None when there is none (a first cycle)."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateUnreadable(to_native(exc))
