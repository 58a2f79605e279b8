# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every decision of a maintenance cycle over the hosts of a target: pure functions, no I/O.

The role is a linear shell around these functions (through the `cycle` filters);
the safety-invariant tests drive the very same functions against the simulator.
Rules (the README's "Safety rules" states them for users):

- The plan covers every host of the target, read or not. What it cannot see
  counts as busy, never as free: a host without a fresh read, held by another
  run, without a document (an empty 200), with a state file this code cannot
  trust (damaged, or of a newer version: kept as it is for a person), or whose
  VM name another host of the target has (read now or remembered) plans
  nothing, approves nothing, and holds its fault domain (a host whose domain is
  unknown blocks every new fault domain).
- A fault domain is keyed by what it really is (`domain_key`): scale set or
  availability set, zone, and fault-domain number.
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

from datetime import datetime, timezone

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import (
    PREPARE_DONE,
    PREPARE_STARTED,
    STATE_VERSION,
    empty_state,
    event_record,
    state_problem,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.events import (
    KNOWN_EVENT_TYPES,
    affects,
    resource_name,
)

DEFAULT_POLICY = {
    "approve_user_events": True,
    "approve_freeze_max_seconds": 10,
    "approve_prepared_events": True,
    "leave_to_not_before": [],
    "approve_outside_play": False,
    "max_fault_domains_in_maintenance": 1,
    "prepare_configured": True,
    "prepare_event_types": list(KNOWN_EVENT_TYPES),
    "prepare_short_freezes": False,
    "prepare_anyway_seconds": 480,
    "parallel_runs": 1,
}

# Host statuses: only a FRESH host is seen well enough to plan for.
FRESH, BLIND, HELD, UNREAD, AMBIGUOUS, DAMAGED = "fresh", "blind", "held", "unread", "ambiguous", "damaged"
# Every status but FRESH holds its host's fault domain: what the plan cannot see or trust is busy, never free.
UNSEEN_STATUSES = (BLIND, HELD, UNREAD, AMBIGUOUS, DAMAGED)
UNSEEN_DOMAIN = "unseen"  # the fault domain of listed VMs that are not hosts of the target
UNKNOWN_DOMAIN = "unknown"  # the fault domain of a host never read: blocks every new fault domain


# Why an event that lists a host the plan cannot see waits (one phrase per host).
UNSEEN_REASONS = {HELD: "another maintenance run holds %s", UNREAD: "%s could not be read",
                  BLIND: "%s has no Scheduled Events document yet", AMBIGUOUS: "%s shares its VM name with another host",
                  DAMAGED: "%s has a state file this run cannot trust"}


class PolicyError(ValueError):
    """A policy or input the cycle cannot work with; one sentence."""


# ---------------------------------------------------------------------------------------------- views

def domain_key(this_vm, availability_set=""):
    """The fault domain a VM is in, as one string.

    Fault-domain numbers only mean something inside one set: a scale set (IMDS names it), an availability
    set (IMDS does not: the inventory says it, `maintenance_cycle_availability_set`), or, for a VM in no
    known set, its zone if it is zonal (zones are the failure unit; zonal VMs all report fault domain 0),
    else the VM alone, which never shares a fault domain with another VM.
    """
    this_vm = this_vm or {}
    zone = this_vm.get("zone") or ""
    number = this_vm.get("fault_domain")
    fault_domain = "fault domain %s" % ("?" if number is None else number)
    if this_vm.get("vm_scale_set_name"):
        parts = ["scale set %s" % this_vm["vm_scale_set_name"], "zone %s" % zone if zone else "", fault_domain]
    elif availability_set:
        parts = ["availability set %s" % availability_set, fault_domain]
    elif zone:
        parts = ["zone %s" % zone]
    else:
        parts = ["vm %s" % (this_vm.get("name") or "?")]
    return " / ".join(p for p in parts if p)


def host_views(hosts):
    """{host: {result, lock, availability_set, last_vm, left_alone}} -> {host: view}.

    `result` is the host's scheduled_events_info result of this run (None, failed or unreachable when it
    could not be read); `lock` is the `lock` that scheduled_events_lock returned before that read (None when
    no lock is taken); `last_vm` is its `this_vm` from an earlier read (a watch keeps it), so that a host
    without a fresh read still holds its last known fault domain; `left_alone` marks a host the run did not
    contact (maintenance_cycle_leave_alone): unread, whatever result it carries.
    """
    views = {}
    for host, given in sorted(hosts.items()):
        given = given or {}
        result = given.get("result")
        # A failed read may still have told which VM it is (the compute metadata came first).
        last_vm = (result.get("this_vm") if isinstance(result, dict) else None) or given.get("last_vm")
        read = was_read(result) and not given.get("left_alone")
        views[host] = _view(host, result if read else None, given.get("lock") or {},
                            given.get("availability_set") or "", last_vm)
        views[host]["left_alone"] = bool(given.get("left_alone"))
    _mark_ambiguous(views)
    for view in views.values():  # the document's events by id (ambiguity may have emptied a view's events)
        view["present"] = dict((e["event_id"].upper(), e) for e in view["events"])
    return views


def was_read(result):
    """Whether a scheduled_events_info result is a read the plan can use."""
    return (isinstance(result, dict) and not result.get("failed") and not result.get("unreachable")
            and not result.get("skipped") and isinstance(result.get("events"), list))


def _view(host, result, lock, availability_set, last_vm):
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
    known = bool(this_vm.get("name") or this_vm.get("fault_domain") is not None)
    valid = state_problem(state) is None  # a state this code cannot trust plans as no state
    return {
        "host": host,
        "status": status,
        "vm_name": this_vm.get("name") or host,
        "name_known": bool(this_vm.get("name")),
        "state_path": (result or {}).get("state_path") or "",
        "domain": domain_key(this_vm, availability_set) if known else UNKNOWN_DOMAIN,
        "set_known": bool(this_vm.get("vm_scale_set_name") or availability_set or this_vm.get("zone")),
        "events": result["events"] if status == FRESH else [],
        "windows": (result or {}).get("transport") == "win_uri",  # its tasks run on the controller (win_uri)
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
                if view["status"] in (FRESH, BLIND):
                    view["status"] = AMBIGUOUS


def _owes_recover(record, current, vm_name):
    """Is a recover owed for a saved record, given the event's current version (None when gone)?"""
    if current is None:
        return bool(record.get("prepare")) or affects(record, vm_name)
    return bool(record.get("prepare")) and not affects(current, vm_name)


# ----------------------------------------------------------------------------------------------- plan

def plan_cycle(hosts, policy=None, now=None):
    """The whole cycle's plan: {hosts: {host: {...}}, approvals, admissions, fault_domains_in_maintenance, notes}.

    `admissions` says of each Scheduled event of the target whether it was admitted into maintenance,
    deferred by the fault-domain limit, or admitted late (its NotBefore is near)."""
    policy = _policy(policy)
    _refuse_unlocked_parallel_runs(hosts, policy)
    now = now or datetime.now(timezone.utc)
    views = host_views(hosts)
    by_vm = {}
    for host, view in views.items():
        by_vm.setdefault(resource_name(view["vm_name"]), host)
    plan = dict((host, _empty_plan(view)) for host, view in views.items())
    busy, doubtful, holders = _busy_fault_domains(views, by_vm, policy["approve_outside_play"])
    events = _scheduled_events(views, by_vm)
    admitted = _plan_prepares(events, views, plan, by_vm, busy, doubtful, holders, policy, now)
    approvals = _plan_approvals(events, views, plan, by_vm, admitted, policy)
    for host, view in views.items():
        plan[host]["recover"], plan[host]["drained_for"] = _recovers(view, plan[host]["prepare"])
        affected = any(host in a["hosts"] for a in approvals.values())
        plan[host]["saves"] = view["status"] == FRESH and view["holds_vm"]
        plan[host]["save_first"] = plan[host]["saves"] and (bool(plan[host]["prepare"]) or _news(view))
        # Write-ahead of an approval: scheduled_events_approve records it itself on Linux VMs; on Windows VMs it
        # runs on the controller, so the role saves the ids just before the POST.
        plan[host]["records_approval"] = ("" if not plan[host]["saves"] else "role" if view["windows"] else "module")
        # A renew of its own before approve/recover, where no first save renews the lock in its call already.
        plan[host]["renew"] = not plan[host]["save_first"] and bool(plan[host]["recover"] or affected)
    return {"hosts": plan, "approvals": approvals, "admissions": dict((e["event_id"], admitted[e["event_id"].upper()])
                                                                      for e, _hosts in events),
            "fault_domains_in_maintenance": sorted(busy),
            "notes": _notes(views, plan) + _split_note(views, by_vm, policy)}


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
    return merged


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
            "prepare": [], "late": [], "deferred": [], "approve": [], "waiting": [], "recover": [], "drained_for": [],
            "renew": False, "saves": False, "save_first": False, "records_approval": ""}


def _busy_fault_domains(views, by_vm, outside_is_free=False):
    """({fault domain: why it is in maintenance}, the domains only maybe in maintenance) before this cycle.

    A domain held only by hosts the plan cannot see may or may not be in maintenance: it blocks other
    domains, but never lets more hosts join it as if it certainly were."""
    busy, certain, holders = {}, set(), {}

    def hold(domain, why, surely, event_id=None):
        busy.setdefault(domain, why)
        holders.setdefault(domain, set()).add(event_id.upper() if event_id else None)
        if surely:
            certain.add(domain)

    for view in views.values():
        if view["status"] in UNSEEN_STATUSES:
            hold(view["domain"], "%s is %s" % (view["host"], view["status"]), False, "host " + view["host"])
        for record in view["records"]:
            if record.get("prepare"):
                # Only a drain done for an event still under way licenses other events to join its domain: not
                # one merely begun (written ahead: the run may have died before the drain), one prepared late
                # (over the limit, as NotBefore was near), nor one owed a recover (which may already have run,
                # in a run that died before it saved).
                ongoing = not _owes_recover(record, view["present"].get(record["event_id"].upper()), view["vm_name"])
                hold(view["domain"], "%s prepared for %s" % (view["host"], record["event_id"]),
                     ongoing and record["prepare"] == PREPARE_DONE and not record.get("late"), record["event_id"])
            elif (view["status"] == BLIND and record["event_status"] != "Scheduled"
                  and affects(record, view["vm_name"])):
                why = "%s was in %s event %s" % (view["host"], record["event_status"], record["event_id"])
                hold(view["domain"], why, False, record["event_id"])
        # A Started event puts every VM it lists into maintenance; so does one of a status this code does not
        # know (it may be one): only Scheduled is known not to have begun.
        for event in view["seen"]:
            if event["event_status"] == "Scheduled" and event.get("known_status", True):
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
                hold(domain, "%s is in %s event %s" % (name, event["event_status"], event["event_id"]), False,
                     event["event_id"])
    return busy, set(busy) - certain, holders


def _scheduled_events(views, by_vm):
    """Each Scheduled event that lists hosts of the target, once: [(event, [hosts in Resources order])]."""
    found = {}
    for view in views.values():
        for event in view["events"]:
            key = event["event_id"].upper()
            if event["event_status"] != "Scheduled" or key in found:
                continue
            hosts = []
            for name in event["resources"]:
                host = by_vm.get(resource_name(name))
                if host is not None and host not in hosts:
                    hosts.append(host)
            if hosts:
                found[key] = (event, hosts)
    return sorted(found.values(), key=lambda item: (item[0].get("not_before") or "~", item[0]["event_id"].upper()))


def prepare_wanted(event, policy):
    """Whether the policy prepares for this event at all (a type it prepares for, not a short freeze it approves
    without prepare); also what a benchmark counts as owed a prepare."""
    if not policy["prepare_configured"] or event["event_type"] not in policy["prepare_event_types"]:
        return False
    return policy["prepare_short_freezes"] or not _short_freeze(event, policy)


def _plan_prepares(events, views, plan, by_vm, busy, doubtful, holders, policy, now):
    """Admit or defer each event as a whole; returns {event id: "admitted" | "late" | "deferred"}."""
    limit = policy["max_fault_domains_in_maintenance"]
    admitted = {}
    for event, hosts in events:
        needed = set(views[h]["domain"] for h in hosts) | _unseen_needed(event, by_vm, policy)
        certain = set(busy) - doubtful
        key = event["event_id"].upper()
        # busy, if at all, only for this event: its own records, its own outside VMs, its own unseen hosts
        ours = set([key]) | set(("host " + h).upper() for h in hosts)
        own = set(d for d in needed if holders.get(d, set()) <= ours)
        verdict = _admission(needed, busy, certain, own, limit, _seconds_left(event, now),
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
                plan[host]["deferred"].append({"event_id": event["event_id"], "reason": _deferral(needed, busy, limit)})
            else:
                plan[host]["prepare"].append(event)
                if verdict == "late":
                    plan[host]["late"].append(event["event_id"])
    return admitted


def _unseen_needed(event, by_vm, policy):
    """An event that lists VMs outside this run takes the unseen domain with it (see _busy_fault_domains)."""
    if policy["approve_outside_play"]:
        return set()
    return set([UNSEEN_DOMAIN]) if any(resource_name(r) not in by_vm for r in event["resources"]) else set()


def _admission(needed, busy, certain, own, limit, seconds_left, anyway_seconds):
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


def _deferral(needed, busy, limit):
    waiting = ", ".join(sorted(needed - set(busy)))
    return "%s waits: %s in maintenance (limit %d)" % (waiting, "; ".join("%s (%s)" % (d, busy[d]) for d in sorted(busy)),
                                                       limit)


def _needs_prepare(view, event, policy):
    if view["status"] != FRESH or not affects(event, view["vm_name"]) or not prepare_wanted(event, policy):
        return False
    if event["event_id"].upper() not in view["present"]:
        # Another host's read shows the event, this host's own read (a moment earlier) not yet: its write-ahead
        # can only record what its own read shows, so it prepares in the next cycle (the approval waits for it).
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
    return approvals


def _planned(event):
    """What the approval is decided on; the approve task refuses when the event no longer matches."""
    return {"event_id": event["event_id"], "event_type": event["event_type"], "resources": list(event["resources"])}


def _approval_refusal(event, hosts, views, plan, by_vm, admitted, policy):
    """None to approve now, "" when already approved, else why not (one phrase)."""
    key = event["event_id"].upper()
    if any(key in views[h]["approved"] for h in hosts):
        return ""
    if not event.get("known_type", True) or not event.get("known_status", True):
        return "unknown EventType or EventStatus"
    if event["event_type"] in policy["leave_to_not_before"]:
        return "policy leaves %s events to NotBefore" % event["event_type"]
    unseen = [h for h in hosts if views[h]["status"] != FRESH]
    if unseen:
        return "; ".join(("%s was left alone" if views[h]["left_alone"] else UNSEEN_REASONS[views[h]["status"]]) % h
                         for h in unseen)
    outside = [r for r in event["resources"] if resource_name(r) not in by_vm]
    if outside and not policy["approve_outside_play"]:
        return "lists VMs outside this play (%s)" % ", ".join(outside)
    if admitted[key] == "deferred":
        return "affected hosts wait for their fault domain (%s)" % ", ".join(hosts)
    if admitted[key] == "late" or any(_record_of(views[h], event).get("late") for h in hosts):
        return "over the fault-domain limit: prepared as NotBefore is near, and left to NotBefore"
    wanted = prepare_wanted(event, policy)
    unprepared = [h for h in hosts if _prepare_of(views[h], event) != PREPARE_DONE
                  and all(e["event_id"].upper() != key for e in plan[h]["prepare"])]
    if wanted and unprepared:  # an event approved at once too (a user's reboot): prepared in this cycle first
        return "not prepared on %s" % ", ".join(unprepared)
    if _at_once(event, policy):
        return None
    if not policy["approve_prepared_events"]:
        return "policy leaves %s events to NotBefore" % event["event_type"]
    if not wanted:
        return "no prepare tasks run for %s events, so it is left to NotBefore" % event["event_type"]
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
        if _owes_recover(record, view["present"].get(record["event_id"].upper()), view["vm_name"]):
            owed.append(record)
        elif record.get("prepare"):
            holding.append(record["event_id"])
    holding += [e["event_id"] for e in preparing if e["event_id"] not in holding]
    if not owed or not holding:
        return owed, []
    return [], holding


def _split_note(views, by_vm, policy):
    """Say it loudly when the run's sets have VMs it does not manage: another run may drain them, and this run sees
    that only while an event lists them (between such an event's end and the other run's recover it cannot)."""
    if policy["approve_outside_play"]:
        return []
    outside = sorted(set(name for view in views.values() for event in view["seen"] for name in event["resources"]
                         if by_vm.get(resource_name(name)) is None))
    if not outside:
        return []
    return ["Events of this run's sets list VMs outside it (%s%s): if another run manages them (a set split over "
            "two runs), their fault domains count as in maintenance while those events are listed, but this run "
            "cannot see their drains after that; run one target per set, or set "
            "maintenance_cycle_approve_outside_inventory if nothing else manages them."
            % (", ".join(outside[:5]), " and %d more" % (len(outside) - 5) if len(outside) > 5 else "")]


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
    confirmed = dict((host, []) for host in plan["hosts"])
    for host, host_plan in plan["hosts"].items():
        for event_id in host_plan["approve"]:
            approval = plan["approvals"][event_id]
            if host in alive and all(h in alive for h in approval["hosts"]):
                confirmed[host].append(approval["planned"])
    return confirmed


# ---------------------------------------------------------------------------------------------- state

# The steps of a cycle at which a host saves its state (the role's save points, in order).
BEFORE_PREPARE, PREPARED, APPROVING, AFTER_RECOVER = "before_prepare", "prepared", "approving", "after_recover"
SAVE_STEPS = (BEFORE_PREPARE, PREPARED, APPROVING, AFTER_RECOVER)


def state_for_step(result, host_plan, step, approved_now=()):
    """The state a host saves at a step of its cycle, from its read (`result`) and its part of the plan.

    before_prepare: the events about to be prepared are recorded as begun (write-ahead: a run killed or a host
    lost during the prepare tasks still owes their recover); prepared: they are done, and news is on record
    before anything is approved; approving: the ids about to be sent, on record before the POST (Windows VMs; on
    Linux VMs scheduled_events_approve records them itself, under the lock); after_recover: what was approved,
    and the recovers that ran, released."""
    prepared = [e["event_id"] for e in host_plan.get("prepare") or []]
    late = host_plan.get("late") or []
    if step == BEFORE_PREPARE:
        return state_after(result, prepared, failed=True, late=late)
    if step == PREPARED:
        return state_after(result, prepared, late=late)
    if step == APPROVING:  # where the approve module cannot record its approval itself (Windows VMs)
        return state_after(result, prepared, approved_now, late=late)
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
        if key not in present and key not in recovered and _owes_recover(record, None, vm_name):
            records.append(record)
    approved = set(i for i in list(saved["approved"]) + list(approved_now) if i.upper() in present)
    return {"version": STATE_VERSION, "document_incarnation": result.get("document_incarnation"),
            "events": sorted(records, key=lambda r: r["event_id"].upper()),
            "approved": sorted(approved, key=lambda i: i.upper())}


def run_name(controller, token, now, awx_job_id=None):
    """The owner name of this run's locks: unique per run, and telling a person which run it is."""
    name = "%s run %s %s" % (controller or "controller", token, now.astimezone(timezone.utc).isoformat(
        timespec="seconds").replace("+00:00", "Z"))
    return name + (" AWX job %s" % awx_job_id if awx_job_id not in (None, "") else "")


# ---------------------------------------------------------------------------------------------- the watch
# playbooks/watch.yml runs a cycle per round on the hosts whose document changed. Each host keeps a "book"
# between rounds (plain data in a host fact); times are seconds since the epoch.

DEFAULT_WATCH = {"watch_seconds": 600.0, "round_seconds": 30.0, "poll_interval": 1.0, "unread_seconds": 900.0,
                 "quiet_seconds": 300.0, "stop_when_quiet": False}


def watch_settings(given):
    """The watch's settings, checked: positive numbers of seconds (quiet_seconds may be 0); PolicyError."""
    settings = dict(DEFAULT_WATCH)
    settings.update(dict((k, v) for k, v in (given or {}).items() if v is not None))
    unknown = set(settings) - set(DEFAULT_WATCH)
    if unknown:
        raise PolicyError("unknown watch setting %s." % sorted(unknown)[0])
    for name in DEFAULT_WATCH:
        if name == "stop_when_quiet":
            continue
        try:
            settings[name] = float(settings[name])
        except (TypeError, ValueError):
            settings[name] = float("nan")
        least_ok = name == "quiet_seconds"
        if not (settings[name] > 0 or (least_ok and settings[name] == 0)):
            variable = name if name.startswith("watch_") else "watch_" + name  # as the playbook names it
            raise PolicyError("%s must be a %s number of seconds, not %r." % (
                variable, "non-negative" if least_ok else "positive", (given or {}).get(name)))
    settings["stop_when_quiet"] = _truthy(settings["stop_when_quiet"])
    return settings


def _truthy(value):
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def watch_start(settings, now):
    """A host's book when the watch begins: no document yet (the first round reads without waiting)."""
    return {"deadline": now + settings["watch_seconds"], "since": None, "read_at": now, "seen_events": False,
            "quiet_since": None}


def watch_wait_seconds(book, settings, now):
    """How long this round may wait for the document to change: a round, or what is left of the watch."""
    return max(0.0, min(settings["round_seconds"], book["deadline"] - now))


def watch_unread(book, settings, now):
    """(seconds since the host was last read, whether that is longer than the watch tolerates)."""
    seconds = now - book["read_at"]
    return seconds, seconds > settings["unread_seconds"]


def watch_after_round(book, result, now):
    """The book after a round that read `result` (the freshest read of the round: the cycle's own, if one ran).

    Quiet since when: no events left (a cycle that ran has recovered and saved by now). Walks pause between
    fault domains, so the watch stops only after a quiet stretch."""
    events = result.get("events") or []
    quiet_since = None if events else (book["quiet_since"] if book["quiet_since"] is not None else now)
    return dict(book, since=result.get("document_incarnation"), read_at=now,
                seen_events=bool(book["seen_events"] or events), quiet_since=quiet_since)


def watch_done(books, hosts_in_target, settings, now):
    """Whether the watch ends: its time is up, or (stop_when_quiet) every host of the target is in this round,
    some saw events, and all have been quiet for quiet_seconds. A host out of the round (unread or failed)
    may have work, so the watch is not quiet without it."""
    if not books:
        return False  # no host in the round: the next round (or the deadline) decides
    if now >= min(b["deadline"] for b in books):
        return True
    if not settings["stop_when_quiet"] or len(books) != hosts_in_target:
        return False
    if not any(b["seen_events"] for b in books) or any(b["quiet_since"] is None for b in books):
        return False
    return max(b["quiet_since"] for b in books) <= now - settings["quiet_seconds"]
