"""Offline mode: the same engine on a virtual clock, writing observation histories.

Each VM polls every `poll_interval` seconds with its own phase (real pollers are
not synchronised). Each poll that gets an answer writes one line of the
observation schema (docs/observation-schema.md). A VM that is rebooting or
frozen does not answer, so its poll writes nothing, as a real poller on that
VM would write nothing. With `change_only`, a VM writes a line only when its document changes (or
when it answers again after polls that got nothing), with `previous_observed_at`, as the event relay
does. With an approval policy, the first VM listed in an
event's Resources approves it when it first sees it, and an approval record
is written as a capture would write it.
"""
from __future__ import annotations

import gzip
import heapq
import io
import json
import random
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import IO, Dict, Iterator, List, Optional, Set, TextIO, Tuple

from .engine import Engine
from .wire import iso_utc

APPROVAL_POLICIES = ("none", "user", "all")


@dataclass
class GenerateOptions:
    days: float = 1.0
    poll_interval_s: float = 10.0
    api_version: str = "2020-07-01"
    approve: str = "none"
    change_only: bool = False  # the event relay's history: a line per change, with previous_observed_at


@dataclass
class GenerateStats:
    observations: int = 0
    approvals: int = 0
    silent_polls: int = 0
    events: int = 0


def observation_line(observed_at: datetime, host: str, vm_json: str, incarnation: Optional[int],
                     events_json: str, previous: Optional[datetime] = None, poll_interval_s: Optional[float] = None) -> str:
    """One observation record, built as text: offline runs write millions of them. `previous` and
    `poll_interval_s` are a change-only history's (the event relay's) fields."""
    inc = "null" if incarnation is None else str(incarnation)
    tail = f',"previous_observed_at":"{iso_utc(previous)}"' if previous is not None else ""
    tail += f',"poll_interval_s":{poll_interval_s:g}' if poll_interval_s is not None else ""
    return (f'{{"observed_at":"{iso_utc(observed_at)}","host":{json.dumps(host)},"vm":{vm_json},'
            f'"document_incarnation":{inc},"events":{events_json}{tail}}}\n')


@dataclass
class _ChangeOnly:
    """One VM's memory for a change-only history: the document it last saw, when, and whether polls failed since."""
    key: Optional[Tuple[Optional[int], str]] = None
    seen_at: Optional[datetime] = None
    failed: bool = False

    def line_due(self, key: Tuple[Optional[int], str], at: datetime) -> Tuple[bool, Optional[datetime]]:
        """Whether this answer is written (a change, or the first answer after failures), and its
        previous_observed_at."""
        due, previous = key != self.key or self.failed, self.seen_at
        self.key, self.seen_at, self.failed = key, at, False
        return due, previous


def approval_line(at: datetime, host: str, vm_json: str, event_ids: List[str], results: Dict[str, str]) -> str:
    record = {"record": "approval", "observed_at": iso_utc(at), "host": host, "event_ids": event_ids,
              "results": results}
    text = json.dumps(record, separators=(",", ":"))
    return text[:-1] + f',"vm":{vm_json}}}\n'


def generate(engine: Engine, options: GenerateOptions, out: TextIO, seed: int = 0) -> GenerateStats:
    if options.approve not in APPROVAL_POLICIES:
        raise ValueError(f"approval policy must be one of {', '.join(APPROVAL_POLICIES)}.")
    if options.poll_interval_s <= 0:
        raise ValueError("poll interval must be positive.")
    end = engine.start + timedelta(days=options.days)
    stats = GenerateStats()
    vm_json = {s.vm.name: json.dumps(s.vm.observation_fields(), separators=(",", ":"))
               for s in engine.vms.values()}
    events_cache: Dict[Tuple[str, int], str] = {}
    approved: Set[str] = set()
    memory: Dict[str, _ChangeOnly] = {}
    for at, name in _poll_times(engine, options.poll_interval_s, end, seed):
        served = engine.serve(name, options.api_version, at)
        if served.kind not in ("document", "enabling"):
            stats.silent_polls += 1
            memory.setdefault(name, _ChangeOnly()).failed = True
            continue
        incarnation, events_json = None, "[]"
        if served.kind == "document":
            doc = served.document
            incarnation = doc["DocumentIncarnation"]  # type: ignore[index]
            if (name, incarnation) not in events_cache:
                events_cache[(name, incarnation)] = json.dumps(doc["Events"], separators=(",", ":"))  # type: ignore[index]
            events_json = events_cache[(name, incarnation)]
        due, previous = memory.setdefault(name, _ChangeOnly()).line_due((incarnation, events_json), at)
        if due or not options.change_only:
            change_fields = (previous, options.poll_interval_s) if options.change_only else (None, None)
            out.write(observation_line(at, name, vm_json[name], incarnation, events_json, *change_fields))
            stats.observations += 1
        if served.kind == "document":
            stats.approvals += _maybe_approve(engine, options.approve, name, doc, at, approved, out,  # type: ignore[arg-type]
                                              vm_json[name])
    stats.events = len(engine.events)
    return stats


def _poll_times(engine: Engine, interval: float, end: datetime, seed: int) -> Iterator[Tuple[datetime, str]]:
    """Every VM's poll times, merged in time order; deleted VMs stop polling."""
    rng = random.Random(seed ^ 0x5EED)
    step = timedelta(seconds=interval)
    heap = [(engine.start + timedelta(seconds=rng.uniform(0, interval)), i, s.vm.name)
            for i, s in enumerate(engine.vms.values())]
    heapq.heapify(heap)
    while heap:
        at, index, name = heapq.heappop(heap)
        if at >= end:
            continue
        state = engine.vms[name.lower()]
        if state.deleted_at is not None and state.deleted_at <= at:
            continue
        yield at, name
        heapq.heappush(heap, (at + step, index, name))


def _maybe_approve(engine: Engine, policy: str, name: str, doc: Dict, at: datetime, approved: Set[str],
                   out: TextIO, vm_json: str) -> int:
    if policy == "none":
        return 0
    wanted = [e["EventId"] for e in doc["Events"]
              if e.get("EventStatus") == "Scheduled" and e["EventId"] not in approved
              and e.get("Resources") and e["Resources"][0].lower() == name.lower()
              and (policy == "all" or e.get("EventSource") == "User")]
    if not wanted:
        return 0
    entry = engine.approve(name, {"StartRequests": [{"EventId": i} for i in wanted]}, at)
    approved.update(wanted)
    out.write(approval_line(at, name, vm_json, wanted, entry["results"]))
    return 1


def open_output(path: str) -> IO[str]:
    """A text file for writing; `.gz` paths are gzip-compressed."""
    if path.endswith(".gz"):
        # mtime=0: the same run writes the same bytes (the shipped sample history is checked that way)
        return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8", newline="\n")
    return open(path, "w", encoding="utf-8", newline="\n")
