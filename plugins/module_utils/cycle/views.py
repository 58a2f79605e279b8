# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the plan knows of each host: its read, its status, its fault domain, what it owes; pure, no I/O.

Only a FRESH host is seen well enough to plan for; every other status holds its fault domain
(plan.py's rules: what the plan cannot see or trust is busy, never free)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    state_problem,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.deleted import (
    taken_as_deleted,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    affects,
    resource_name,
)

# Host statuses: only a FRESH host is seen well enough to plan for.
FRESH, BLIND, HELD, UNREAD, AMBIGUOUS, DAMAGED = "fresh", "blind", "held", "unread", "ambiguous", "damaged"
# Every status but FRESH holds its host's fault domain: what the plan cannot see or trust is busy, never free;
# except DELETED, an unread VM whose own Preempt or Terminate the cycle saw Started long enough ago (deleted.py).
UNSEEN_STATUSES = (BLIND, HELD, UNREAD, AMBIGUOUS, DAMAGED)
DELETED = "deleted"
UNSEEN_DOMAIN = "unseen"  # the fault domain of listed VMs that are not hosts of the target
UNKNOWN_DOMAIN = "unknown"  # the fault domain of a host never read: blocks every new fault domain


# Why an event that lists a host the plan cannot see waits (one phrase per host).
UNSEEN_REASONS = {HELD: "another maintenance run holds %s", UNREAD: "%s could not be read",
                  BLIND: "%s has no Scheduled Events document yet", AMBIGUOUS: "%s shares its VM name with another host",
                  DAMAGED: "%s has a state file this run cannot trust", DELETED: "%s was taken as deleted"}


SERIALISATION_UNITS = ("fault_domain", "update_domain", "zone")


def domain_key(this_vm, availability_set="", unit="fault_domain"):
    """The unit of maintenance a VM is in (its fault domain, by default), as one string.

    Fault-domain numbers only mean something inside one set: a scale set (IMDS names it), an availability
    set (IMDS does not: the inventory says it, `maintenance_cycle_availability_set`), or, for a VM in no
    known set, its zone if it is zonal (zones are the failure unit; zonal VMs all report fault domain 0),
    else the VM alone, which never shares a fault domain with another VM.

    `unit` (the policy's serialisation_unit) is what a set's maintenance walks: fault domains (flexible scale
    sets; the default), update domains (availability sets and uniform scale sets walk them for reboot
    maintenance), or zones (zonal sets: reboot maintenance rolls out one zone at a time; a VM without a zone
    counts by fault domain). A scale set's zones are never merged, whatever the unit.
    """
    this_vm = this_vm or {}
    zone = this_vm.get("zone") or ""
    if unit == "zone" and zone:
        number, label = None, ""
    elif unit == "update_domain":
        number, label = this_vm.get("update_domain"), "update domain"
    else:
        number, label = this_vm.get("fault_domain"), "fault domain"
    # A VM of a set whose number is unknown (no compute metadata: Microsoft's mock server) is a unit of its own:
    # never the same as another's, so nothing joins it as if it were known, and it counts as one more.
    within = "" if not label else ("%s %s" % (label, number) if number is not None
                                   else "%s unknown (%s)" % (label, this_vm.get("name") or "?"))
    if this_vm.get("vm_scale_set_name"):
        parts = ["scale set %s" % this_vm["vm_scale_set_name"], "zone %s" % zone if zone else "", within]
    elif availability_set:
        parts = ["availability set %s" % availability_set, "zone %s" % zone if zone else "", within]
    elif zone:
        parts = ["zone %s" % zone]
    else:
        parts = ["vm %s" % (this_vm.get("name") or "?")]
    return " / ".join(p for p in parts if p)


def host_views(hosts, unit="fault_domain", now=None):
    """{host: {result, lock, availability_set, last_vm, left_alone, deleting}} -> {host: view}.

    `result` is the host's scheduled_events_info result of this run (None, failed or unreachable when it
    could not be read); `lock` is the `lock` that scheduled_events_lock returned before that read (None when
    no lock is taken); `last_vm` is its `this_vm` from an earlier read (vm_memory keeps it), so that a host
    without a fresh read still holds its last known fault domain; `left_alone` marks a host the run did not
    contact (maintenance_cycle_leave_alone): unread, whatever result it carries; `deleting` is vm_memory's
    sighting of the VM's own Preempt or Terminate Started: an unread host is DELETED once it is old enough at
    `now` (deleted.taken_as_deleted; without `now`, never), unless `silent_when_gone` is False (a control-plane
    host, whose silence is the read's, not its VM's).
    """
    views = {}
    for host, given in sorted(hosts.items()):
        given = given or {}
        result = given.get("result")
        # A failed read may still have told which VM it is (the compute metadata came first).
        last_vm = (result.get("this_vm") if isinstance(result, dict) else None) or given.get("last_vm")
        read = was_read(result) and not given.get("left_alone")
        views[host] = _view(host, result if read else None, given.get("lock") or {},
                            given.get("availability_set") or "", last_vm, unit)
        views[host]["left_alone"] = bool(given.get("left_alone"))
        views[host]["deleting"] = given.get("deleting") if isinstance(given.get("deleting"), dict) else None
        # Only a host whose silence is its VM's own (IMDS: a deleted VM answers nothing) is taken as deleted. A
        # control-plane host's read says nothing of whether its VM exists: a Spot VM evicted with Deallocate and
        # started again stays behind its Completed Preempt row for hours, drained, and must keep its domain.
        if not read and now is not None and given.get("silent_when_gone", True) \
                and taken_as_deleted(views[host]["deleting"], now):
            views[host]["status"] = DELETED
    _mark_ambiguous(views)
    for view in views.values():  # the document's events by id (ambiguity may have emptied a view's events)
        view["present"] = dict((e["event_id"].upper(), e) for e in view["events"])
    return views


def was_read(result):
    """Whether a scheduled_events_info result is a read the plan can use."""
    return (isinstance(result, dict) and not result.get("failed") and not result.get("unreachable")
            and not result.get("skipped") and isinstance(result.get("events"), list))


def _view(host, result, lock, availability_set, last_vm, unit="fault_domain"):
    this_vm = (result or {}).get("this_vm") or last_vm or {}
    state = (result or {}).get("state") or {}
    if result is None:
        status = UNREAD
    elif lock.get("held_by"):
        status = HELD
    elif result.get("state_status") == "corrupt":
        status = DAMAGED  # it may owe recovers nobody can read: kept as it is, and busy
    elif result.get("document_available") is False:
        status = BLIND
    else:
        status = FRESH
    known = bool(this_vm.get("name") or this_vm.get("fault_domain") is not None)  # else every new domain
    valid = state_problem(state) is None  # a state this code cannot trust plans as no state
    return {
        "host": host,
        "status": status,
        "vm_name": this_vm.get("name") or host,
        "name_known": bool(this_vm.get("name")),
        "state_path": (result or {}).get("state_path") or "",
        "domain": domain_key(this_vm, availability_set, unit) if known else UNKNOWN_DOMAIN,
        "set_known": bool(this_vm.get("vm_scale_set_name") or availability_set or this_vm.get("zone")),
        "events": result["events"] if status == FRESH else [],
        "records": list(state["events"]) if valid else [],
        "approved": set(i.upper() for i in state["approved"]) if valid else set(),
        "seen": (result or {}).get("events", []) if status in (FRESH, HELD) else [],
        # This run may write the VM's state: it holds the lock, or no lock is in play (locking off, a
        # Windows VM). Not in check mode, where the lock is judged but not taken.
        "holds_vm": not lock or bool(lock.get("taken")) or lock.get("supported") is False,
    }


def _mark_ambiguous(views):
    """Two hosts whose VMs share a name (different resource groups): Resources cannot tell them apart. Judged
    over every known name, read now or remembered: a host that is unread this cycle still has its VM's name,
    and the other host must not take an event meant for that VM as its own."""
    by_name = {}
    for view in views.values():
        if view["name_known"] or view["status"] != UNREAD:
            by_name.setdefault(resource_name(view["vm_name"]), []).append(view)
    for same in by_name.values():
        if len(same) > 1:
            for view in same:
                # A sighting of a deletion is matched by VM name: with two hosts of that name it may be the other's,
                # so neither is taken as deleted.
                if view["status"] in (FRESH, BLIND, DELETED):
                    view["status"] = AMBIGUOUS


def owes_recover(record, current, vm_name):
    """Is a recover owed for a saved record, given the event's current version (None when gone)?"""
    if current is None:
        return bool(record.get("prepare")) or affects(record, vm_name)
    return bool(record.get("prepare")) and not affects(current, vm_name)
