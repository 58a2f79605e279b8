# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One maintenance cycle across the hosts of a play: who prepares, who approves, who recovers.

Pure functions over the hosts' info-module results, so that the decision is the
same wherever it is taken and can be tested without Ansible. The rules:

- prepare: each Scheduled event that affects a host and was not prepared there
  yet, unless that would put one fault domain too many into maintenance
  (`max_fault_domains_in_maintenance`); such hosts are deferred to a later cycle;
- approve: from one leader per event (the first VM of Resources that is a host of
  the play), once, by policy: user events and short freezes at once, other events
  once prepared on every affected host of the play; never events that list VMs
  outside the play (unless allowed), never types left to NotBefore, never when an
  affected host failed or is deferred;
- recover: each event seen in the previous cycle that affected the host and is gone;
- a host whose IMDS gave no document this cycle (an empty 200) is blind: it
  plans nothing, leads no approval, recovers nothing and keeps its saved state,
  and its saved maintenance still counts against the fault-domain limit. No
  document is no news, never "every event is gone";
- a host that another maintenance run holds (its lease lock, see cycle_lock) is
  blind too, its fault domain counts as in maintenance, and no event that lists
  it is approved by this run;
- a Started event that lists VMs which are not hosts of the play (a rebooting VM
  cannot answer, so it drops out of the play) puts an unseen fault domain into
  maintenance: no other fault domain is brought in while it lasts;
- a host whose cycle failed remembers the events it saw (so that none escapes
  recovery) but records no progress (see `remembered_state`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import next_state
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.events import affects, resource_name

DEFAULT_POLICY = {
    "approve_user_events": True,
    "approve_freeze_max_seconds": 10,
    "approve_prepared_events": True,
    "leave_to_not_before": [],
    "approve_outside_play": False,
    "max_fault_domains_in_maintenance": 1,
    "prepare_configured": True,
}


UNSEEN_DOMAIN = "unseen"  # the fault domain of VMs that are not hosts of the play


class PolicyError(ValueError):
    """A policy or input the cycle cannot work with; one sentence."""


def host_views(results):
    """{host: info result} -> {host: view} with what the policy needs."""
    views = {}
    for host, result in sorted(results.items()):
        if not isinstance(result, dict) or "events" not in result:
            raise PolicyError("host %s has no scheduled_events_info result to plan from." % host)
        this_vm = result.get("this_vm") or {}
        state = result.get("state") or {}
        views[host] = {
            "vm_name": this_vm.get("name") or host,
            "fault_domain": this_vm.get("fault_domain"),
            "events": result["events"],
            "prepared": set(i.upper() for i in state.get("prepared", [])),
            "approved": set(i.upper() for i in state.get("approved", [])),
            "saved_events": state.get("events", []),
            "incarnation": result.get("document_incarnation"),
            "held": bool((result.get("lock") or {}).get("held_by")),
            "blind": result.get("document_available") is False or bool((result.get("lock") or {}).get("held_by")),
        }
    return views


def plan_cycle(results, policy=None):
    """The whole cycle's plan: {host: {prepare, deferred, approve, waiting, recover, ...}}."""
    policy = _policy(policy)
    views = host_views(results)
    by_vm = dict((resource_name(v["vm_name"]), host) for host, v in views.items())
    plan = dict((host, _empty_plan(view)) for host, view in views.items())
    busy = _busy_fault_domains(views)
    _plan_prepares(views, plan, busy, policy["max_fault_domains_in_maintenance"])
    approvals = _plan_approvals(views, plan, by_vm, policy)
    for host, view in views.items():
        plan[host]["recover"] = _gone(view)
    return {"hosts": plan, "approvals": approvals, "fault_domains_in_maintenance": sorted(busy, key=_fd_key)}


def _policy(policy):
    merged = dict(DEFAULT_POLICY)
    merged.update(policy or {})
    unknown = set(merged) - set(DEFAULT_POLICY)
    if unknown:
        raise PolicyError("unknown policy setting %s." % sorted(unknown)[0])
    if not isinstance(merged["max_fault_domains_in_maintenance"], int) or merged["max_fault_domains_in_maintenance"] < 1:
        raise PolicyError("max_fault_domains_in_maintenance must be a whole number of at least 1.")
    return merged


def _empty_plan(view):
    return {"vm_name": view["vm_name"], "fault_domain": view["fault_domain"], "prepare": [], "deferred": [],
            "approve": [], "waiting": [], "recover": []}


def _fd_key(fault_domain):
    if isinstance(fault_domain, int):
        return (0, fault_domain)
    return (1 if fault_domain is None else 2, 0)


def _mine(view):
    return [e for e in view["events"] if affects(e, view["vm_name"])]


def _busy_fault_domains(views):
    """Fault domains with a host prepared (and not yet recovered) or in a Started event."""
    busy = set()
    in_play = set(resource_name(v["vm_name"]) for v in views.values())
    for view in views.values():
        if any(e["event_status"] == "Started" and any(resource_name(r) not in in_play for r in e["resources"])
               for e in view["events"]):
            busy.add(UNSEEN_DOMAIN)
        # A blind host is judged by what it saved last cycle: it may still be in maintenance.
        events = view["saved_events"] if view["blind"] else view["events"]
        present = set(e["event_id"].upper() for e in events)
        started = any(e["event_status"] == "Started" and affects(e, view["vm_name"]) for e in events)
        # Another run works on a held host: it may be bringing that fault domain into maintenance now.
        if started or (view["prepared"] & present) or view["held"]:
            busy.add(view["fault_domain"])
    return busy


def _plan_prepares(views, plan, busy, limit):
    wanted = []
    for host, view in views.items():
        if view["blind"]:  # no document, or another run works on it
            continue
        for event in _mine(view):
            if event["event_status"] == "Scheduled" and event["event_id"].upper() not in view["prepared"]:
                wanted.append((event.get("not_before") or "~", _fd_key(view["fault_domain"]), host, event))
    for _urgency, _domain, host, event in sorted(wanted, key=lambda w: w[:3]):
        domain = views[host]["fault_domain"]
        if domain in busy or len(busy) < limit:
            busy.add(domain)
            plan[host]["prepare"].append(event)
        else:
            plan[host]["deferred"].append({
                "event_id": event["event_id"],
                "reason": "fault domain %s waits: fault domain(s) %s in maintenance (limit %d)"
                          % (domain, ", ".join(str(d) for d in sorted(busy, key=_fd_key)), limit)})


def _plan_approvals(views, plan, by_vm, policy):
    """Fill each leader's approve/waiting lists; returns {event_id: affected hosts} of the approvals."""
    approvals = {}
    seen = set()
    for host, view in sorted(views.items()):
        for event in view["events"]:
            key = event["event_id"].upper()
            if key in seen or event["event_status"] != "Scheduled":
                continue
            seen.add(key)
            affected = [by_vm[resource_name(r)] for r in event["resources"] if resource_name(r) in by_vm]
            leaders = [h for h in affected if not views[h]["blind"]]  # a blind host cannot approve
            if not leaders:
                continue  # no host of this play is listed: not ours to approve
            leader = leaders[0]
            reason = _approval_refusal(event, affected, views, plan, by_vm, policy)
            if reason is None:
                plan[leader]["approve"].append(event["event_id"])
                approvals[event["event_id"]] = affected
            elif reason:
                plan[leader]["waiting"].append({"event_id": event["event_id"], "reason": reason})
    return approvals


def _approval_refusal(event, affected, views, plan, by_vm, policy):
    """None to approve now, "" when already approved, else why not (one phrase)."""
    key = event["event_id"].upper()
    if any(key in views[h]["approved"] for h in affected):
        return ""
    if not event.get("known_type", True) or not event.get("known_status", True):
        return "unknown EventType or EventStatus"
    if event["event_type"] in policy["leave_to_not_before"]:
        return "policy leaves %s events to NotBefore" % event["event_type"]
    held = [h for h in affected if views[h]["held"]]
    if held:
        return "another maintenance run holds %s" % ", ".join(held)
    outside = [r for r in event["resources"] if resource_name(r) not in by_vm]
    if outside and not policy["approve_outside_play"]:
        return "lists VMs outside this play (%s)" % ", ".join(outside)
    deferred = [h for h in affected if any(d["event_id"].upper() == key for d in plan[h]["deferred"])]
    if deferred:
        return "affected hosts wait for their fault domain (%s)" % ", ".join(deferred)
    if _at_once(event, policy):
        return None
    if not policy["approve_prepared_events"]:
        return "policy leaves %s events to NotBefore" % event["event_type"]
    if not policy["prepare_configured"]:
        return "no prepare tasks are configured, so it is left to NotBefore"
    unprepared = [h for h in affected if key not in views[h]["prepared"]
                  and all(e["event_id"].upper() != key for e in plan[h]["prepare"])]
    if unprepared:
        return "not prepared on %s" % ", ".join(unprepared)
    return None


def _at_once(event, policy):
    if event.get("event_source") == "User" and policy["approve_user_events"]:
        return True
    duration = event.get("duration_in_seconds")
    limit = policy["approve_freeze_max_seconds"]
    return event["event_type"] == "Freeze" and duration is not None and 0 <= duration <= limit


def _gone(view):
    """Events of the previous cycle that affected this host and left the document."""
    if view["blind"]:
        return []
    present = set(e["event_id"].upper() for e in view["events"])
    return [e for e in view["saved_events"]
            if e["event_id"].upper() not in present and affects(e, view["vm_name"])]


def confirm_approvals(plan, alive_hosts):
    """After prepare: approve only events whose affected hosts of the play are all still alive.

    A host whose prepare failed is no longer alive in the play; its events are never approved.
    Returns {host: [event ids]} for every host of the plan.
    """
    alive = set(alive_hosts)
    confirmed = dict((host, []) for host in plan["hosts"])
    for host, host_plan in plan["hosts"].items():
        for event_id in host_plan["approve"]:
            if host in alive and all(h in alive for h in plan["approvals"][event_id]):
                confirmed[host].append(event_id)
    return confirmed


def remembered_state(result):
    """The state a host saves when its cycle failed: no progress (prepared, approved and the incarnation
    stay as they were), but every event seen is remembered, so that one which vanishes before the next
    successful cycle still gets its recover."""
    state = result.get("state") or {}
    seen = dict((e["event_id"].upper(), e) for e in state.get("events", []))
    if result.get("document_available") is not False:
        seen.update((e["event_id"].upper(), e) for e in result["events"])
    return next_state(state.get("document_incarnation"), list(seen.values()), state.get("prepared", []),
                      state.get("approved", []))


def cycle_state(result, prepared_now, approved_now):
    """The state a host saves after a successful cycle; a blind host keeps the one it had."""
    state = result.get("state") or {}
    if result.get("document_available") is False and state:
        return state
    prepared = list(state.get("prepared", [])) + list(prepared_now)
    approved = list(state.get("approved", [])) + list(approved_now)
    return next_state(result.get("document_incarnation"), result["events"], prepared, approved)
