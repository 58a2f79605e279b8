"""The discrete-event engine behind both the live server and offline generation.

Every public method takes the time it happens at, so the engine never reads a
clock: the live server passes the wall clock, offline generation a virtual one.
Scenario durations are divided by `time_scale` when an event is created, so
timestamps stay on whatever clock drives the engine.

Rules enforced here (see SPEC-scheduled-events.md):
- every VM of a set sees every event of that set and none of another set's
  (unless the event or fleet scope narrows it further); `DocumentIncarnation`
  grows per VM whenever its events change;
- `Scheduled` -> `Started` when approved (by one VM of the set, or by every VM
  of `Resources` for `approval: all`) or when `NotBefore` is reached; the
  EventId is kept, character for character, and an approval must send it back
  exactly as served (case included); `NotBefore` is `""` once Started; removal
  ends an event;
- routine platform maintenance never has two fault domains of one set
  `Started` at once (in a zonal fleet: never two zones, fleet-wide): an event
  that would break that waits (NotBefore is a lower bound only);
- 24 h (scaled) without a request disables the service; the next request
  re-enables it and, by default, restarts the incarnation.
"""
from __future__ import annotations

import heapq
import itertools
import random
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Dict, FrozenSet, List, Optional, Sequence, Set, Tuple

from . import scenario as sc
from .fleet import VM, Fleet
from .wire import ADVISORY_TYPES, iso_utc, new_event_id, render_document, rfc1123

# A serialisation key: (group, domain). Routine maintenance never has two
# domains of one group Started at once. Group = the VM's set and domain = its
# fault domain; in a zonal fleet group = ZONAL (the whole fleet) and domain =
# the zone, because zonal VMs all report fault domain 0.
DomainKey = Tuple[str, Any]
ZONAL = "*zones*"
ID_CASES = sc.ID_CASES


class ApprovalError(ValueError):
    """An approval request IMDS answers with 400."""


@dataclass
class EngineOptions:
    disable_after_s: float = 86400.0   # scenario seconds of silence that disable the service
    reset_incarnation_on_reenable: bool = True
    enabling_s: float = 0.0            # scenario seconds of 200-with-empty-body after enabling
    simulate_impact: bool = True       # rebooting VMs do not answer, frozen ones answer late
    record_served: bool = True         # keep every served document for the timeline
    record_changes: bool = True        # keep every VM's document changes for the timeline (long runs: off)
    event_id_case: str = "upper"       # EventId case when neither the event nor its scenario says


@dataclass
class SimEvent:
    event_id: str
    key: str
    event_type: str
    source: str
    description: str
    duration_s: int
    resources: List[str]
    fault_domains: FrozenSet[int]
    routine: bool
    visible_to: Optional[FrozenSet[str]]  # lower-case names; None = the whole set
    appeared_at: datetime
    not_before: Optional[datetime]
    started_for: timedelta
    impact: timedelta
    approval_rule: str
    cancel_at: Optional[datetime] = None
    fixed_start: Optional[datetime] = None
    fixed_removed: Optional[datetime] = None
    status: str = "Scheduled"
    started_at: Optional[datetime] = None
    removed_at: Optional[datetime] = None
    start_reason: str = ""
    outcome: str = "pending"
    approved_by: List[str] = field(default_factory=list)
    first_approved_at: Optional[datetime] = None
    approval_satisfied_at: Optional[datetime] = None
    held: bool = False
    group: Optional["Group"] = None
    set_name: str = ""                   # the set whose VMs see it (all of them unless visible_to)
    zones: FrozenSet[str] = frozenset()
    domains: FrozenSet[DomainKey] = frozenset()  # serialisation keys of its VMs

    def wire(self) -> Dict[str, Any]:
        """The event in the newest api-version's shape."""
        return {
            "EventId": self.event_id,
            "EventStatus": self.status,
            "EventType": self.event_type,
            "ResourceType": "VirtualMachine",
            "Resources": list(self.resources),
            "NotBefore": rfc1123(self.not_before) if self.status == "Scheduled" and self.not_before else "",
            "Description": self.description,
            "EventSource": self.source,
            "DurationInSeconds": self.duration_s,
        }

    def approval_satisfied(self) -> bool:
        if not self.approved_by:
            return False
        if self.approval_rule == "any":
            return True
        return {r.lower() for r in self.resources} <= {a.lower() for a in self.approved_by}

    def start_due(self) -> Optional[datetime]:
        if self.status != "Scheduled":
            return None
        if self.fixed_start is not None:
            return self.fixed_start
        candidates = [t for t in (self.not_before, self.approval_satisfied_at) if t is not None]
        return min(candidates) if candidates else None

    def removal_due(self) -> Optional[datetime]:
        if self.status == "Started":
            return self.fixed_removed or (self.started_at + self.started_for)  # type: ignore
        if self.status == "Scheduled" and self.cancel_at is not None:
            return self.cancel_at
        return None

    def summary(self) -> Dict[str, Any]:
        def when(t: Optional[datetime]) -> Optional[str]:
            return iso_utc(t) if t else None
        return {
            "event_id": self.event_id, "key": self.key, "event_type": self.event_type,
            "event_source": self.source, "resources": list(self.resources),
            "fault_domains": sorted(self.fault_domains), "routine": self.routine,
            "set": self.set_name, "zones": sorted(self.zones),
            "status": self.status, "outcome": self.outcome, "start_reason": self.start_reason,
            "appeared_at": when(self.appeared_at), "not_before": when(self.not_before),
            "started_at": when(self.started_at), "removed_at": when(self.removed_at),
            "duration_s": self.duration_s, "impact_s": self.impact.total_seconds(),
            "approved_by": list(self.approved_by), "first_approved_at": when(self.first_approved_at),
        }


@dataclass
class Group:
    """One instantiation of a spec: a single event, or a whole for_each walk."""
    spec: sc.EventSpec
    selection: List[VM]
    domains: List[int]
    walk: Optional[str] = None  # the VM attribute a chain walks ("fault_domain", ...)
    events: List[SimEvent] = field(default_factory=list)
    started: bool = False
    finished: bool = False


@dataclass
class VMState:
    vm: VM
    incarnation: int = 0
    revision: int = 0  # counts every change of its document, re-enabling included: never goes back, unlike the incarnation
    signature: Tuple[Tuple[str, str], ...] = ()
    events: List[Dict[str, Any]] = field(default_factory=list)
    known_ids: Set[str] = field(default_factory=set)
    enabled_at: Optional[datetime] = None
    last_request: Optional[datetime] = None
    deleted_at: Optional[datetime] = None
    changes: List[Dict[str, Any]] = field(default_factory=list)
    served: List[Dict[str, Any]] = field(default_factory=list)


@dataclass
class Served:
    """What the engine answers a GET with; the server turns it into HTTP."""
    kind: str  # "document" | "enabling" | "down" | "frozen" | "deleted"
    document: Optional[Dict[str, Any]] = None
    first_call: bool = False
    until: Optional[datetime] = None


class Engine:
    def __init__(self, fleet: Fleet, scenario: Optional[sc.Scenario], start: datetime,
                 time_scale: float = 1.0, seed: int = 0, options: Optional[EngineOptions] = None):
        if time_scale <= 0:
            raise ValueError("time scale must be positive.")
        if (options or EngineOptions()).event_id_case not in ID_CASES:
            raise ValueError(f"event id case must be one of {', '.join(ID_CASES)}.")
        self.fleet = fleet
        self.time_scale = time_scale
        self.options = options or EngineOptions()
        self.rng = random.Random(seed)
        self.start = start
        self.now = start
        self.vms: Dict[str, VMState] = {v.name.lower(): VMState(v) for v in fleet.vms}
        self.events: List[SimEvent] = []
        self.active: List[SimEvent] = []
        self.approvals: List[Dict[str, Any]] = []
        self._queue: List[Tuple[datetime, int, str, Any]] = []
        self._seq = itertools.count()
        self._dependents: Dict[str, List[sc.EventSpec]] = {}
        self.scenario_names: List[str] = []
        self._replay_origin: Optional[Tuple[datetime, datetime]] = None  # (recorded, served) start
        self._refresh(start)
        if scenario is not None:
            self.load(scenario, start)

    # ------------------------------------------------------------------ time

    def span(self, seconds: float) -> timedelta:
        """A scenario duration on the engine's clock."""
        return timedelta(seconds=seconds / self.time_scale)

    def disable(self, name: str) -> None:
        """As if the VM had sent no request for 24 h: the next one re-enables the service."""
        self.vms[name.lower()].last_request = None

    def load(self, scenario: sc.Scenario, at: datetime) -> List[str]:
        """Queue a scenario's specs from `at` on; returns the keys queued."""
        self._check_selectors(scenario)
        self.advance_to(at)
        self.scenario_names.append(scenario.name)
        if scenario.recorded_start is not None:
            self._replay_origin = (scenario.recorded_start, at)
        for spec in _with_id_case(scenario):
            if spec.after is not None:
                self._dependents.setdefault(spec.after.key, []).append(spec)
            elif spec.per_day is not None:
                self._push(at + self._arrival_gap(spec), "stream", spec)
            else:
                self._push(at + self.span(sc.sample(spec.at_s, self.rng)), "appear", spec)  # type: ignore
        self.advance_to(at)
        return [s.key for s in scenario.specs]

    def stop_arrivals(self, at: datetime) -> int:
        """No new random arrivals (`per_day` streams) after `at`; events already due or under way, fault-domain
        walks and `after` chains go on. For soaks that end with a settle period. Returns the streams stopped."""
        self.advance_to(at)
        kept = [entry for entry in self._queue if entry[2] != "stream"]
        stopped = len(self._queue) - len(kept)
        heapq.heapify(kept)
        self._queue = kept
        return stopped

    def _check_selectors(self, scenario: sc.Scenario) -> None:
        """Refuse, before anything is queued, specs that name VMs this fleet does not have."""
        for spec in scenario.specs:
            names = spec.resources.get("names", [])
            unknown = [n for n in names if not isinstance(n, str) or n.lower() not in self.vms]
            if unknown:
                raise sc.ScenarioError(f"event {spec.key!r} names {unknown[0]!r}, which is not a VM of this fleet.")
            indexes = spec.resources.get("vms", [])
            bad = [i for i in indexes if not isinstance(i, int) or not 0 <= i < len(self.fleet.vms)]
            if bad:
                raise sc.ScenarioError(f"event {spec.key!r} names VM index {bad[0]!r}, but the fleet has "
                                       f"{len(self.fleet.vms)} VMs.")
            self._check_set_and_zone(spec)

    def _check_set_and_zone(self, spec: sc.EventSpec) -> None:
        wanted_set = spec.resources.get("set")
        if wanted_set not in (None, "random") and wanted_set not in self.fleet.sets:
            raise sc.ScenarioError(f"event {spec.key!r} names set {wanted_set!r}, which is not a set of this "
                                   f"fleet ({', '.join(self.fleet.sets)}).")
        zones = sorted({v.zone for v in self.fleet.vms if v.zone})
        wanted_zone = spec.resources.get("zone")
        if wanted_zone not in (None, "random") and wanted_zone not in zones:
            raise sc.ScenarioError(f"event {spec.key!r} names zone {wanted_zone!r}, but this fleet's VMs are "
                                   f"in {', '.join(zones) or 'no zone'}.")

    def _arrival_gap(self, spec: sc.EventSpec) -> timedelta:
        mean_s = 86400.0 / spec.per_day  # type: ignore
        return self.span(self.rng.expovariate(1.0 / mean_s))

    def _push(self, due: datetime, kind: str, payload: Any) -> None:
        heapq.heappush(self._queue, (due, next(self._seq), kind, payload))

    def advance_to(self, t: datetime) -> None:
        """Apply every transition due up to and including `t`, in time order."""
        while True:
            due = self._next_due()
            if due is None or due > t:
                break
            self._fire(due)
            self._refresh(due)
        if t > self.now:
            self.now = t

    def next_change(self) -> Optional[datetime]:
        """When the engine next has something to do (for offline stepping)."""
        return self._next_due()

    def _next_due(self) -> Optional[datetime]:
        times = [self._queue[0][0]] if self._queue else []
        for ev in self.active:
            removal = ev.removal_due()
            if removal is not None:
                times.append(removal)
            start = ev.start_due()
            if start is not None and not ev.held:
                times.append(start)
        return min(times) if times else None

    def _fire(self, due: datetime) -> None:
        # Removals first so that a fault domain freed now can be entered now.
        for ev in sorted(self.active, key=lambda e: e.removal_due() or due):
            removal = ev.removal_due()
            if removal is not None and removal <= due:
                self._remove(ev, due)
        while self._queue and self._queue[0][0] <= due:
            _, _, kind, payload = heapq.heappop(self._queue)
            self._dispatch(kind, payload, due)
        ready = [ev for ev in self.active if ev.start_due() is not None and ev.start_due() <= due]  # type: ignore
        for ev in sorted(ready, key=lambda e: e.start_due()):  # type: ignore
            self._try_start(ev, due)
        # A Terminate that started now released the held ones of its set, tried before it in this pass: now too.
        for ev in [e for e in ready if e.status == "Scheduled" and not e.held]:
            self._try_start(ev, due)

    def _dispatch(self, kind: str, payload: Any, at: datetime) -> None:
        if kind == "stream":
            self._push(at + self._arrival_gap(payload), "stream", payload)
            self._instantiate(payload, at)
        elif kind == "appear":
            self._instantiate(payload, at)
        elif kind == "next-domain":
            self._appear_domain(payload, at)

    # ------------------------------------------------------------------ creating events

    def _instantiate(self, spec: sc.EventSpec, at: datetime) -> None:
        selection = self._select(spec.resources)
        if not selection:
            return  # every VM it could hit is gone (deleted): nothing to announce
        # Each set is its own Scheduled Events scope: its share of the selection
        # is a separate event (or walk). A one-set fleet makes exactly one group.
        for members in _by_set(selection):
            self._instantiate_in_set(spec, members, at)

    def _domain_attr(self) -> str:
        """The VM attribute maintenance walks: the zone in a zonal fleet (all FD 0), else the fault domain."""
        return "zone" if self.fleet.zonal else "fault_domain"

    def _instantiate_in_set(self, spec: sc.EventSpec, selection: List[VM], at: datetime) -> None:
        walk = spec.for_each
        domain_attr = self._domain_attr()
        if walk == "fault_domain":
            walk = domain_attr  # in a zonal fleet "one fault domain at a time" means one zone at a time
        if walk is None and spec.routine and len({getattr(v, domain_attr) for v in selection}) > 1:
            walk = domain_attr  # routine maintenance never spans fault domains (zones): walk them
        domains: List[Any] = []
        if walk is not None:
            domains = sorted({getattr(v, walk) for v in selection})
            if spec.order == "random":
                self.rng.shuffle(domains)
        group = Group(spec=spec, selection=selection, domains=domains, walk=walk)
        self._appear_domain(group, at)

    def _appear_domain(self, group: Group, at: datetime) -> None:
        spec = group.spec
        members = group.selection
        if group.walk is not None:
            domain = group.domains.pop(0)
            members = [v for v in group.selection if getattr(v, group.walk) == domain
                       and not self._deleted(v, at)]
            if not members:
                self._domain_done(group, at)
                return
        ev = self._new_event(spec, members, at)
        ev.group = group
        group.events.append(ev)
        self.events.append(ev)
        self.active.append(ev)
        if ev.status == "Started":
            self._on_started(ev)

    def _new_event(self, spec: sc.EventSpec, members: List[VM], at: datetime) -> SimEvent:
        names = [v.name for v in members]
        scope_all = spec.visible == "set" and self.fleet.scope == "set"
        impact_s = sc.sample(sc.impact_span(spec), self.rng)
        started_for = self.span(sc.sample(spec.started_for_s, self.rng))
        # Drawn after the durations, as always: a seed gives the same run whatever the case.
        event_id = spec.event_id or new_event_id(self.rng)
        if (spec.event_id_case or self.options.event_id_case) == "lower":
            event_id = event_id.lower()  # served, kept and matched exactly like this
        ev = SimEvent(
            event_id=event_id,
            key=spec.key, event_type=spec.event_type, source=spec.source,
            description=spec.description, duration_s=spec.duration_s, resources=names,
            fault_domains=frozenset(v.fault_domain for v in members), routine=spec.routine,
            visible_to=None if scope_all else frozenset(n.lower() for n in names),
            appeared_at=at, not_before=None, started_for=started_for,
            impact=min(self.span(impact_s), started_for), approval_rule=spec.approval,
            set_name=members[0].set_name, zones=frozenset(v.zone for v in members if v.zone),
            domains=frozenset(self._domain_key(v) for v in members),
        )
        if spec.notice_s is None:  # hardware failure: no Scheduled phase
            ev.status, ev.started_at, ev.start_reason = "Started", at, "no_notice"
        else:
            ev.not_before = self._not_before(spec, at)
        if spec.cancel_after_s is not None:
            ev.cancel_at = at + self.span(sc.sample(spec.cancel_after_s, self.rng))
        if spec.fixed_start_s is not None:
            ev.fixed_start = self._replay_time(spec.fixed_start_s)
        if spec.fixed_removed_s is not None:
            ev.fixed_removed = self._replay_time(spec.fixed_removed_s)
        return ev

    def _not_before(self, spec: sc.EventSpec, at: datetime) -> datetime:
        if spec.not_before_literal:
            literal = sc._datetime(spec.not_before_literal, f"event {spec.key}")
            recorded, origin = self._replay_origin  # type: ignore[misc]
            moment = origin + self.span((literal - recorded).total_seconds())
        else:
            moment = at + self.span(sc.sample(spec.notice_s, self.rng))  # type: ignore
        # IMDS serves whole seconds; start exactly at the served value, never before it.
        return _ceil_second(moment)

    def _replay_time(self, seconds: float) -> datetime:
        _, origin = self._replay_origin  # type: ignore[misc]
        return origin + self.span(seconds)

    def _domain_key(self, vm: VM) -> DomainKey:
        return (ZONAL, vm.zone) if self.fleet.zonal else (vm.set_name, vm.fault_domain)

    def _select(self, selector: Dict[str, Any]) -> List[VM]:
        vms = [s.vm for s in self.vms.values() if s.deleted_at is None]
        # set and zone first; they draw from the seed only when "random" (old seeds keep their runs)
        for key, attr in (("set", "set_name"), ("zone", "zone"), ("fault_domain", "fault_domain"),
                          ("update_domain", "update_domain")):
            vms = self._filter(vms, attr, selector.get(key))
        if "vms" in selector:
            indexes = set(selector["vms"])
            vms = [v for i, v in enumerate(self.fleet.vms) if i in indexes and v in vms]
        if "names" in selector:  # checked against the fleet when the scenario was loaded
            wanted_names = [n.lower() for n in selector["names"]]
            vms = [v for v in vms if v.name.lower() in wanted_names]
        if "count" in selector and len(vms) > selector["count"]:
            picked = set(self.rng.sample(range(len(vms)), int(selector["count"])))
            vms = [v for i, v in enumerate(vms) if i in picked]
        return vms

    def _filter(self, vms: List[VM], attr: str, wanted: Any) -> List[VM]:
        if wanted == "random":
            present = sorted({getattr(v, attr) for v in vms})
            wanted = self.rng.choice(present) if present else None
        if wanted is None:
            return vms
        return [v for v in vms if getattr(v, attr) == wanted]

    # ------------------------------------------------------------------ transitions

    def _try_start(self, ev: SimEvent, at: datetime) -> None:
        if ev.routine and self._fault_domain_busy(ev):
            ev.held = True  # wait for the other fault domain; NotBefore is only a lower bound
            return
        if self._terminate_waits(ev, at):
            ev.held = True  # until the set's other Terminates are approved or reach their NotBefore
            return
        ev.held = False
        reason = "replay" if ev.fixed_start else ("approved" if ev.approval_satisfied() else "not_before")
        ev.status, ev.started_at, ev.start_reason = "Started", at, reason
        self._on_started(ev)

    def _terminate_waits(self, ev: SimEvent, at: datetime) -> bool:
        """Azure (terminate notification): "If there's a pending delete on VM_1 that isn't approved, and you've
        approved another terminate event on VM_2, then VM_2 isn't deleted until the terminate event for VM_1 is
        approved, or its timeout has elapsed" (the same NotBefore: both approved, or neither deleted early). So an
        approved Terminate does not start before its NotBefore while another Terminate of its set waits
        unapproved."""
        if ev.event_type != "Terminate" or ev.not_before is None or at >= ev.not_before:
            return False
        return any(other is not ev and other.event_type == "Terminate" and other.status == "Scheduled"
                   and other.set_name == ev.set_name and not other.approval_satisfied() for other in self.active)

    def _release_terminates(self, set_name: str) -> None:
        """A Terminate of the set was approved or started: the set's held Terminates may go, if nothing else holds
        them (_try_start judges again)."""
        for other in self.active:
            if other.event_type == "Terminate" and other.set_name == set_name:
                other.held = False

    def _fault_domain_busy(self, ev: SimEvent) -> bool:
        busy: Set[DomainKey] = set(ev.domains)
        for other in self.active:
            if other is not ev and other.routine and other.status == "Started":
                busy |= other.domains
        return any(len(domains) > 1 for domains in _by_group(busy).values())

    def _on_started(self, ev: SimEvent) -> None:
        if ev.event_type == "Terminate":
            self._release_terminates(ev.set_name)
        group = ev.group
        if group is not None and not group.started:
            group.started = True
            self._release_dependents(group.spec.key, "started", ev.started_at)  # type: ignore

    def _remove(self, ev: SimEvent, at: datetime) -> None:
        ev.outcome = "completed" if ev.status == "Started" else "cancelled"
        ev.status, ev.removed_at = "Removed", at
        ev.held = False
        self.active.remove(ev)
        if ev.outcome == "completed" and ev.event_type in ("Preempt", "Terminate"):
            for name in ev.resources:
                self.vms[name.lower()].deleted_at = at
        for other in self.active:
            other.held = False  # a freed fault domain may let a held event start
        if ev.group is not None:
            self._domain_done(ev.group, at)

    def _domain_done(self, group: Group, at: datetime) -> None:
        if group.domains:
            gap = self.span(sc.sample(group.spec.gap_s, self.rng))
            self._push(at + gap, "next-domain", group)
        elif not group.finished and all(e.status == "Removed" for e in group.events):
            group.finished = True
            self._release_dependents(group.spec.key, "removed", at)

    def _release_dependents(self, key: str, on: str, at: datetime) -> None:
        for spec in self._dependents.get(key, []):
            if spec.after is not None and spec.after.on == on:
                self._push(at + self.span(sc.sample(spec.after.delay_s, self.rng)), "appear", spec)

    # ------------------------------------------------------------------ documents

    def _visible(self, state: VMState) -> List[SimEvent]:
        name, own_set = state.vm.name.lower(), state.vm.set_name
        return [ev for ev in self.active if ev.set_name == own_set
                and (ev.visible_to is None or name in ev.visible_to)]

    def _refresh(self, at: datetime) -> None:
        """Give every VM whose events changed a new incarnation."""
        for state in self.vms.values():
            visible = self._visible(state)
            signature = tuple((ev.event_id, ev.status) for ev in visible)
            if signature == state.signature and state.incarnation:
                continue
            state.signature = signature
            state.incarnation += 1
            state.revision += 1
            state.events = [ev.wire() for ev in visible]
            state.known_ids.update(ev.event_id for ev in visible)
            if self.options.record_changes:
                state.changes.append({"at": iso_utc(at), "incarnation": state.incarnation,
                                      "events": state.events})

    def vm_state(self, name: str) -> Optional[VMState]:
        return self.vms.get(name.lower())

    def _deleted(self, vm: VM, at: datetime) -> bool:
        state = self.vms[vm.name.lower()]
        return state.deleted_at is not None and state.deleted_at <= at

    def condition(self, name: str, at: datetime) -> Tuple[str, Optional[datetime]]:
        """"up", or why the VM cannot answer right now ("down"/"frozen" until, "deleted")."""
        state = self.vms[name.lower()]
        if state.deleted_at is not None and state.deleted_at <= at:
            return "deleted", None
        if not self.options.simulate_impact:
            return "up", None
        for ev in self.active:
            if ev.status != "Started" or name.lower() not in {r.lower() for r in ev.resources}:
                continue
            impact_end = ev.started_at + ev.impact  # type: ignore
            if ev.event_type in ("Preempt", "Terminate"):
                return "down", None  # shut down for deletion
            if at < impact_end:
                return ("frozen" if ev.event_type == "Freeze" else "down"), impact_end
        return "up", None

    def serve(self, name: str, api_version: str, at: datetime) -> Served:
        """A GET of the scheduled-events document by VM `name` at `at`."""
        at = max(at, self.now)  # the engine's time never goes backwards (wall clocks can)
        self.advance_to(at)
        state = self.vms[name.lower()]
        kind, until = self.condition(name, at)
        if kind != "up":
            return Served(kind=kind, until=until)
        first_call = self._note_request(state, at)
        if state.enabled_at and at < state.enabled_at + self.span(self.options.enabling_s):
            return Served(kind="enabling", first_call=first_call)
        document = render_document(state.incarnation, state.events, api_version)
        if self.options.record_served:
            state.served.append({"at": iso_utc(at), "incarnation": state.incarnation,
                                 "api_version": api_version, "document": document})
        return Served(kind="document", document=document, first_call=first_call)

    def _note_request(self, state: VMState, at: datetime) -> bool:
        """Track enabling; True when this request (re-)enables the service."""
        silent_for = None if state.last_request is None else at - state.last_request
        state.last_request = at
        if silent_for is not None and silent_for < self.span(self.options.disable_after_s):
            return False
        if state.enabled_at is not None and self.options.reset_incarnation_on_reenable:
            state.incarnation = 1  # the service restarts its count: incarnations go backwards
            state.revision += 1
            if self.options.record_changes:
                state.changes.append({"at": iso_utc(at), "incarnation": 1, "events": state.events,
                                      "note": "re-enabled after 24 h without requests"})
        state.enabled_at = at
        return True

    # ------------------------------------------------------------------ approvals

    def approve(self, name: str, body: Any, at: datetime) -> Dict[str, Any]:
        """A POST of StartRequests by VM `name`; raises ApprovalError for a 400."""
        at = max(at, self.now)
        self.advance_to(at)
        state = self.vms[name.lower()]
        entry: Dict[str, Any] = {"at": iso_utc(at), "vm": state.vm.name, "event_ids": [],
                                 "accepted": False, "results": {}}
        self.approvals.append(entry)
        try:
            ids = parse_start_requests(body)
            entry["event_ids"] = ids
            # Exact match: a client must send back the id as served, not a re-cased copy.
            unknown = [i for i in ids if i not in state.known_ids]
            if unknown:
                _note_wrong_case(entry, unknown, state.known_ids)
                raise ApprovalError(f"Bad request. EventId {unknown[0]} is not a scheduled event of this VM")
        except ApprovalError as exc:
            entry["error"] = str(exc)
            raise
        state.last_request = at
        entry["accepted"] = True
        for event_id in ids:
            ev = self._event_by_id(event_id)
            entry["results"][event_id] = self._approve_one(ev, state.vm, at)
            entry.setdefault("in_resources", {})[event_id] = state.vm.name.lower() in {
                r.lower() for r in ev.resources}
        self._fire(at)
        self._refresh(at)
        for event_id in ids:
            if entry["results"][event_id] in ("approved", "waiting_for_other_vms"):
                ev = self._event_by_id(event_id)
                entry["results"][event_id] = "started" if ev.status != "Scheduled" else (
                    ("held_for_other_terminates" if self._terminate_waits(ev, at) else "held_for_fault_domain")
                    if ev.held else entry["results"][event_id])
        return entry

    def _approve_one(self, ev: SimEvent, vm: VM, at: datetime) -> str:
        if ev.status == "Started":
            return "already_started"
        if ev.status == "Removed":
            return "gone"
        if ev.event_type in ADVISORY_TYPES:
            return "advisory_not_approvable"  # an announcement: nothing to start (the client should not have sent it)
        if vm.name not in ev.approved_by:
            ev.approved_by.append(vm.name)
            ev.first_approved_at = ev.first_approved_at or at
        if ev.approval_satisfied() and ev.approval_satisfied_at is None:
            ev.approval_satisfied_at = at
        ev.held = False
        if ev.event_type == "Terminate" and ev.approval_satisfied():
            self._release_terminates(ev.set_name)
        return "approved" if ev.approval_satisfied() else "waiting_for_other_vms"

    def acknowledge(self, event_id: str, set_name: str, at: datetime) -> str:
        """An approval from the control plane (Microsoft.Maintenance acknowledge) for the set (or lone VM) named
        in its path: Azure counts it as every listed VM's approval. -> "approved" | "conflict" (no longer
        Scheduled, or an announcement) | "not_found" (no such event of that scope, or gone)."""
        at = max(at, self.now)
        self.advance_to(at)
        ev = next((e for e in reversed(self.events) if e.event_id.lower() == event_id.lower()
                   and e.appeared_at <= at and (e.set_name or e.resources[0]).lower() == set_name.lower()), None)
        result = "not_found" if ev is None or ev.status == "Removed" else (
            "conflict" if ev.status != "Scheduled" or ev.event_type in ADVISORY_TYPES else "approved")
        self.approvals.append({"at": iso_utc(at), "vm": None, "via": "control_plane", "scope": set_name,
                               "event_ids": [ev.event_id if ev else event_id], "accepted": result == "approved",
                               "results": {ev.event_id if ev else event_id: result}})
        if result == "approved":
            for name in ev.resources:  # type: ignore[union-attr]
                self._approve_one(ev, self.vms[name.lower()].vm, at)  # type: ignore[arg-type]
            self._fire(at)
            self._refresh(at)
        return result

    # ------------------------------------------------------------------ cancellation

    def cancel(self, event_id: str, at: datetime) -> None:
        """Azure withdraws a Scheduled event now (as `cancel_after_s` does on a timer); raises ScenarioError
        for an unknown id or an event that is no longer Scheduled: a started event cannot be cancelled."""
        at = max(at, self.now)
        self.advance_to(at)
        ev = next((e for e in reversed(self.events) if e.event_id == event_id), None)
        if ev is None:
            raise sc.ScenarioError(f"no event {event_id} to cancel; GET /_simulator/events lists them.")
        if ev.status != "Scheduled":
            raise sc.ScenarioError(f"event {event_id} is {ev.status}; only a Scheduled event can be cancelled.")
        ev.cancel_at = at
        self._fire(at)
        self._refresh(at)

    def _event_by_id(self, event_id: str) -> SimEvent:
        return next(ev for ev in reversed(self.events) if ev.event_id == event_id)

    # ------------------------------------------------------------------ ground truth

    def event_summaries(self) -> List[Dict[str, Any]]:
        return [ev.summary() for ev in self.events]


def parse_start_requests(body: Any) -> List[str]:
    """Validate `{"StartRequests": [{"EventId": ...}, ...]}` and return the ids."""
    if not isinstance(body, dict) or not isinstance(body.get("StartRequests"), list):
        raise ApprovalError("Bad request. The body must be a JSON object with a StartRequests list")
    extra = set(body) - {"StartRequests", "DocumentIncarnation"}  # the 2017 edition sent the incarnation
    if extra:
        raise ApprovalError(f"Bad request. Unexpected field {sorted(extra)[0]} in the body")
    if not body["StartRequests"]:
        raise ApprovalError("Bad request. StartRequests is empty")
    ids = []
    for item in body["StartRequests"]:
        if not isinstance(item, dict) or set(item) != {"EventId"} or not isinstance(item["EventId"], str):
            raise ApprovalError("Bad request. Each StartRequests item must be {\"EventId\": \"<id>\"}")
        ids.append(item["EventId"])
    return ids


def _with_id_case(scenario: sc.Scenario) -> List[sc.EventSpec]:
    """The scenario's specs, each carrying the scenario's EventId case unless it sets its own."""
    if scenario.event_id_case is None:
        return list(scenario.specs)
    return [s if s.event_id_case else replace(s, event_id_case=scenario.event_id_case) for s in scenario.specs]


def _by_set(vms: List[VM]) -> List[List[VM]]:
    """`vms` split by set, in order of first appearance (one list for a one-set fleet)."""
    groups: Dict[str, List[VM]] = {}
    for vm in vms:
        groups.setdefault(vm.set_name, []).append(vm)
    return list(groups.values())


def _by_group(keys: Set[DomainKey]) -> Dict[str, Set[Any]]:
    grouped: Dict[str, Set[Any]] = {}
    for group, domain in keys:
        grouped.setdefault(group, set()).add(domain)
    return grouped


def _note_wrong_case(entry: Dict[str, Any], unknown: List[str], known: Set[str]) -> None:
    """Log ids that were served in another case: the answer is the same 400, the log says why."""
    folded = {k.casefold() for k in known}
    wrong = [i for i in unknown if i.casefold() in folded]
    if wrong:
        entry["wrong_case"] = wrong


def _ceil_second(moment: datetime) -> datetime:
    if moment.microsecond == 0:
        return moment
    return moment.replace(microsecond=0) + timedelta(seconds=1)


def fault_domains_in_maintenance(events: Sequence[SimEvent], at: datetime) -> Set[int]:
    """Fault domains with a routine event Started at `at` (for invariant checks)."""
    busy: Set[int] = set()
    for ev in events:
        if ev.routine and ev.started_at and ev.started_at <= at and (ev.removed_at is None or at < ev.removed_at):
            busy |= ev.fault_domains
    return busy


def maintenance_domains(events: Sequence[SimEvent], at: datetime) -> Dict[str, Set[Any]]:
    """Per serialisation group (a set, or ZONAL), the domains with a routine event Started at `at`.

    The invariant is that every value has at most one member. Unlike
    fault_domains_in_maintenance, FD 0 of set A and FD 0 of set B stay apart.
    """
    busy: Set[DomainKey] = set()
    for ev in events:
        if ev.routine and ev.started_at and ev.started_at <= at and (ev.removed_at is None or at < ev.removed_at):
            busy |= ev.domains
    return _by_group(busy)

