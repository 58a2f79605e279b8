# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A Linux VM, as its modules see it from inside: IMDS over urllib, the state and the run's lease lock in files."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.module_utils.common.text.converters import to_native

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import ephemeral_os_disk
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


def same_filesystem(path, root):
    """Whether `path` (or, before a first cycle, its nearest folder that exists) is on `root`'s filesystem."""
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return os.stat(path).st_dev == os.stat(root).st_dev


class LinuxVm(LocalFiles, ImdsHost):
    """The Linux VM a module runs on."""

    transport = "module"
    root = "/"  # the OS disk's filesystem

    def reset_disk_refusal(self, path):
        """A state on an ephemeral OS disk is erased by the very Redeploy it prepared for (or a reimage): the next
        read would find no recover owed and the fault domain free, the drain never undone. Refused, so the host
        counts as busy until the state is moved to a data disk (docs/reference/safety-rules.md)."""
        if not ephemeral_os_disk(self.compute) or not same_filesystem(os.path.abspath(path), self.root):
            return ""
        return ("%s is on this VM's ephemeral OS disk, which a reimage or a move to another node (Redeploy, service "
                "healing) erases with any recover it owes, so the VM counts as busy: put maintenance_cycle_state_path "
                "on a data disk." % path)
