# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Sets split over runs: the split-set rule; pure, no I/O.

Every VM of a set sees every event of the set, so a name that an event lists and that is no VM of this run's
target is a VM of the set that this run does not manage. Another run may manage it (Windows VMs on a schedule
beside Linux VMs event-driven, two targets over one set), and this run cannot see that run's drains: once the
event that listed them is gone, it would take their fault domain for free while the other run has not yet
recovered, and drain a second domain. Nothing a run can read tells an unmanaged VM from one another run drains,
so the rule fails closed: a set with VMs outside the target is refused (its events are neither prepared nor
approved; owed recovers still run), loudly, until the operator puts the whole set in one target, or says that
nothing else manages those VMs (approve_outside_inventory). The control node remembers the names for as long as
it remembers VMs (vm_memory), since the danger comes after the event that showed them is gone."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    resource_name,
)

NAMES_SHOWN = 5


def set_of(domain):
    """The set part of a fault domain's key (views.domain_key): a scale set across its zones, an availability set,
    else the zone or the VM alone."""
    return domain.split(" / ")[0]


def outside_vms(views, own_names):
    """{set: sorted names} listed by the events this run's reads show (any status) that are no VM of the target.

    `own_names` are the target's VM names beyond the views' own (hosts outside this run's limit, by inventory
    name or resource_name, and the VMs the control node remembers reading)."""
    own = set(resource_name(n) for n in own_names) | set(resource_name(v["vm_name"]) for v in views.values())
    found = {}
    for view in views.values():
        for event in view["seen"]:
            for name in event.get("resources", []):
                if resource_name(name) not in own:
                    found.setdefault(set_of(view["domain"]), set()).add(name)
    return dict((key, sorted(names)) for key, names in found.items())


def split_sets(current, remembered, own_names):
    """{set: sorted names}: the sets this run refuses, from its reads and the control node's memory, leaving out
    names that are the target's own now (the operator put the rest of the set in the target)."""
    own = set(resource_name(n) for n in own_names)
    merged = {}
    for found in (current or {}, remembered or {}):
        for key, names in found.items():
            kept = set(n for n in names if resource_name(n) not in own)
            if kept:
                merged.setdefault(key, set()).update(kept)
    return dict((key, sorted(names)) for key, names in merged.items())


def refusal(set_name, names):
    """The one sentence a refused set gets."""
    shown = ", ".join(names[:NAMES_SHOWN]) + (" and %d more" % (len(names) - NAMES_SHOWN) if len(names) > NAMES_SHOWN else "")
    return ("%s has VMs outside this target (%s): another run may drain them, which this run cannot see, so it "
            "prepares and approves nothing in that set (owed recovers still run); run one target per set (an AWX job "
            "template with job slicing splits every set: partition the inventory by whole sets instead, one template "
            "per partition), or set maintenance_cycle_approve_outside_inventory if nothing else manages those VMs "
            "(events listing them are then approved once this target's hosts are prepared)." % (set_name, shown))
