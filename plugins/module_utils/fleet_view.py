# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller knows of the fleet from relay pushes, and when to start a cycle (pure).

The Event-Driven Ansible source (extensions/eda/plugins/event_source/scheduled_events.py) keeps one
FleetView. Each accepted push updates a host's entry; a push that shows news (another document, a VM no
longer quiet, a host heard from again) asks for a cycle. A cycle runs on every host with work: not
quiet, stale (no push for `stale_seconds`), or expected and never heard from: what the controller
cannot see counts as busy. Without a list of expected hosts the view cannot know whom it has never
heard from, so every cycle then covers the whole target. While a cycle runs, news is kept and
coalesced into the next one; a cycle that never reports done gives its news back. While any host has
work, a cycle also runs every `rerun_seconds`, news or not: deferred hosts, "prepare anyway" before
NotBefore and failed prepares or recovers need a next cycle that no push may announce.

Times are a monotonic clock's seconds (a wall-clock step must not make a silent host fresh).

A push never decides anything beyond which hosts a cycle looks at: the cycle reads every VM itself.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay import CHANGE, document_key


@dataclass
class HostView:
    relay_id: str
    seq: int
    heard_at: float
    quiet: bool
    document: str = ""        # the last document's key, from change pushes


@dataclass
class ViewSettings:
    stale_seconds: float = 90.0           # three missed heartbeats of 30 s
    max_run_seconds: float = 900.0        # a cycle not reported done by then no longer holds back the next
    rerun_seconds: float = 60.0           # while a host has work, a cycle at least this often
    expected_hosts: List[str] = field(default_factory=list)   # the target's hosts; [] unknown: whole target


@dataclass
class Run:
    """A cycle this view asked for: which hosts, why, and since when."""
    number: int
    hosts: List[str]          # [] means the whole target (the view cannot tell who is missing)
    changed: List[str]
    stale: List[str]
    started_at: float


@dataclass
class FleetView:
    settings: ViewSettings = field(default_factory=ViewSettings)
    hosts: Dict[str, HostView] = field(default_factory=dict)
    pending: Set[str] = field(default_factory=set)      # hosts with news since the last run began
    stale_noted: Set[str] = field(default_factory=set)   # stale hosts already put into a run
    running: Optional[Run] = None
    started_at: Optional[float] = None   # the view's first tick: relays get stale_seconds to be heard from
    last_run_at: Optional[float] = None
    runs: int = 0
    duplicates: int = 0

    def knows(self, host):
        # type: (str) -> bool
        """Whether pushes for `host` are taken: any host, or only the expected ones when they are listed."""
        return not self.settings.expected_hosts or host in self.settings.expected_hosts

    def accept(self, push, now):
        # type: (Dict[str, Any], float) -> bool
        """Take a checked push; False for a duplicate or an older one (already seen: nothing to do)."""
        host = push["host"]
        known = self.hosts.get(host)
        if known is not None and known.relay_id == push["relay_id"] and push["seq"] <= known.seq:
            self.duplicates += 1
            return False
        quiet = push["quiet"] and push.get("imds_ok", True) is not False
        news = known is None or (known.quiet and not quiet) or host in self.stale_noted
        entry = known or HostView(push["relay_id"], push["seq"], now, quiet)
        entry.relay_id, entry.seq, entry.heard_at, entry.quiet = push["relay_id"], push["seq"], now, quiet
        if push["kind"] == CHANGE:
            key = document_key(_document_of(push))
            news = news or key != entry.document
            entry.document = key
        self.hosts[host] = entry
        self.stale_noted.discard(host)
        if news and not entry.quiet:
            self.pending.add(host)
        return True

    def unheard(self):
        # type: () -> Set[str]
        return set(self.settings.expected_hosts) - set(self.hosts)

    def stale(self, now):
        # type: (float) -> List[str]
        """Hosts not heard from for stale_seconds: since their last push, or since the view started."""
        if self.started_at is None:
            self.started_at = now
        silent = set(h for h, v in self.hosts.items() if now - v.heard_at > self.settings.stale_seconds)
        if now - self.started_at > self.settings.stale_seconds:
            silent |= self.unheard()
        return sorted(silent)

    def with_work(self, now):
        # type: (float) -> List[str]
        """Hosts a cycle must look at: not quiet, stale, or never heard from (in any run, from the start)."""
        return sorted(set(self.stale(now)) | self.unheard() | set(h for h, v in self.hosts.items() if not v.quiet))

    def next_run(self, now):
        # type: (float) -> Optional[Run]
        """The cycle to start now, or None: news, a newly stale host, or work left after rerun_seconds, and no
        cycle still running (one that outlived max_run_seconds gives its news back)."""
        if self.running is not None:
            if now - self.running.started_at < self.settings.max_run_seconds:
                return None
            self._give_back(self.running)
        stale = set(self.stale(now))
        newly_stale = stale - self.stale_noted
        work = set(self.with_work(now))
        since = self.last_run_at if self.last_run_at is not None else self.started_at
        rerun = bool(work) and now - since >= self.settings.rerun_seconds
        if not self.pending and not newly_stale and not rerun:
            return None
        self.stale_noted |= newly_stale
        self.runs += 1
        hosts = sorted(work | self.pending) if self.settings.expected_hosts else []
        self.running = Run(self.runs, hosts, sorted(self.pending), sorted(newly_stale), now)
        self.pending = set()
        self.last_run_at = now
        return self.running

    def done(self, number):
        # type: (int) -> bool
        """The cycle `number` ended; True when it was the running one (the next may start)."""
        if self.running is None or self.running.number != number:
            return False
        self.running = None
        return True

    def _give_back(self, run):
        """A cycle never reported done may have died before it saw its news: the next one takes it again."""
        self.pending |= set(run.changed)
        self.stale_noted -= set(run.stale)
        self.running = None


def _document_of(push):
    record = push.get("record")
    if not isinstance(record, dict) or not push.get("document_available", True):
        return None
    return {"DocumentIncarnation": record.get("document_incarnation"), "Events": record.get("events")}
