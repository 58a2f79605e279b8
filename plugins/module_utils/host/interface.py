# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a task may ask of the host it runs for, whatever kind of host it is: the seam between the tasks and the I/O.

A task (tasks/*_task.py) asks a host for its document (normalised: incarnation, events, warnings, and the raw
document the history keeps), its compute facts, to approve event ids, and to read and write its cycle state and
the run's lease lock next to it. Each kind of host answers with an adapter of its own and says once, in its
`capabilities`, what it cannot do; a task reads the capability, never the kind:
- a Linux VM (host/linux_vm.py): IMDS over urllib, the state and the lock in files on the VM;
- a Windows VM (plugin_utils/windows_host.py): IMDS through ansible.windows.win_uri, the state through slurp and
  win_copy, no lock;
- a host read through Azure's control plane (plugin_utils/control_plane_host.py): its events from the run's
  Resource Graph read, its approval a Microsoft.Maintenance acknowledge, its state and lock kept on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import DocumentError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.imds import ImdsError


class HostError(Exception):
    """What a host could not answer or do; the message is one sentence naming the cause."""


class StateUnreadable(Exception):
    """The state exists but cannot be read; the message names the cause."""


# What any host's document, compute facts or approval may raise, each with its one sentence: IMDS's own errors,
# a document that cannot be used (or a read that cannot vouch for a host), and the rest.
HOST_ERRORS = (ImdsError, DocumentError, HostError)


@dataclass(frozen=True)
class Capabilities:
    """What a kind of host cannot do, declared once by its adapter, for the tasks to read instead of its kind.

    `no_lock`: '' when the run's lease lock is kept next to the state (update_lock), else why not: the sentence a
    task warns with where it would take or renew one, going on without it. Every kind keeps the state and records
    the ids it approves there before it sends them (the write-ahead), so neither is a capability any kind lacks."""

    no_lock: str = ""


class Host:
    """One host, as a task sees it. `transport` labels its results (the history and the plan tell hosts apart by it);
    `warn(text)` is the task's warning."""

    transport = ""
    capabilities = Capabilities()
    where = ""  # the address a message about what the host lacks names (IMDS's)

    def __init__(self, warn):
        self.warn = warn

    def compute_facts(self):
        """The `this_vm` facts (document/events.py's compute_facts); raises one of HOST_ERRORS."""
        raise NotImplementedError

    def document(self):
        """The Scheduled Events document as parse_document gives it ({document_incarnation, events, warnings,
        raw}), None when there is none yet; raises one of HOST_ERRORS."""
        raise NotImplementedError

    def approve(self, event_ids):
        """Start `event_ids` (as the document spells them), in one request; raises one of HOST_ERRORS."""
        raise NotImplementedError

    def reset_disk_refusal(self, path):
        """'' when the state at `path` outlives what the VM's maintenance does to its disks, else the sentence that
        refuses it (asked after compute_facts). Only a Linux VM keeps a state a move can erase and can tell."""
        return ""

    def read_state(self, path):
        """The state's text, None when there is none (a first cycle); raises StateUnreadable."""
        raise NotImplementedError

    def write_state(self, path, text):
        """Replace the state with `text` in one step (its folder created); raises OSError."""
        raise NotImplementedError

    def update_lock(self, path, change, write=True):
        """change(lock text or None) under an exclusive guard, then write its answer (lease/lock_file.py); with
        write false only read. Asked only of a host whose capabilities say it keeps a lock."""
        raise NotImplementedError
