# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Linux VM, as its modules see it from inside: IMDS over urllib, the state and the run's lease lock in files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.text.converters import to_native

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import StateUnreadable
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.vm import ImdsHost
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import (
    replace_file,
    update_under_guard,
)


def read_text_file(path):
    """A file's text; None when there is none; StateUnreadable when it cannot be read or is not UTF-8 text."""
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise StateUnreadable(to_native(exc))


class LocalFiles:
    """The state and its lock as files on the machine this code runs on (the VM; the controller for a host read
    through the control plane)."""

    def read_state(self, path):
        return read_text_file(path)

    def write_state(self, path, text):
        """The directory (0700) if needed, then the file (0600) replaced atomically."""
        os.makedirs(os.path.dirname(path) or ".", 0o700, exist_ok=True)
        replace_file(path, text, prefix=".state-")

    def update_lock(self, path, change, write=True):
        return update_under_guard(path, change, write=write)


class LinuxVm(LocalFiles, ImdsHost):
    """The Linux VM a module runs on."""

    transport = "module"
