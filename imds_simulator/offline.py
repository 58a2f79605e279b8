"""Offline mode: the same engine on a virtual clock, writing observation histories.

Each VM polls every `poll_interval` seconds with its own phase (real pollers are
not synchronised). Each poll that gets an answer writes one line of the
observation schema (docs/reference/observation-schema.md). A VM that is rebooting or
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

from .engine import Engine, Served
from .wire import iso_utc

APPROVAL_POLICIES = ("none", "user", "all")


@dataclass
class GenerateOptions:
    days: float = 1.0
    poll_interval_s: float = 10.0
    api_version: str = "2020-07-01"
    approve: str = "none"
    change_only: bool = False  # the event relay's history: a line per change, with previous_observed_at
    # change-only: visit every poll instead of only those where something can change (slow; the fast path's
    # reference in tests)
    every_poll: bool = False


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
    poller = Poller(engine, options, out)
    if options.change_only and not options.every_poll:
        from .change_steps import poll_changes  # the fast path: only the polls where something can change
        poll_changes(poller, end, _phases(engine, options.poll_interval_s, seed))
    else:
        for at, name in _poll_times(engine, options.poll_interval_s, end, seed):
            poller.poll(name, at)
    engine.advance_to(end)
    poller.stats.events = len(engine.events)
    return poller.stats


class Poller:
    """One poll of one VM, as a poller on it would make it: the answer, the line it writes, its approval."""

    def __init__(self, engine: Engine, options: GenerateOptions, out: TextIO):
        self.engine, self.options, self.out = engine, options, out
        self.stats = GenerateStats()
        self.vm_json = {s.vm.name: json.dumps(s.vm.observation_fields(), separators=(",", ":"))
                        for s in engine.vms.values()}
        self._events_json: Dict[str, Tuple[List[Dict], str]] = {}
        self._approved: Set[str] = set()
        self._memory: Dict[str, _ChangeOnly] = {}

    def poll(self, name: str, at: datetime) -> Served:
        """Serve the VM's GET at `at`, write its line if one is due, approve as the policy says."""
        served = self.engine.serve(name, self.options.api_version, at)
        memory = self._memory.setdefault(name, _ChangeOnly())
        if served.kind not in ("document", "enabling"):
            self.stats.silent_polls += 1
            memory.failed = True
            return served
        incarnation, events_json = None, "[]"
        if served.kind == "document":
            incarnation = served.document["DocumentIncarnation"]  # type: ignore[index]
            events_json = self._events_text(name, served.document)  # type: ignore[arg-type]
        due, previous = memory.line_due((incarnation, events_json), at)
        if due or not self.options.change_only:
            change_fields = (previous, self.options.poll_interval_s) if self.options.change_only else (None, None)
            self.out.write(observation_line(at, name, self.vm_json[name], incarnation, events_json, *change_fields))
            self.stats.observations += 1
        if served.kind == "document":
            self.stats.approvals += _maybe_approve(self.engine, self.options.approve, name, served.document,
                                                   at, self._approved, self.out, self.vm_json[name])
        return served

    def skipped_until(self, name: str, at: datetime) -> None:
        """The VM's polls up to `at` were skipped because they answered what its last one did: they still
        kept the service enabled, and the next change's previous_observed_at is the last of them."""
        self.engine.vms[name.lower()].last_request = at
        self._memory[name].seen_at = at

    def _events_text(self, name: str, document: Dict) -> str:
        """The document's events as JSON, made once per change of the VM's events (the engine replaces its
        list at each change; an incarnation is no key, a re-enabled service restarts it). Only each VM's last
        is kept: a month of a fleet's documents would not fit in memory."""
        events = self.engine.vms[name.lower()].events
        cached = self._events_json.get(name)
        if cached is None or cached[0] is not events:
            cached = self._events_json[name] = (events, json.dumps(document["Events"], separators=(",", ":")))
        return cached[1]


def _phases(engine: Engine, interval: float, seed: int) -> List[datetime]:
    """Each VM's first poll, in fleet order: real pollers are not synchronised."""
    rng = random.Random(seed ^ 0x5EED)
    return [engine.start + timedelta(seconds=rng.uniform(0, interval)) for _ in engine.vms]


def _poll_times(engine: Engine, interval: float, end: datetime, seed: int) -> Iterator[Tuple[datetime, str]]:
    """Every VM's poll times, merged in time order; deleted VMs stop polling."""
    step = timedelta(seconds=interval)
    heap = [(first, i, s.vm.name) for i, (first, s) in enumerate(zip(_phases(engine, interval, seed),
                                                                     engine.vms.values()))]
    heapq.heapify(heap)
    while heap:
        at, index, name = heapq.heappop(heap)
        if at >= end:
            continue
        engine.advance_to(at)  # a deletion due by now is applied before the VM would poll
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


def write_description(history: str, command: str, what: str, time_scale: float = 1.0) -> str:
    """`<history>.meta.json`, the description a history's readers take it by: simulated, at its time scale (1 for
    generate, which writes in simulated time; serve's for what a client captured from it), and how it was made.
    Returns its path."""
    path = history + ".meta.json"
    meta = {"simulated": True, "time_scale": time_scale, "source": command,
            "description": f"SIMULATED data: {what}, generated by this repository's IMDS simulator, not captured "
                           f"from Azure."}
    with open(path, "w", encoding="utf-8", newline="\n") as handle:
        handle.write(json.dumps(meta, indent=1) + "\n")
    return path


def open_output(path: str) -> IO[str]:
    """A text file for writing; `.gz` paths are gzip-compressed."""
    if path.endswith(".gz"):
        # mtime=0: the same run writes the same bytes (the shipped sample history is checked that way)
        return io.TextIOWrapper(gzip.GzipFile(path, "wb", mtime=0), encoding="utf-8", newline="\n")
    return open(path, "w", encoding="utf-8", newline="\n")
