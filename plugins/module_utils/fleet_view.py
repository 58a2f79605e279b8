# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller knows of the fleet from relay pushes, and when to start a cycle (pure).

The Event-Driven Ansible source (extensions/eda/plugins/event_source/scheduled_events.py) keeps one
FleetView. Each accepted push updates a host's entry; a push that shows news (another document, a VM no
longer quiet, a host heard from again) asks for a cycle. A cycle runs on every host with work: not
quiet, or stale (no push for `stale_seconds`: what the controller cannot see counts as busy). While a
cycle runs, news is kept and coalesced into the next one, never dropped.

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


@dataclass
class Run:
    """A cycle this view asked for: which hosts, why, and since when."""
    number: int
    hosts: List[str]
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
    runs: int = 0
    duplicates: int = 0

    def accept(self, push, now):
        # type: (Dict[str, Any], float) -> bool
        """Take a checked push; False for a duplicate or an older one (already seen: nothing to do)."""
        host = push["host"]
        known = self.hosts.get(host)
        if known is not None and known.relay_id == push["relay_id"] and push["seq"] <= known.seq:
            self.duplicates += 1
            return False
        news = known is None or (known.quiet and not push["quiet"]) or host in self.stale_noted
        entry = known or HostView(push["relay_id"], push["seq"], now, push["quiet"])
        entry.relay_id, entry.seq, entry.heard_at, entry.quiet = push["relay_id"], push["seq"], now, push["quiet"]
        if push["kind"] == CHANGE:
            key = document_key(_document_of(push))
            news = news or key != entry.document
            entry.document = key
        self.hosts[host] = entry
        self.stale_noted.discard(host)
        if news and not entry.quiet:
            self.pending.add(host)
        return True

    def stale(self, now):
        # type: (float) -> List[str]
        return sorted(h for h, v in self.hosts.items() if now - v.heard_at > self.settings.stale_seconds)

    def with_work(self, now):
        # type: (float) -> List[str]
        stale = set(self.stale(now))
        return sorted(h for h, v in self.hosts.items() if not v.quiet or h in stale)

    def next_run(self, now):
        # type: (float) -> Optional[Run]
        """The cycle to start now, or None: news (or a newly stale host) and no cycle still running."""
        newly_stale = set(self.stale(now)) - self.stale_noted
        if self.running is not None and now - self.running.started_at < self.settings.max_run_seconds:
            return None
        if not self.pending and not newly_stale:
            return None
        self.stale_noted |= newly_stale
        self.runs += 1
        hosts = sorted(set(self.with_work(now)) | self.pending)
        self.running = Run(self.runs, hosts, sorted(self.pending), sorted(newly_stale), now)
        self.pending = set()
        return self.running

    def done(self, number):
        # type: (int) -> bool
        """The cycle `number` ended; True when it was the running one (the next may start)."""
        if self.running is None or self.running.number != number:
            return False
        self.running = None
        return True


def _document_of(push):
    record = push.get("record")
    if not isinstance(record, dict) or not push.get("document_available", True):
        return None
    return {"DocumentIncarnation": record.get("document_incarnation"), "Events": record.get("events")}
