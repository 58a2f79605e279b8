# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""When a VM is quiet: nothing for a cycle to prepare, approve or recover on it. One rule, read by
scheduled_events_info (its `quiet`) and by the event relay (its pushes), so that the two never disagree."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def owes_work(state, state_status):
    """Whether the VM's saved cycle state still owes something. A corrupt state counts as work: it may owe
    recovers nobody can read, and a cycle must look at it. A missing one owes nothing."""
    return state_status == "corrupt" or bool(state and state.get("events"))


def is_quiet(document_available, vm_name, listed, saved_work):
    """Quiet: the document was read, the VM knows its name, no event lists it, and its state owes nothing.

    Every VM of a set sees every event of the set; one that an event does not list has nothing to do for it.
    A VM without a document or without a name cannot tell, so it is not quiet (what cannot be seen is busy)."""
    return bool(document_available and vm_name and not listed and not saved_work)
