# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The state a host saves at each step of its cycle (write-ahead); pure, no I/O."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    PREPARE_DONE,
    PREPARE_STARTED,
    STATE_VERSION,
    empty_state,
    event_record,
    state_problem,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import (
    PolicyError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import (
    owes_recover,
)

# The steps of a cycle at which a host saves its state (the role's save points, in order).
BEFORE_PREPARE, PREPARED, AFTER_RECOVER = "before_prepare", "prepared", "after_recover"
SAVE_STEPS = (BEFORE_PREPARE, PREPARED, AFTER_RECOVER)


def state_for_step(result, host_plan, step, approved_now=()):
    """The state a host saves at a step of its cycle, from its read (`result`) and its part of the plan.

    before_prepare: the events about to be prepared are recorded as begun (write-ahead: a run killed or a host
    lost during the prepare tasks still owes their recover); prepared: they are done, and news is on record
    before anything is approved (the ids about to be sent scheduled_events_approve records itself, on every kind of
    host); after_recover: what was approved, and the recovers that ran, released."""
    prepared = [e["event_id"] for e in host_plan.get("prepare") or []]
    late = host_plan.get("late") or []
    if step == BEFORE_PREPARE:
        return state_after(result, prepared, failed=True, late=late)
    if step == PREPARED:
        return state_after(result, prepared, late=late)
    if step == AFTER_RECOVER:
        return state_after(result, prepared, approved_now, [r["event_id"] for r in host_plan.get("recover") or []],
                           late=late)
    raise PolicyError("unknown save step %r (one of %s)." % (step, ", ".join(SAVE_STEPS)))


def state_after(result, prepared_now=(), approved_now=(), recovered=(), failed=False, late=()):
    """The state a host saves: before prepare (`failed`: begun), after it, or after recover.

    Events of the current document, plus every saved event still owed a recover; prepares of this cycle
    marked done (or, when `failed`, begun: a recover is owed, and the next cycle prepares again), and marked
    `late` when prepared over the fault-domain limit (left to NotBefore); recovered events released. A host with
    no document (an empty 200), or whose saved state cannot be trusted, keeps the state it had.
    """
    saved = (result or {}).get("state") or {}
    if result.get("state_status") == "corrupt":
        raise PolicyError("the state file on this host cannot be trusted, so no state is saved over it.")
    if state_problem(saved) is not None:
        saved = empty_state()
    if result.get("document_available") is False:
        return saved
    vm_name = (result.get("this_vm") or {}).get("name") or ""
    prepare_now = PREPARE_STARTED if failed else PREPARE_DONE
    prepared_now = set(i.upper() for i in prepared_now)
    late = set(i.upper() for i in late)
    recovered = set(i.upper() for i in recovered)
    before = dict((r["event_id"].upper(), r) for r in saved["events"])
    present = dict((e["event_id"].upper(), e) for e in result["events"])
    records = []
    for key, event in present.items():
        prepare = (before.get(key) or {}).get("prepare")
        was_late = bool((before.get(key) or {}).get("late"))
        if key in prepared_now and prepare != PREPARE_DONE:
            prepare = prepare_now
            was_late = was_late or key in late
        records.append(event_record(event, None if key in recovered else prepare,
                                    late=was_late and key not in recovered and prepare is not None))
    for key, record in before.items():
        if key not in present and key not in recovered and owes_recover(record, None, vm_name):
            records.append(record)
    approved = set(i for i in list(saved["approved"]) + list(approved_now) if i.upper() in present)
    return {"version": STATE_VERSION, "document_incarnation": result.get("document_incarnation"),
            "events": sorted(records, key=lambda r: r["event_id"].upper()),
            "approved": sorted(approved, key=lambda i: i.upper())}
