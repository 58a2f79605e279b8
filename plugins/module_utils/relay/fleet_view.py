# -*- coding: utf-8 -*-
# Copyright: contributors to azure_imds.scheduled_events
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the controller knows of the fleet from relay pushes, and when to start a cycle (pure).

The Event-Driven Ansible source (extensions/eda/plugins/event_source/scheduled_events.py) keeps one
FleetView. Each accepted push updates a host's entry; a push that shows news (another document, a VM no
longer quiet, a host heard from again) asks for a cycle. A cycle runs on every host with work: owed a
look, stale (no push for `stale_seconds`), or expected and never heard from: what the controller cannot
see counts as busy. Without a list of expected hosts the view cannot know whom it has never heard from,
so every cycle then covers the whole target.

A push can only widen a run, never narrow it. A host is *owed a look* from the moment it is first heard
of, again whenever a push says it is not quiet, and again whenever a cycle covers it (the cycle may drain
it, or die having drained it); it stops being owed only when a cycle that covered it, and began after the
last such push and after every earlier cycle that covered it, reports that it found the host quiet, or
left it so (the done report's `read_quiet`, from the cycle playbook's last play: its own read listed no
event for the host, and the host's state owed nothing as read or as the cycle last saved it, after its
recovers). A push saying "quiet" changes nothing: a relay that reads another state file, or lies, can
never take a host out of the runs, not even after a cycle drained it.

A host first heard of is looked at at once, quiet or not: the controller knows nothing of it yet (after a
restart it may be drained). Its first push starts a cycle (gathered like news, for the relays that start
beside it) when no cycle runs, so the fleet is read while it is quiet, one cycle at a time, instead of with
the first event that comes, which would then wait for a read of every host (a whole fleet's, at start-up).
It is not news: a running cycle covers every host with work, first-heard ones included, and a quiet host is
not reported to the rulebook as changed.

News is gathered for `gather_seconds` before it starts a cycle: the relays of one event's VMs poll once a
second each, so a whole fault domain's news arrives spread over about a second. Starting at the first push
would start a cycle on one VM, then more cycles on the next few (news no running cycle covers), each
reading the whole set: several cycles for one event where one, a second later, covers all of its VMs.

News on hosts that no running cycle covers starts another cycle at once (up to `max_parallel_runs`): an
event must not wait out a cycle busy with another one, since a Preempt gives 30 seconds. That is safe
because every cycle covers every host with work, the running cycles' hosts too, and the VM locks make a
host another cycle holds count as in maintenance (HELD in plan.py), so its fault domain blocks
the others of its set. News on hosts a running cycle covers is kept and coalesced into the next cycle
after those end; a cycle that never reports done gives its news back. While any host has work and no
cycle runs, a cycle also runs every `rerun_seconds`, news or not: deferred hosts, "prepare anyway"
before NotBefore and failed prepares or recovers need a next cycle that no push may announce.

Times are a monotonic clock's seconds (a wall-clock step must not make a silent host fresh).

A push never decides anything beyond adding hosts to a cycle, and which of those it leaves alone as busy
(a host whose own relay says it cannot read IMDS): the cycle reads every other VM itself, so a push can
make a host count as busy, never as free. Duplicates are dropped by (relay id, sequence number) as seen
within the signature's replay window, never by "anything not above the highest seen": a push with a huge
sequence number cannot silence the real relay.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Set

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.relay.protocol import (
    CHANGE,
    MAX_CLOCK_SKEW_SECONDS,
    document_key,
)

# How long a (relay id, seq) is remembered: a replay must be signed within the skew of now, and the original
# was accepted within the skew of its own signature, so twice the skew (and a margin) covers every replay.
SEEN_SECONDS = 2 * MAX_CLOCK_SKEW_SECONDS + 60
KEPT_RUNS = 64   # ended runs remembered for a late read_quiet report


@dataclass
class HostView:
    relay_id: str
    seq: int
    heard_at: float
    quiet: bool
    document: str = ""        # the last document's key, from change pushes
    away: str = ""            # why a cycle should not contact it now ("" to contact it): see leave_alone()
    away_since: float = 0.0   # when its relay first said so, of the pushes that say so without a break


@dataclass
class ViewSettings:
    stale_seconds: float = 90.0           # three missed heartbeats of 30 s
    max_run_seconds: float = 900.0        # a cycle not reported done by then no longer holds back the next
    rerun_seconds: float = 60.0           # while a host has work, a cycle at least this often
    expected_hosts: List[str] = field(default_factory=list)   # the target's hosts; [] unknown: whole target
    max_parallel_runs: int = 3            # cycles at once, for news on hosts no running cycle covers
    gather_seconds: float = 1.0           # news waits this long for the rest of its event's VMs (1 s polls)
    # A host whose relay says IMDS does not answer is left alone (busy) this long at most: a reboot or redeploy
    # is over within minutes; past it, cycles contact it again, and their own failed reads fail it loudly.
    away_seconds: float = 900.0


@dataclass
class Run:
    """A cycle this view asked for: which hosts, why, and since when."""
    number: int
    hosts: List[str]          # [] means the whole target (the view cannot tell who is missing)
    changed: List[str]
    stale: List[str]
    started_at: float
    leave_alone: List[str] = field(default_factory=list)   # hosts of the run it must not contact (busy)


@dataclass
class FleetView:
    settings: ViewSettings = field(default_factory=ViewSettings)
    hosts: Dict[str, HostView] = field(default_factory=dict)
    pending: Set[str] = field(default_factory=set)      # hosts with news since the last run began
    news_at: Dict[str, float] = field(default_factory=dict)   # when each pending host's news first came
    stale_noted: Set[str] = field(default_factory=set)   # stale hosts already put into a run
    running: Dict[int, Run] = field(default_factory=dict)   # by run number
    started_at: Optional[float] = None   # the view's first tick: relays get stale_seconds to be heard from
    last_run_at: Optional[float] = None
    runs: int = 0
    duplicates: int = 0
    worried_at: Dict[str, float] = field(default_factory=dict)   # last push that said the host may have work
    read_quiet_at: Dict[str, float] = field(default_factory=dict)  # start of the last run that read it quiet
    covered_at: Dict[str, float] = field(default_factory=dict)   # start of the last run that covered it
    seen: Dict[str, Dict[Any, float]] = field(default_factory=dict)   # host -> (relay_id, seq) -> when
    started: Dict[int, Run] = field(default_factory=dict)   # recent runs, ended or not, for read_quiet
    # Hosts a cycle took as deleted (its own read saw their own Preempt or Terminate Started, then silence):
    # out of every later run until their relay is heard from again (a push can only bring a host back).
    gone: Set[str] = field(default_factory=set)
    first_heard: Dict[str, float] = field(default_factory=dict)   # when each host's first push came

    def knows(self, host):
        # type: (str) -> bool
        """Whether pushes for `host` are taken: any host, or only the expected ones when they are listed."""
        return not self.settings.expected_hosts or host in self.settings.expected_hosts

    def accept(self, push, now):
        # type: (Dict[str, Any], float) -> bool
        """Take a checked push; False for a duplicate (its relay id and sequence number were seen within the
        replay window: nothing to do). Pushes are taken in the order they come, as each relay sends them."""
        host = push["host"]
        known = self.hosts.get(host)
        seen = self.seen.setdefault(host, {})
        for key in [k for k, at in seen.items() if now - at > SEEN_SECONDS]:
            del seen[key]
        if (push["relay_id"], push["seq"]) in seen:
            self.duplicates += 1
            return False
        seen[(push["relay_id"], push["seq"])] = now
        quiet = push["quiet"] and push.get("imds_ok", True) is not False
        if known is None or not quiet:
            self.worried_at[host] = now   # first heard of, or not quiet: owed a look until a cycle reads it quiet
        away = _away(push)
        news = (known is None or (known.quiet and not quiet) or host in self.stale_noted
                or bool(known.away and not away))   # back from its event: a cycle may do its work now
        entry = known or HostView(push["relay_id"], push["seq"], now, quiet)
        entry.relay_id, entry.seq, entry.heard_at = push["relay_id"], push["seq"], now
        if away and not (known is not None and known.away):
            entry.away_since = now
        entry.quiet, entry.away = quiet, away
        if push["kind"] == CHANGE:
            key = document_key(_document_of(push))
            news = news or key != entry.document
            entry.document = key
        self.hosts[host] = entry
        self.stale_noted.discard(host)
        self.gone.discard(host)
        if known is None:
            self.first_heard.setdefault(host, now)
        # A host gone away (IMDS not answering there) is news for no cycle: any cycle would
        # leave it alone. It still has work, so every cycle counts it busy; coming back is the news.
        if news and not entry.quiet and not entry.away:
            self._add_pending(host, now)
        return True

    def unheard(self):
        # type: () -> Set[str]
        return set(self.settings.expected_hosts) - set(self.hosts) - self.gone

    def stale(self, now):
        # type: (float) -> List[str]
        """Hosts not heard from for stale_seconds: since their last push, or since the view started."""
        if self.started_at is None:
            self.started_at = now
        silent = set(h for h, v in self.hosts.items() if now - v.heard_at > self.settings.stale_seconds)
        if now - self.started_at > self.settings.stale_seconds:
            silent |= self.unheard()
        return sorted(silent - self.gone)

    def leave_alone(self, hosts, now):
        # type: (List[str], float) -> List[str]
        """Hosts a cycle keeps in its play but does not contact, counting them as unread (busy): their own relay
        says, freshly, that IMDS does not answer there (rebooting, redeploying, evicted). Contacting them would
        only hold the whole cycle up until a timeout, while their fault domain is busy either way. A push can
        only make a host count as busy this way, never as free. Not for ever: once away_seconds have passed, cycles
        contact it again, and a read that still fails there fails the host in the run, where an operator sees it
        (a relay's word alone kept it out of sight indefinitely)."""
        stale = set(self.stale(now))
        return sorted(h for h in hosts if h in self.hosts and self.hosts[h].away and h not in stale
                      and now - self.hosts[h].away_since <= self.settings.away_seconds)

    def away_too_long(self, now):
        # type: (float) -> List[str]
        """Hosts whose relay has said for longer than away_seconds that IMDS does not answer there."""
        return sorted(h for h, v in self.hosts.items()
                      if v.away and now - v.away_since > self.settings.away_seconds and h not in self.gone)

    def owed(self):
        # type: () -> Set[str]
        """Hosts heard from that no cycle has read quiet since a push last said they might have work."""
        return set(h for h in self.hosts   # a push in the tick a run began may be newer than its read: owed
                   if h not in self.gone and (
                       h not in self.read_quiet_at or self.worried_at.get(h, 0.0) >= self.read_quiet_at[h]
                       or self.covered_at.get(h, 0.0) > self.read_quiet_at[h]))   # a later run may have drained it

    def with_work(self, now):
        # type: (float) -> List[str]
        """Hosts a cycle must look at: owed a look, stale, or never heard from (in any run, from the start)."""
        return sorted(set(self.stale(now)) | self.unheard() | self.owed())

    def next_run(self, now):
        # type: (float) -> Optional[Run]
        """The cycle to start now, or None. With no cycle running: news, a newly stale host, or work left
        after rerun_seconds. While cycles run: news or a newly stale host that none of them covers, up to
        max_parallel_runs (a cycle that outlived max_run_seconds gives its news back and stops counting)."""
        for run in [r for r in self.running.values() if now - r.started_at >= self.settings.max_run_seconds]:
            self._give_back(run)
        newly_stale = set(self.stale(now)) - self.stale_noted
        work = set(self.with_work(now))
        covered = self._covered()
        news, stale = self.pending - covered, newly_stale - covered
        ripe = self._gathered(news, now)
        if self.running:
            if not (ripe or stale) or len(self.running) >= self.settings.max_parallel_runs:
                return None
        elif not ripe and not stale and not self._first_look_due(now) \
                and not self._rerun_due(work - set(self.leave_alone(sorted(work), now)), now):
            return None
        self.stale_noted |= stale
        self.runs += 1
        hosts = sorted(work | self.pending) if self.settings.expected_hosts else []
        run = Run(self.runs, hosts, sorted(news), sorted(stale), now, self.leave_alone(hosts, now))
        for host in hosts or set(self.hosts) | set(self.settings.expected_hosts):
            self.covered_at[host] = now   # owed a look until a run that began now or later reads it quiet
        self.running[run.number] = run
        self.started[run.number] = run
        for number in sorted(self.started)[:-KEPT_RUNS]:
            del self.started[number]
        self.pending -= news
        for host in news:
            self.news_at.pop(host, None)
        self.last_run_at = now
        return run

    def done(self, number, read_quiet=(), deleted=()):
        # type: (int, Any, Any) -> bool
        """The cycle `number` ended; True when it was running (news it covered may start the next).
        `read_quiet`: the hosts its own read found quiet. Each of them that the run covered stops being owed a
        look, unless a push said it might have work after the run began (that push is newer than the read).
        `deleted`: the hosts its plan took as deleted (cycle/deleted.py). Each that the run covered, and that no
        push was heard from since the run began, leaves every later run until its relay is heard from again."""
        run = self.started.get(number)
        if run is not None:
            for host in read_quiet:
                if host in self.hosts and (not run.hosts or host in run.hosts) \
                        and self.read_quiet_at.get(host, run.started_at) <= run.started_at:
                    self.read_quiet_at[host] = run.started_at
            for host in deleted:
                heard = self.hosts[host].heard_at if host in self.hosts else None
                if self.knows(host) and (not run.hosts or host in run.hosts) \
                        and (heard is None or heard < run.started_at):
                    self.gone.add(host)
                    self.pending.discard(host)
        return self.running.pop(number, None) is not None

    def _covered(self):
        # type: () -> Set[str]
        """Hosts a running cycle looks at (all of them when one covers the whole target)."""
        if any(not run.hosts for run in self.running.values()):
            return set(self.hosts) | set(self.settings.expected_hosts) | self.pending
        return set(h for run in self.running.values() for h in run.hosts)

    def _add_pending(self, host, now):
        # type: (str, float) -> None
        self.pending.add(host)
        self.news_at.setdefault(host, now)

    def _gathered(self, news, now):
        # type: (Set[str], float) -> bool
        """Whether news no running cycle covers has waited gather_seconds for the rest of its event's VMs (the
        oldest of it counts: a steady trickle of news cannot hold a cycle back longer than that)."""
        return bool(news) and now - min(self.news_at.get(h, now) for h in news) >= self.settings.gather_seconds

    def _first_look_due(self, now):
        # type: (float) -> bool
        """Whether hosts first heard of that no cycle begun since has covered have waited gather_seconds (the
        oldest). A cycle begun in the tick of the first push may have read before it: it does not count."""
        waiting = [at for host, at in self.first_heard.items()
                   if at >= self.covered_at.get(host, at - 1.0) and host not in self.gone]
        return bool(waiting) and now - min(waiting) >= self.settings.gather_seconds

    def _rerun_due(self, work, now):
        # type: (Set[str], float) -> bool
        since = self.last_run_at if self.last_run_at is not None else self.started_at
        return bool(work) and now - since >= self.settings.rerun_seconds

    def _give_back(self, run):
        """A cycle never reported done may have died before it saw its news: the next one takes it again."""
        for host in run.changed:
            self._add_pending(host, run.started_at)   # old news: no gathering again
        self.stale_noted -= set(run.stale)
        del self.running[run.number]


def _away(push):
    # type: (Dict[str, Any]) -> str
    """Why a cycle should not contact the host: only its relay saying IMDS does not answer there. A Started
    event listing it is no reason: a Freeze of seconds stays Started for minutes while IMDS answers, and a
    Preempt or Terminate scheduled meanwhile must be prepared (the plan counts a Started host busy from the
    cycle's own read)."""
    if push.get("imds_ok") is False:
        return "its relay cannot read IMDS"
    return ""


def _document_of(push):
    record = push.get("record")
    if not isinstance(record, dict) or not push.get("document_available", True):
        return None
    return {"DocumentIncarnation": record.get("document_incarnation"), "Events": record.get("events")}
