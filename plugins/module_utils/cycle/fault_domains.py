# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault domains in maintenance, and whether an event may join them: the fault-domain rule; pure, no I/O.

A fault domain is in maintenance while one of its hosts is in a Started or approved event (or one of a status
this code does not know) or has begun a prepare not yet recovered. An event is admitted when it brings no new
fault domain, when the limit leaves room, or when nothing else is in maintenance; else it waits, until its
NotBefore is near (then it is prepared late). plan.plan_cycle applies it event by event."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    PREPARE_DONE,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import (
    BLIND,
    UNSEEN_DOMAIN,
    UNSEEN_STATUSES,
    owes_recover,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    affects,
    resource_name,
)


def busy_fault_domains(views, by_vm, outside_is_free=False):
    """({fault domain: why it is in maintenance}, the domains only maybe in maintenance) before this cycle.

    A domain held only by hosts the plan cannot see may or may not be in maintenance: it blocks other
    domains, but never lets more hosts join it as if it certainly were."""
    busy, certain, holders = {}, set(), {}

    def hold(domain, why, surely, event_id=None):
        busy.setdefault(domain, why)
        holders.setdefault(domain, set()).add(event_id.upper() if event_id else None)
        if surely:
            certain.add(domain)

    approved = set()
    for view in views.values():
        approved |= view["approved"]
    for view in views.values():
        if view["status"] in UNSEEN_STATUSES:
            hold(view["domain"], "%s is %s" % (view["host"], view["status"]), False, "host " + view["host"])
        for record in view["records"]:
            if record.get("prepare"):
                # Only a drain done for an event still under way licenses other events to join its domain: not
                # one merely begun (written ahead: the run may have died before the drain), one prepared late
                # (over the limit, as NotBefore was near), nor one owed a recover (which may already have run,
                # in a run that died before it saved).
                ongoing = not owes_recover(record, view["present"].get(record["event_id"].upper()), view["vm_name"])
                hold(view["domain"], "%s prepared for %s" % (view["host"], record["event_id"]),
                     ongoing and record["prepare"] == PREPARE_DONE and not record.get("late"), record["event_id"])
            elif (view["status"] == BLIND and record["event_status"] != "Scheduled"
                  and affects(record, view["vm_name"])):
                why = "%s was in %s event %s" % (view["host"], record["event_status"], record["event_id"])
                hold(view["domain"], why, False, record["event_id"])
        # A Started event puts every VM it lists into maintenance; so does one of a status this code does not
        # know (it may be one): only Scheduled is known not to have begun.
        for event in view["seen"]:
            # An approved event still shown Scheduled is about to start (a read lagging behind the approval, a
            # Terminate Azure holds for its set): its VMs are in maintenance as if it had started, with or without
            # a drain on record (without prepare tasks there is none).
            started = event["event_id"].upper() in approved
            if event["event_status"] == "Scheduled" and event.get("known_status", True) and not started:
                # A set split over runs (say Windows VMs on a schedule, Linux VMs event-driven): another run may
                # be draining the VMs it lists that this run does not have. Unless the operator said that VMs
                # outside the play are not this run's concern (approve_outside_inventory).
                outside = [n for n in event["resources"] if by_vm.get(resource_name(n)) is None]
                if outside and not outside_is_free:
                    hold(UNSEEN_DOMAIN, "%s, outside this run, is listed by %s (another run may prepare it)"
                         % (outside[0], event["event_id"]), False, event["event_id"])
                continue
            for name in event["resources"]:
                host = by_vm.get(resource_name(name))
                domain = views[host]["domain"] if host else UNSEEN_DOMAIN
                # Busy, but it licenses no other event to join the domain: the event may end any moment (a Freeze of
                # seconds stays Started for minutes), and a drain made on that word would then be one more domain.
                status = "approved" if started else event["event_status"]
                hold(domain, "%s is in %s event %s" % (name, status, event["event_id"]), False, event["event_id"])
    return busy, set(busy) - certain, holders


def unseen_needed(event, by_vm, policy):
    """An event that lists VMs outside this run takes the unseen domain with it (see busy_fault_domains)."""
    if policy["approve_outside_inventory"]:
        return set()
    return set([UNSEEN_DOMAIN]) if any(resource_name(r) not in by_vm for r in event["resources"]) else set()


def admission(needed, busy, certain, own, limit, seconds_left, anyway_seconds):
    # With nothing else in maintenance (at most this event's own hosts: its own begun prepares, its own unseen
    # hosts), an event that spans several fault domains goes as a whole: Azure takes them together anyway, and
    # deferring a part would leave it unprepared at NotBefore. A domain another event holds (one admitted in this
    # very cycle too) is something else in maintenance.
    alone = not (set(busy) - own)
    if needed <= certain or len(set(busy) | needed) <= limit or alone:
        return "admitted"
    if seconds_left is not None and seconds_left <= anyway_seconds:
        return "late"  # Azure starts it at NotBefore anyway: better prepared than surprised
    return "deferred"


def deferral(needed, busy, limit):
    waiting = ", ".join(sorted(needed - set(busy)))
    return "%s waits: %s in maintenance (limit %d)" % (waiting, "; ".join("%s (%s)" % (d, busy[d]) for d in sorted(busy)),
                                                       limit)
