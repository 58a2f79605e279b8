# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan of a maintenance cycle over the hosts of a target: pure functions, no I/O.

The cycle's decisions, one concept per file of this folder: `views` (what the plan knows of each host),
`fault_domains` (the fault-domain rule), `split_sets` (sets split over runs), this file (the plan: prepares,
approvals, recovers), `transition` (what a host saves at each step). The role is a linear shell around them
(through the `cycle` filters); the safety-invariant tests drive the very same functions against the simulator.
Rules (docs/reference/safety-rules.md states them for users):

- The plan covers every host of the target, read or not. What it cannot see
  counts as busy, never as free: a host without a fresh read, held by another
  run, without a document (an empty 200), with a state file this code cannot
  trust (damaged, or of a newer version: kept as it is for a person), or whose
  VM name another host of the target has (read now or remembered) plans
  nothing, approves nothing, and holds its fault domain (a host whose domain is
  unknown blocks every new fault domain).
- A fault domain is keyed by what it really is (`domain_key`): scale set or
  availability set, zone, and fault-domain number.
- A set with VMs outside the target (events list them, now or as the control
  node remembers) is refused: another run may drain them unseen (`split_sets`).
  Its events are neither prepared nor approved; owed recovers still run.
- A fault domain is in maintenance while one of its hosts is in a Started event
  (or one of a status this code does not know) or has begun a prepare that has
  not been recovered and saved since.
- The hosts of one event are prepared together. An event is admitted when it
  brings no new fault domain, when the limit leaves room, or when nothing
  else is in maintenance (Azure takes those together anyway).
  Otherwise it is deferred, until its NotBefore is near: then it is prepared
  anyway (Azure starts it at NotBefore prepared or not), and left to NotBefore:
  the state remembers it as prepared late, so no later cycle approves it, and
  the fault domain it holds licenses no other event.
- The pending Terminates of a scale set are approved together or none early:
  Azure deletes no approved one while another waits unapproved.
- An event is approved once, by its leader (the first listed host that was
  read), by policy, and only when every host of the target it lists was read,
  prepared (or is exempt), and is still alive; never when it lists VMs outside
  the target (unless allowed), never on a stale view (the approval carries what
  was planned, see approval.stale_events).
- Drains are counted per host, across events: a host is drained while any
  event it began to prepare is not recovered. Recover is owed for every event
  that listed the host and is gone, and every event the host began to prepare
  that is gone or no longer lists it; it runs only once the host's last drain
  ends: never while an event the host began to prepare still lists it, nor in
  a cycle that prepares the host again (the recover tasks would undo the drain
  that event needs). The role runs every owed recover before any prepare.
- Write ahead (`state_for_step`): the state is saved before the prepare tasks
  run (their events as begun), after them (done, and news), before the approval
  POST (scheduled_events_approve records the ids it sends), and after recover,
  so that a kill or a lost host at any step still owes its recover.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from datetime import datetime, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    PREPARE_DONE,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.deleted import (
    deleted_note,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import (
    PolicyError,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.fault_domains import (
    admission,
    busy_fault_domains,
    deferral,
    unseen_needed,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.split_sets import (
    outside_vms,
    refusal,
    set_of,
    split_sets,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import (
    AMBIGUOUS,
    DAMAGED,
    DELETED,
    FRESH,
    SERIALISATION_UNITS,
    UNKNOWN_DOMAIN,
    UNREAD,
    UNSEEN_REASONS,
    host_views,
    owes_recover,
    was_read,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    KNOWN_EVENT_TYPES,
    affects,
    resource_name,
)

DEFAULT_POLICY = {
    "approve_user_events": True,
    "approve_freeze_max_seconds": 10,
    "approve_prepared_events": True,
    "leave_to_not_before": [],
    "approve_outside_inventory": False,
    "max_fault_domains_in_maintenance": 1,
    "prepare_configured": True,
    "prepare_event_types": list(KNOWN_EVENT_TYPES),
    "prepare_short_freezes": False,
    "prepare_anyway_seconds": 480,
    "parallel_runs": 1,
    "serialisation_unit": "fault_domain",
}


# ----------------------------------------------------------------------------------------------- plan

def plan_cycle(hosts, policy=None, now=None, target_names=(), remembered_outside=None, host_policies=None):
    """The whole cycle's plan: {hosts: {host: {...}}, approvals, admissions, fault_domains_in_maintenance,
    split_sets, notes}.

    `admissions` says of each Scheduled event of the target whether it was admitted into maintenance,
    deferred by the fault-domain limit, admitted late (its NotBefore is near), or refused (its set is split).
    `target_names` are the VM names of the target's hosts beyond `hosts` (outside an event-driven run's limit,
    remembered by the control node); `remembered_outside` is {set: names} the control node remembers as outside
    the target (vm_memory); `host_policies` is {host: policy} as each host's own variables give it: they must agree
    (`run_policy`), and then they are the policy."""
    policy = _policy(run_policy(host_policies) if host_policies else policy)
    _refuse_unlocked_parallel_runs(hosts, policy)
    now = now or datetime.now(timezone.utc)
    views = host_views(hosts, policy["serialisation_unit"], now)
    by_vm = {}
    for host, view in views.items():
        by_vm.setdefault(resource_name(view["vm_name"]), host)
    plan = dict((host, _empty_plan(view)) for host, view in views.items())
    split = {}
    if not policy["approve_outside_inventory"]:
        split = split_sets(outside_vms(views, target_names), remembered_outside, list(target_names) + list(by_vm))
    refused = dict((h, refusal(set_of(v["domain"]), split[set_of(v["domain"])])) for h, v in views.items()
                   if set_of(v["domain"]) in split)
    busy, doubtful, holders = busy_fault_domains(views, by_vm, policy["approve_outside_inventory"])
    events = _scheduled_events(views, by_vm)
    admitted = _plan_prepares(events, views, plan, by_vm, busy, doubtful, holders, policy, now, refused)
    approvals = _plan_approvals(events, views, plan, by_vm, admitted, policy)
    for host, view in views.items():
        plan[host]["recover"], plan[host]["drained_for"] = _recovers(view, plan[host]["prepare"])
        affected = any(host in a["hosts"] for a in approvals.values())
        plan[host]["saves"] = view["status"] == FRESH and view["holds_vm"]
        plan[host]["save_first"] = plan[host]["saves"] and (bool(plan[host]["prepare"]) or _news(view))
        # A renew of its own before approve/recover, where no first save renews the lock in its call already.
        plan[host]["renew"] = not plan[host]["save_first"] and bool(plan[host]["recover"] or affected)
    return {"hosts": plan, "approvals": approvals, "admissions": dict((e["event_id"], admitted[e["event_id"].upper()])
                                                                      for e, _hosts in events),
            "fault_domains_in_maintenance": sorted(busy), "split_sets": split,
            "notes": _notes(views, plan) + sorted(set(refused.values()))}


def _policy(policy):
    merged = dict(DEFAULT_POLICY)
    merged.update(policy or {})
    unknown = set(merged) - set(DEFAULT_POLICY)
    if unknown:
        raise PolicyError("unknown policy setting %s." % sorted(unknown)[0])
    limit = merged["max_fault_domains_in_maintenance"]
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise PolicyError("max_fault_domains_in_maintenance must be a whole number of at least 1.")
    if not isinstance(merged["prepare_anyway_seconds"], (int, float)) or merged["prepare_anyway_seconds"] < 0:
        raise PolicyError("prepare_anyway_seconds must be a number of seconds, 0 or more.")
    runs = merged["parallel_runs"]
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise PolicyError("parallel_runs must be a whole number of at least 1.")
    if merged["serialisation_unit"] not in SERIALISATION_UNITS:
        raise PolicyError("serialisation_unit must be one of %s." % ", ".join(SERIALISATION_UNITS))
    types = merged["prepare_event_types"]
    if not isinstance(types, (list, tuple)) or not all(isinstance(x, str) and _TYPE_NAME.match(x) for x in types):
        raise PolicyError("prepare_event_types must be a list of event type names (letters, such as Reboot or an "
                          "advisory type Azure serves).")
    return merged


_TYPE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9]{0,63}$")


def run_policy(host_policies):
    """The one policy of a run, from {host: policy} as each host's variables give it (group vars may differ).

    One run applies one policy to every host it plans: its fault-domain limit counts the domains of every set in
    the run, an event may list hosts of two groups, and the split-set rule looks across the run. So settings that
    differ between hosts of one run are refused in one sentence, naming the setting, the hosts and their values, and
    the fix (a run per group: the azure_rm inventory's groups are one per set), instead of the plan taking the first
    host's values for every host (a group's Reboots left to NotBefore would be approved early by another group's
    policy)."""
    given = dict((host, dict(DEFAULT_POLICY, **(policy or {}))) for host, policy in (host_policies or {}).items())
    for key in DEFAULT_POLICY:
        values = {}
        for host in sorted(given):
            values.setdefault(_comparable(given[host][key]), []).append(host)
        if len(values) > 1:
            raise PolicyError(_differ_sentence(key, given, values))
    return dict(given[sorted(given)[0]]) if given else dict(DEFAULT_POLICY)


def _comparable(value):
    """A setting's value as compared between hosts: a list of types in any order is the same list."""
    if isinstance(value, (list, tuple)):
        return ("list",) + tuple(sorted(str(v) for v in value))
    return value


def _differ_sentence(key, given, values):
    variable = "maintenance_cycle_prepare_tasks (given or not)" if key == "prepare_configured" \
        else "maintenance_cycle_" + key
    groups = sorted(values.values(), key=lambda hosts: (-len(hosts), hosts))
    said = "; ".join("%s: %s" % (_hosts_named(hosts), _shown(given[hosts[0]][key])) for hosts in groups)
    return ("%s differs between hosts of this run (%s), and one run plans every host with one policy (its "
            "fault-domain limit and its events span them), so nothing was read, prepared or approved: run a cycle per "
            "group that sets it (-e target=GROUP), or give every host of the target the same value."
            % (variable, said))


def _hosts_named(hosts):
    return ", ".join(hosts[:3]) + (" and %d more" % (len(hosts) - 3) if len(hosts) > 3 else "")


def _shown(value):
    if isinstance(value, (list, tuple)):
        return "[%s]" % ", ".join(str(v) for v in value)
    return str(value).lower() if isinstance(value, bool) else str(value)


def _refuse_unlocked_parallel_runs(hosts, policy):
    """Cycles side by side (the event-driven source's max_parallel_runs) keep apart only through the VM locks: a
    host that takes none (locking off, a Windows VM) would let two cycles admit two fault domains at once."""
    if policy["parallel_runs"] < 2:
        return
    unlocked = sorted(h for h, given in hosts.items() if was_read((given or {}).get("result"))
                      and not (given or {}).get("left_alone")
                      and (not (given or {}).get("lock") or (given or {}).get("lock", {}).get("supported") is False))
    if unlocked:
        raise PolicyError("%s take%s no VM lock (maintenance_cycle_lock_seconds is 0, or Windows VMs), and up to %d "
                          "cycles run side by side (max_parallel_runs), which only the VM locks keep apart: set "
                          "max_parallel_runs to 1 in the rulebook's variables, or turn the locks on."
                          % (", ".join(unlocked[:5]) + (" and %d more" % (len(unlocked) - 5) if len(unlocked) > 5 else ""),
                             "s" if len(unlocked) == 1 else "", policy["parallel_runs"]))


def _empty_plan(view):
    return {"vm_name": view["vm_name"], "status": view["status"], "fault_domain": view["domain"],
            "prepare": [], "late": [], "deferred": [], "refused": [], "approve": [], "waiting": [], "recover": [],
            "drained_for": [],
            "renew": False, "saves": False, "save_first": False}


def _scheduled_events(views, by_vm):
    """Each Scheduled event that lists hosts of the target, once: [(event, [hosts in Resources order])].

    Reads may show an event in two versions (its Resources widened between them, or news that reached one VM
    late): its hosts are those any version lists, so that each must be prepared before the approval (whose
    module refuses a plan that differs from the document it reads)."""
    found = {}
    for view in views.values():
        for event in view["events"]:
            key = event["event_id"].upper()
            if event["event_status"] != "Scheduled":
                continue
            first, hosts = found.get(key, (event, []))
            for name in event["resources"]:
                host = by_vm.get(resource_name(name))
                if host is not None and host not in hosts:
                    hosts.append(host)
            if hosts:
                found[key] = (first, hosts)
    return sorted(found.values(), key=lambda item: (item[0].get("not_before") or "~", item[0]["event_id"].upper()))


def prepare_wanted(event, policy):
    """Whether the policy prepares for this event at all (a type it prepares for, not a short freeze it approves
    without prepare); also what a benchmark counts as owed a prepare."""
    if not policy["prepare_configured"] or event["event_type"] not in policy["prepare_event_types"]:
        return False
    return policy["prepare_short_freezes"] or not _short_freeze(event, policy)


def _plan_prepares(events, views, plan, by_vm, busy, doubtful, holders, policy, now, refused):
    """Admit or defer each event as a whole; returns {event id: "admitted" | "late" | "deferred" | "refused"}."""
    limit = policy["max_fault_domains_in_maintenance"]
    admitted = {}
    for event, hosts in events:
        if any(h in refused for h in hosts):  # its set is split over runs: this run drains nothing in it
            admitted[event["event_id"].upper()] = "refused"
            for host in hosts:
                plan[host]["refused"].append({"event_id": event["event_id"], "reason": refused.get(host, "")})
            continue
        needed = set(views[h]["domain"] for h in hosts) | unseen_needed(event, by_vm, policy)
        certain = set(busy) - doubtful
        key = event["event_id"].upper()
        # busy, if at all, only for this event: its own records, its own outside VMs, its own unseen hosts
        ours = set([key]) | set(("host " + h).upper() for h in hosts)
        own = set(d for d in needed if holders.get(d, set()) <= ours)
        verdict = admission(needed, busy, certain, own, limit, _seconds_left(event, now),
                            policy["prepare_anyway_seconds"])
        admitted[event["event_id"].upper()] = verdict
        # Only an event the limit itself admits lets later events join its fault domains. One that spans more
        # domains than the limit (Azure's choice), or one left to NotBefore, blocks other domains but licenses
        # nothing: another event joining them would take them down on its own, beyond the limit.
        licenses = verdict == "admitted" and (needed <= certain or len(set(busy) | needed) <= limit)
        for domain in needed:
            if verdict != "deferred":
                holders.setdefault(domain, set()).add(key)
            if licenses:
                busy.setdefault(domain, "event %s" % event["event_id"])
                doubtful.discard(domain)
            elif verdict != "deferred" and domain not in busy:
                busy[domain] = "event %s" % event["event_id"]
                doubtful.add(domain)
        for host in hosts:
            if not _needs_prepare(views[host], event, policy):
                continue
            if verdict == "deferred":
                plan[host]["deferred"].append({"event_id": event["event_id"], "reason": deferral(needed, busy, limit)})
            else:
                plan[host]["prepare"].append(event)
                if verdict == "late":
                    plan[host]["late"].append(event["event_id"])
    return admitted


def _needs_prepare(view, event, policy):
    if view["status"] != FRESH or not affects(event, view["vm_name"]) or not prepare_wanted(event, policy):
        return False
    own = view["present"].get(event["event_id"].upper())
    if own is None or not affects(own, view["vm_name"]):
        # Another host's read shows the event (or shows it listing this VM), this host's own read (a moment
        # earlier, or news that reached its VM late) not yet: its write-ahead can only record what its own read
        # shows, and its recover follows its own read (a drain for an event its read does not list it in is
        # owed a recover), so it prepares in a later cycle (the approval waits for it).
        return False
    return _prepare_of(view, event) != PREPARE_DONE


def _prepare_of(view, event):
    return _record_of(view, event).get("prepare")


def _record_of(view, event):
    key = event["event_id"].upper()
    for record in view["records"]:
        if record["event_id"].upper() == key:
            return record
    return {}


def _seconds_left(event, now):
    if not event.get("not_before"):
        return None
    moment = datetime.strptime(event["not_before"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    return (moment - now).total_seconds()


def _plan_approvals(events, views, plan, by_vm, admitted, policy):
    """Fill each leader's approve/waiting lists; returns {event id: {hosts, planned}} of the approvals."""
    approvals = {}
    for event, hosts in events:
        # The leader's own read shows the event: its state then keeps the approval on record (a state is saved
        # from its host's read, and an event that read does not show is not kept in it).
        leaders = [h for h in hosts if views[h]["status"] == FRESH and event["event_id"].upper() in views[h]["present"]]
        if not leaders:
            continue  # nobody of the target can approve it now; the hosts' own status (or the next read) says why
        reason = _approval_refusal(event, hosts, views, plan, by_vm, admitted, policy)
        if reason is None:
            plan[leaders[0]]["approve"].append(event["event_id"])
            approvals[event["event_id"]] = {"hosts": hosts, "planned": _planned(event)}
        elif reason:
            plan[leaders[0]]["waiting"].append({"event_id": event["event_id"], "reason": reason})
    _couple_terminates(views, plan, approvals)
    return approvals


def _couple_terminates(views, plan, approvals):
    """Azure deletes no approved Terminate of a scale set while another Terminate of the set waits unapproved (until
    that one is approved or reaches its NotBefore; with the same NotBefore, both approved or neither deleted early),
    so approving one alone shortens nothing. The set's pending Terminates are approved together, in one cycle, or
    none early: each waits, prepared, saying why."""
    pending, approved = {}, set()
    for view in views.values():
        approved |= view["approved"]
        for event in view["seen"]:
            if event["event_type"] == "Terminate" and event["event_status"] == "Scheduled":
                pending.setdefault(set_of(view["domain"]), set()).add(event["event_id"].upper())
    going = dict((event_id.upper(), event_id) for event_id in approvals)
    for set_name, terminates in sorted(pending.items()):
        waiting = sorted(terminates - approved - set(going))
        for key in sorted(terminates & set(going)):
            if not waiting:
                approvals[going[key]]["coupled"] = set_name  # confirmed together or not at all (confirm_approvals)
                continue
            event_id = going[key]
            del approvals[event_id]
            for host_plan in plan.values():
                if event_id in host_plan["approve"]:
                    host_plan["approve"].remove(event_id)
                    host_plan["waiting"].append({"event_id": event_id, "reason": (
                        "a Terminate of %s is deleted only once every pending Terminate of its set is approved (or "
                        "reaches its NotBefore), and %s cannot be approved now" % (set_name, ", ".join(waiting)))})


def _planned(event):
    """What the approval is decided on; the approve task refuses when the event no longer matches."""
    return {"event_id": event["event_id"], "event_type": event["event_type"], "resources": list(event["resources"])}


# What "left to NotBefore" means, said with it: not final for the event, only for early approval
AT_NOT_BEFORE = ": Azure starts it then, and no cycle approves it early"


def _approval_refusal(event, hosts, views, plan, by_vm, admitted, policy):
    """None to approve now, "" when already approved, else why not (one phrase)."""
    key = event["event_id"].upper()
    if any(key in views[h]["approved"] for h in hosts):
        return ""
    if admitted[key] == "refused":
        return "its set has VMs outside this target, so this run approves nothing in it"
    if not event.get("known_type", True) or not event.get("known_status", True):
        return "unknown EventType or EventStatus"
    if event["event_type"] in policy["leave_to_not_before"]:
        return "policy leaves %s events to NotBefore%s" % (event["event_type"], AT_NOT_BEFORE)
    unseen = [h for h in hosts if views[h]["status"] != FRESH]
    if unseen:
        return "; ".join(("%s was left alone" if views[h]["left_alone"] else UNSEEN_REASONS[views[h]["status"]]) % h
                         for h in unseen)
    outside = [r for r in event["resources"] if resource_name(r) not in by_vm]
    if outside and not policy["approve_outside_inventory"]:
        return "lists VMs outside this play (%s)" % ", ".join(outside)
    if admitted[key] == "deferred":
        return ("affected hosts wait for their fault domain (%s): prepared once the limit leaves room, or late as "
                "NotBefore nears" % ", ".join(hosts))
    if admitted[key] == "late" or any(_record_of(views[h], event).get("late") for h in hosts):
        return "over the fault-domain limit: prepared as NotBefore is near, and left to NotBefore" + AT_NOT_BEFORE
    wanted = prepare_wanted(event, policy)
    unprepared = [h for h in hosts if _prepare_of(views[h], event) != PREPARE_DONE
                  and all(e["event_id"].upper() != key for e in plan[h]["prepare"])]
    if wanted and unprepared:  # an event approved at once too (a user's reboot): prepared in this cycle first
        return "not prepared on %s: approved once every listed host is prepared" % ", ".join(unprepared)
    if _at_once(event, policy):
        return None
    if not policy["approve_prepared_events"]:
        return "policy leaves %s events to NotBefore%s" % (event["event_type"], AT_NOT_BEFORE)
    if not wanted:
        return ("no prepare tasks run for %s events, so it is left to NotBefore%s; with prepare tasks for them it is "
                "approved once every listed host is prepared" % (event["event_type"], AT_NOT_BEFORE))
    return None


def _at_once(event, policy):
    if event.get("event_source") == "User" and policy["approve_user_events"]:
        return True
    return _short_freeze(event, policy)


def _short_freeze(event, policy):
    duration = event.get("duration_in_seconds")
    return event["event_type"] == "Freeze" and duration is not None and 0 <= duration <= policy[
        "approve_freeze_max_seconds"]


def _news(view):
    """Does the document list this host in an event its saved state does not know as listing it? Then the state
    is saved before anything is approved: should the host fail later, the event still gets its recover once gone."""
    if view["status"] != FRESH:
        return False
    known = set(r["event_id"].upper() for r in view["records"] if affects(r, view["vm_name"]))
    return any(e["event_id"].upper() not in known and affects(e, view["vm_name"]) for e in view["events"])


def _recovers(view, preparing):
    """(the records recovered in this cycle, the events the host stays drained for).

    One drain per host, whatever the number of events: the recover tasks undo it (the shipped examples take
    the VM back into its load balancer). So nothing is recovered while the host is still drained for an
    event that lists it, or is prepared again in this cycle: the owed records wait in the state, and are
    recovered together once the last of those events is gone."""
    if view["status"] != FRESH:
        return [], []
    owed, holding = [], []
    for record in view["records"]:
        if owes_recover(record, view["present"].get(record["event_id"].upper()), view["vm_name"]):
            owed.append(record)
        elif record.get("prepare"):
            holding.append(record["event_id"])
    holding += [e["event_id"] for e in preparing if e["event_id"] not in holding]
    if not owed or not holding:
        return owed, []
    return [], holding


def _notes(views, plan):
    notes = []
    for host, view in sorted(views.items()):
        if view["status"] == UNREAD:
            notes.append("%s %s: it holds %s, and no event that lists it is approved."
                         % (host, "was left alone (maintenance_cycle_leave_alone: inside a started event, or "
                                  "without IMDS)" if view["left_alone"] else "could not be read",
                            "its last known fault domain (%s)" % view["domain"]
                            if view["domain"] != UNKNOWN_DOMAIN else "every new fault domain back"))
        elif view["status"] == DAMAGED:
            notes.append("%s has a state file this run cannot trust (see the warning of its read): it is left as it "
                         "is, since it may owe recovers, and the host holds its fault domain. Once you have checked "
                         "that the VM is not drained, move it aside (mv %s %s.damaged) so that the next cycle "
                         "starts afresh." % (host, view["state_path"] or "<state file>",
                                             view["state_path"] or "<state file>"))
        elif view["status"] == DELETED:
            notes.append(deleted_note(host, view["deleting"]))
        elif view["status"] == AMBIGUOUS:
            notes.append("%s shares its VM name %s with another host of the target (another resource group?): "
                         "Resources cannot tell them apart, so it is left alone." % (host, view["vm_name"]))
    for host in sorted(plan):
        if plan[host]["drained_for"]:
            notes.append("%s stays drained for %s: its owed recovers wait until that is gone." % (
                host, ", ".join(plan[host]["drained_for"])))
    loose = sorted(h for h, v in views.items() if v["status"] == FRESH and not v["set_known"]
                   and (plan[h]["prepare"] or plan[h]["deferred"]))
    if loose:
        notes.append("%s: no scale set, availability set or zone is known, so each counts as a fault domain of its "
                     "own; set maintenance_cycle_availability_set for VMs of an availability set."
                     % ", ".join(loose))
    return notes


def confirm_approvals(plan, alive_hosts):
    """After prepare: {host: [planned events]} for approvals whose leader and listed hosts are all alive."""
    alive = set(alive_hosts)
    leaders = dict((event_id, host) for host, host_plan in plan["hosts"].items() for event_id in host_plan["approve"])

    def confirmable(event_id):
        return leaders[event_id] in alive and all(h in alive for h in plan["approvals"][event_id]["hosts"])

    # A set's Terminates planned together go together: one dropped leaves the others to shorten nothing.
    broken = set(plan["approvals"][event_id].get("coupled") for event_id in leaders if not confirmable(event_id))
    broken.discard(None)
    confirmed = dict((host, []) for host in plan["hosts"])
    for event_id, host in leaders.items():
        approval = plan["approvals"][event_id]
        if confirmable(event_id) and approval.get("coupled") not in broken:
            confirmed[host].append(approval["planned"])
    return confirmed
