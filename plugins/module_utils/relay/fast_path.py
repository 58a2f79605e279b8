# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The relay's fast path: which events run the VM's local command, at once; pure, no I/O.

A Spot eviction announces itself with 30 s of notice at best, and often evicts in under ten: the controller's
cycle (seconds away) may come too late. So the relay itself runs a command of the operator's (stop taking work,
flush a buffer, tell a load balancer's agent), within one poll of first seeing a Preempt or Terminate that lists
its VM, before it tells the controller and independently of it. It only acts on its own VM, approves nothing,
and decides nothing for the cycle, which still runs its prepare and its fault-domain rules: the command is a
head start, never a substitute. Each event runs it once (the ids it ran for are kept across restarts)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import lists

DEFAULT_TYPES = ("Preempt", "Terminate")
KEPT_IDS = 200  # the ids the relay remembers having acted on (a VM sees a handful of such events in its life)


def events_to_act_on(document, vm_name, types, done):
    """The raw events of `document` (any status) of one of `types` that list this VM and that the command has not
    run for (`done`: ids, any case), in the document's order."""
    events = (document or {}).get("Events")
    found = []
    for event in events if isinstance(events, list) else []:
        if not isinstance(event, dict) or not isinstance(event.get("EventId"), str):
            continue
        if event.get("EventType") in types and event["EventId"].upper() not in done and lists(event, vm_name):
            found.append(event)
    return found


def command_environment(event, vm_name):
    """What the command learns of the event, as environment variables (values as served, but for NUL, which no
    environment can hold: a field with one once made every poll of the relay fail)."""
    given = {"SCHEDULED_EVENT_ID": event["EventId"], "SCHEDULED_EVENT_TYPE": event.get("EventType", ""),
             "SCHEDULED_EVENT_STATUS": event.get("EventStatus", ""),
             "SCHEDULED_EVENT_NOT_BEFORE": event.get("NotBefore") or "", "SCHEDULED_EVENT_VM": vm_name}
    return dict((name, str(value).replace("\x00", "")) for name, value in given.items())


def exit_result(returncode):
    """(the metrics' result, the phrase the log says) for a command that ended with `returncode` (Popen's: negative
    for a signal)."""
    if returncode == 0:
        return "ok", "exited 0"
    if returncode < 0:
        return "failed", "was killed by signal %d" % -returncode
    return "failed", "exited %d" % returncode


def remembered(done, new_ids):
    """The ids to keep after acting on `new_ids`: the newest KEPT_IDS, upper case, oldest first."""
    new = [i.upper() for i in new_ids]
    return ([i for i in done if i not in new] + new)[-KEPT_IDS:]
