# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller's Prometheus metrics (docs/reference/metrics.md): what the maintenance cycles did, counted across runs.

The scheduled_events_history callback tallies one playbook run (RunTally) from its task results and, at
the end of the run, adds it to the counters kept in a JSON file next to the textfile (add_run), then writes
both. Counters must survive runs, since every cycle is a process of its own; a textfile collector
convention for batch jobs. No label carries an event id or a VM name: the way of running (4 values), an
approval's result (3) and a run's result (2) are the only labels, so the series stay bounded however large
the fleet. Pure: the callback does the file work.
"""

from __future__ import annotations

import copy
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_records import TRIGGERS
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.prometheus_text import (
    PREFIX,
    Family,
    histogram_samples,
)

VERSION = 1
WAYS = TRIGGERS + ("other",)
APPROVAL_RESULTS = ("approved", "started", "failed")
RUN_RESULTS = ("ok", "failed")
# Seconds from the first read that showed an event to the start of a prepare for it: a relay-triggered cycle
# takes seconds, a schedule minutes, a walk of several fault domains up to hours.
REACTION_BUCKETS = (1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 900.0, 1800.0, 3600.0)
FIRST_SEEN_MAX_AGE_S = 2 * 24 * 3600.0   # an event is long gone by then; the memory stays small


@dataclass
class RunTally:
    """What one playbook run did, as the callback saw it."""
    trigger: str = "schedule"
    plans: int = 0                                          # cycles planned (one plan per cycle)
    first_seen: Dict[str, float] = field(default_factory=dict)   # event id -> earliest read in this run showing it
    prepares: List[Tuple[str, str, float]] = field(default_factory=list)   # (event id, host, when it began)
    recovers: List[Tuple[str, str]] = field(default_factory=list)          # (event id, host)
    approvals: Dict[str, int] = field(default_factory=lambda: dict.fromkeys(APPROVAL_RESULTS, 0))
    fault_domains_in_maintenance: Optional[int] = None     # the run's last plan's
    failed_hosts: Set[str] = field(default_factory=set)    # failed or unreachable at the end of the run

    def saw(self, event_id, at):
        # type: (str, float) -> None
        key = event_id.upper()
        self.first_seen[key] = min(at, self.first_seen.get(key, at))


@dataclass
class Reaction:
    counts: List[int] = field(default_factory=lambda: [0] * (len(REACTION_BUCKETS) + 1))
    total: float = 0.0

    def observe(self, seconds):
        # type: (float) -> None
        index = next((i for i, bound in enumerate(REACTION_BUCKETS) if seconds <= bound), len(REACTION_BUCKETS))
        self.counts[index] += 1
        self.total += seconds


@dataclass
class Counters:
    """The counters across runs: the JSON file beside the textfile."""
    version: int = VERSION
    runs: Dict[str, int] = field(default_factory=dict)          # "<way>/<result>"
    cycles: Dict[str, int] = field(default_factory=dict)        # way
    prepares: Dict[str, int] = field(default_factory=dict)      # way
    recovers: Dict[str, int] = field(default_factory=dict)      # way
    recover_failures: Dict[str, int] = field(default_factory=dict)   # way
    approvals: Dict[str, int] = field(default_factory=dict)     # result
    reaction: Dict[str, Reaction] = field(default_factory=dict)   # way
    first_seen: Dict[str, float] = field(default_factory=dict)  # event id -> first read showing it, any run
    fault_domains_in_maintenance: int = 0
    last_run_at: float = 0.0


def load_counters(text):
    # type: (Optional[str]) -> Tuple[Counters, str]
    """(counters, problem): a missing file is fresh counters; a file this code cannot read is fresh counters
    and a one-sentence problem (counters restart at 0, which Prometheus reads as a counter reset)."""
    if not text:
        return Counters(), ""
    try:
        data = json.loads(text)
        if data.get("version") != VERSION:
            raise ValueError("version %r" % data.get("version"))
        reaction = {way: Reaction([int(c) for c in r["counts"]], float(r["total"]))
                    for way, r in data.get("reaction", {}).items()}
        if any(len(r.counts) != len(REACTION_BUCKETS) + 1 for r in reaction.values()):
            raise ValueError("reaction buckets other than this version's")
        counters = Counters(**dict(data, reaction=reaction))
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return Counters(), "the metrics counters file is not one this collection wrote (%s); counting from 0." % exc
    return counters, ""


def counters_text(counters):
    # type: (Counters) -> str
    return json.dumps(asdict(counters), sort_keys=True) + "\n"


def _bump(table, key, by=1):
    table[key] = table.get(key, 0) + by


def add_run(counters, tally, now):
    # type: (Counters, RunTally, float) -> Counters
    """The counters with one more run in (a new object; the old one is left as it was)."""
    out = copy.deepcopy(counters)
    way = tally.trigger if tally.trigger in WAYS else "other"
    _bump(out.runs, "%s/%s" % (way, "failed" if tally.failed_hosts else "ok"))
    _bump(out.cycles, way, tally.plans)
    for event_id, at in tally.first_seen.items():
        out.first_seen[event_id] = min(at, out.first_seen.get(event_id, at))
    for event_id, _host, began in tally.prepares:
        _bump(out.prepares, way)
        seen = out.first_seen.get(event_id.upper())
        if seen is not None:
            out.reaction.setdefault(way, Reaction()).observe(max(0.0, began - seen))
    _bump(out.recovers, way, len(tally.recovers))
    _bump(out.recover_failures, way, sum(1 for _e, host in tally.recovers if host in tally.failed_hosts))
    for result, count in tally.approvals.items():
        _bump(out.approvals, result, count)
    if tally.fault_domains_in_maintenance is not None:
        out.fault_domains_in_maintenance = tally.fault_domains_in_maintenance
    out.first_seen = {e: t for e, t in out.first_seen.items() if now - t <= FIRST_SEEN_MAX_AGE_S}
    out.last_run_at = now
    return out


def controller_families(counters):
    # type: (Counters) -> List[Family]
    """The textfile's families; every label combination is written (0 when none)."""
    runs = Family(PREFIX + "cycle_runs_total", "counter", "Playbook runs that captured Scheduled Events results, by "
                  "way of running and result (failed: a host failed or was unreachable).")
    for way in WAYS:
        for result in RUN_RESULTS:
            runs.add(counters.runs.get("%s/%s" % (way, result), 0), trigger=way, result=result)
    families = [runs]
    for name, table, help_text in (
            ("cycles_total", counters.cycles, "Maintenance cycles planned (one per cycle run)."),
            ("prepares_total", counters.prepares, "Prepares begun, one per VM and event."),
            ("recovers_total", counters.recovers, "Recovers begun, one per VM and event."),
            ("recover_failures_total", counters.recover_failures, "Recovers begun on a VM that then failed or was "
                                                                  "unreachable in the same run.")):
        family = Family(PREFIX + name, "counter", help_text + " By way of running.")
        for way in WAYS:
            family.add(table.get(way, 0), trigger=way)
        families.append(family)
    approvals = Family(PREFIX + "approvals_total", "counter", "Event ids sent as StartRequests, by result (approved; "
                       "started: seen starting by wait_for_start; failed: approve tasks that failed).")
    for result in APPROVAL_RESULTS:
        approvals.add(counters.approvals.get(result, 0), result=result)
    reaction = Family(PREFIX + "reaction_seconds", "histogram", "Seconds from the first read that showed an event "
                      "(any run on this controller) to the start of a prepare for it, per VM; by way of running.")
    for way in WAYS:
        state = counters.reaction.get(way, Reaction())
        reaction.samples += histogram_samples({"trigger": way}, REACTION_BUCKETS, state.counts, state.total)
    families += [
        approvals, reaction,
        Family(PREFIX + "fault_domains_in_maintenance", "gauge", "Fault domains (of all sets) the last cycle "
               "counted as in maintenance.").add(counters.fault_domains_in_maintenance),
        Family(PREFIX + "last_run_timestamp_seconds", "gauge", "Unix time the last captured run ended.")
        .add(counters.last_run_at),
    ]
    return families


def epoch_of(utc_iso):
    # type: (Any) -> Optional[float]
    """A record's observed_at (ISO 8601, Z) as Unix time; None when it is not one."""
    if not isinstance(utc_iso, str):
        return None
    try:
        return datetime.fromisoformat(utc_iso.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def tally_record(tally, record, now):
    # type: (RunTally, Dict[str, Any], float) -> None
    """Count one history record the callback wrote (an observation, an approval, an action)."""
    kind = record.get("record", "observation")
    if kind == "observation":
        at = epoch_of(record.get("observed_at")) or now
        for event in record.get("events") or []:
            if isinstance(event, dict) and isinstance(event.get("EventId"), str) and event["EventId"]:
                tally.saw(event["EventId"], at)
    elif kind == "approval":
        for result in (record.get("results") or {}).values():
            key = result if result in APPROVAL_RESULTS else "approved"
            tally.approvals[key] = tally.approvals.get(key, 0) + 1
    elif kind == "action":
        (event_id,) = record["event_ids"]
        if record["action"] == "prepare":
            tally.prepares.append((event_id, record["host"], epoch_of(record.get("observed_at")) or now))
        else:
            tally.recovers.append((event_id, record["host"]))


def tally_plan(tally, plan):
    # type: (RunTally, Any) -> None
    """Count a cycle's plan (the role's maintenance_cycle_plan fact, set once per cycle)."""
    tally.plans += 1
    domains = plan.get("fault_domains_in_maintenance") if isinstance(plan, dict) else None
    tally.fault_domains_in_maintenance = len(domains) if isinstance(domains, list) else None
