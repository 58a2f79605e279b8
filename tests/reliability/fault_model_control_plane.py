"""The fault model with half the fleet on the control-plane transport (docs/guide/control-plane.md).

Every other VM is read from the run's one Resource Graph read and approved with a Microsoft.Maintenance acknowledge,
through the same pure functions the control-plane host uses (control_plane/graph_read.py, host_read.py), the rest through
IMDS as in fault_model.py; the judges are the same ledger and engine record. On top of fault_model.py's faults:

- Resource Graph lags: each read shows the fleet as it was up to LAG_S ago (the simulator's rows as of then), so an
  event appears, starts and ends late there, and an approved event still shows Scheduled;
- a read goes back in time (`back`): one shows a moment up to BACK_S ago, older than the read before it (replicas
  of an eventually consistent store), so an event a host prepared for may be missing from it;
- the whole read fails (`read`): every control-plane host is unread;
- Resource Graph pages: each read comes in answers of 2, 5 or 1,000 rows, read to the end by the module's own
  paging (control_plane/graph_paging.py) over the simulator's pages.

event_grid_run drives the same fleet from Event Grid instead of a schedule (the scheduled_events_event_grid
rulebook): each status change delivered after a drawn delay (so a Completed may come before its Started), some
delivered twice, some never (the faulty runs), each through the event_grid_hosts filter's own functions (a repeat
starts nothing) into a cycle on every expected host, whose Resource Graph read waits until it shows the notified
event (tasks/control_plane.py's read_catching_up, the module's own wait); a cycle over every host every
FALLBACK_S, as the docs ask, catches what was never delivered.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Set, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_paging import (
    GraphIncomplete,
    all_rows,
    events_query,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_read import read_of_rows
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_read import (
    ControlPlaneBlind,
    acknowledgements,
    check_host,
    document_for,
    facts_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.wake_up import hosts_to_wake
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    empty_state,
    with_approved,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import plan_approval
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import annotate, iso_utc
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    info_argument_spec,
    read_catching_up,
    resource_groups,
)
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.store.url import awx_refusal
from imds_simulator import control_plane
from imds_simulator.control_plane import GraphSettings, deliveries
from tests.reliability.fault_model import FAULTS, Cycle, FleetRun, Faults, fleet_run

LAG_S = 60.0  # Resource Graph's lag: up to about a minute
PAGE_ROWS = (2, 5, 1000)  # rows per Resource Graph answer, drawn per read: small pages make every read page
BACK_S = 300.0  # a read that goes back shows a moment up to this long ago (Azure's pages on other tables: 5 min)
MAX_AGE_S = 60.0  # the role's maintenance_cycle_control_plane_max_age
BACK = 0.1  # in the faulty runs, a read goes back in time this often
KEPT_S = 6 * 3600.0  # ended events older than this are left out of the simulated table (speed); Resource Graph
#                     keeps them for an undocumented while: the model assumes 6 hours


@dataclass
class ControlPlaneRun(FleetRun):
    back: float = 0.0
    on_control_plane: Set[str] = field(default_factory=set)
    graph_as_of: Optional[Any] = None  # the newest moment a read has shown
    graph_reads: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # run owner -> its one read
    read_as_of: Dict[str, datetime] = field(default_factory=dict)  # run owner -> the newest moment shown by then
    hidden_by_lag: Set[Tuple[str, str]] = field(default_factory=set)  # (run owner, event) could_show let pass
    imds_shown: Dict[str, Set[str]] = field(default_factory=dict)  # run owner -> the events its IMDS reads showed
    blind: int = 0  # control-plane claims the read could not vouch for
    acknowledged: int = 0

    def silent_when_gone(self, vm: str) -> bool:
        return vm not in self.on_control_plane  # a Resource Graph read's silence is not the VM's

    def graph_read(self, vm_ids: Dict[str, str]) -> Dict[str, Any]:
        """One Resource Graph read now, as of a lagging moment (never before the newest shown, unless it goes back)."""
        if self.chance(self.faults.read):
            return {"failed": True, "msg": "Resource Graph answered 429"}
        newest = self.now - timedelta(seconds=self.rng.uniform(0, LAG_S))
        if self.graph_as_of is not None and self.chance(self.back):
            as_of = self.now - timedelta(seconds=self.rng.uniform(0, BACK_S))
        else:
            as_of = newest if self.graph_as_of is None else max(newest, self.graph_as_of)
        self.graph_as_of = max(as_of, self.graph_as_of or as_of)
        subscription = self.engine.fleet.vms[0].resource_id.split("/")[2]
        recent, lag_s = self.recent(), (self.now - as_of).total_seconds()
        pages = GraphSettings(page_rows=self.rng.choice(PAGE_ROWS), quota=0)

        def post(body: Dict[str, Any]) -> Any:
            status, answer, *headers = control_plane._graph(recent, "2021-03-01", json.dumps(body).encode(), self.now,
                                                            lag_s, pages, "operator")
            return status, answer, headers[0] if headers else {}
        # The collection's own paging (the module's), over the simulator's pages: a read cut short is no read
        try:
            rows = all_rows(post, [subscription], events_query(resource_groups(vm_ids)), lambda s: None)
        except GraphIncomplete as exc:
            return {"failed": True, "msg": str(exc)}
        return read_of_rows(rows, iso_utc(self.now), [subscription], vm_ids, host_index(vm_ids), lambda text: None)

    def recent(self) -> SimpleNamespace:
        """The engine, now, with the events ended longer than KEPT_S ago left out (speed)."""
        self.engine.advance_to(self.now)
        return SimpleNamespace(fleet=self.engine.fleet, events=[
            e for e in self.engine.events
            if e.removed_at is None or (self.now - e.removed_at).total_seconds() < KEPT_S])

    def vm_id(self, vm: str) -> str:
        return self.engine.vm_state(vm).vm.resource_id

    def document(self, vm: str, read: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """The document the host serves the claim (None: the host is blind, its read fails)."""
        try:
            check_host(read, vm, self.vm_id(vm), self.now, MAX_AGE_S, self.states.get(vm))
        except ControlPlaneBlind:
            self.blind += 1
            return None
        return document_for(read, vm, self.now)

    def read(self, vm: str, cycle: Cycle) -> Dict[str, Any]:
        if vm not in self.on_control_plane:
            served = super().read(vm, cycle)
            self.imds_shown.setdefault(cycle.owner, set()).update(
                e["event_id"].upper() for e in served.get("events") or ())
            return served
        if cycle.owner not in self.graph_reads:  # the role's run_once read, before the first claim
            self.graph_reads[cycle.owner] = self.first_read(cycle)
            if self.graph_as_of is not None:
                self.read_as_of[cycle.owner] = self.graph_as_of
        parsed = self.document(vm, self.graph_reads[cycle.owner])
        if parsed is None:
            return {"failed": True}
        spec = self.engine.vm_state(vm).vm
        this_vm = facts_for(vm, spec.resource_id, spec.fault_domain, spec.zone)
        unreadable = self.chance(self.faults.unreadable)
        events = annotate(parsed["events"], this_vm["name"], self.now)
        return {"events": events, "events_for_this_vm": [e for e in events if e["affects_this_vm"]],
                "document_available": True, "document_incarnation": parsed["document_incarnation"],
                "this_vm": this_vm, "state": None if unreadable else self.states.get(vm),
                "state_status": "corrupt" if unreadable else ("loaded" if self.states.get(vm) else "missing"),
                "state_path": f"/controller/{vm}/state.json"}

    def could_show(self, event: Any, cycle: Cycle) -> bool:
        """An event that appeared after the newest moment any Resource Graph read had shown when the run read was
        shown to the run only if one of its IMDS reads showed it: Resource Graph's lag hides it
        (docs/guide/control-plane.md: the control plane never sees a Spot eviction in time), as an event that
        appeared after the run planned is hidden from all, and the VMs that see it through IMDS may not have the news
        yet (late news). A read gone back in time hides nothing more here. Counted (hidden_by_lag)."""
        if not super().could_show(event, cycle):
            return False
        as_of = self.read_as_of.get(cycle.owner)
        if as_of is None or event.appeared_at <= as_of:
            return True
        if event.event_id.upper() in self.imds_shown.get(cycle.owner, set()):
            return True
        self.hidden_by_lag.add((cycle.owner, event.event_id))
        return False

    def first_read(self, cycle: Cycle) -> Dict[str, Any]:
        return self.graph_read({h: self.vm_id(h) for h in sorted(self.on_control_plane)})

    def approve(self, vm: str, cycle: Cycle, planned: List[Dict[str, Any]], saves: bool) -> List[str]:
        """scheduled_events_approve on the controller: a fresh read of this VM, decide, record, acknowledge."""
        if vm not in self.on_control_plane:
            return super().approve(vm, cycle, planned, saves)
        read = self.graph_read({vm: self.vm_id(vm)})
        parsed = self.document(vm, read)
        if parsed is None:
            cycle.alive.discard(vm)
            return []
        decided = plan_approval(parsed, [p["event_id"] for p in planned], vm, missing="ignore", planned=planned)
        if decided.error or not decided.approve or not self.renew(vm, cycle):
            return [] if decided.error else list(decided.already_started)
        if saves:  # write-ahead, on the controller, before the acknowledge
            self.states[vm] = with_approved(self.states.get(vm) or empty_state(), decided.approve)
        self.step(cycle)
        if vm not in cycle.alive:
            return []
        roll = self.rng.random() if self.now < self.fault_until else 1.0
        for scope, ids in sorted(acknowledgements(read, vm, decided.approve).items()):
            if roll < self.faults.post and roll >= self.faults.post / 2:
                break  # it never reached Azure
            for event_id in ids:
                if self.engine.acknowledge(event_id, scope.rsplit("/", 1)[-1], self.now) == "approved":
                    self.acknowledged += 1
                    self.approved(self.engine.approvals[-1])
        if roll < self.faults.post:
            cycle.alive.discard(vm)
            return []
        return decided.approve + decided.already_started


CONTROL_PLANE_FAULTS = {"none": (FAULTS["none"], 0.0),
                        "everything fails sometimes": (FAULTS["everything fails sometimes"], BACK)}


def control_plane_run(seed: int, faults: Faults, back: float, period_s: int, hours: float = 24.0,
                      fleet: str = "one set", kind: type = ControlPlaneRun, **fields: Any) -> ControlPlaneRun:
    """One fleet-day of scheduled runs, every other VM on the control plane (a `kind` of run, given `fields`)."""
    run = fleet_run(kind, seed, faults, hours, fleet, task_s=2.0, back=back, **fields)
    run.on_control_plane = set(run.vms()[::2])
    return on_schedule(run, period_s, hours)


def on_schedule(run: Any, period_s: int, hours: float) -> Any:
    """`run`'s cycles every `period_s` for `hours`, then its end."""
    end, at = run.now + timedelta(hours=hours), run.now
    while at < end:
        run.cycle(at)
        at += timedelta(seconds=period_s)
    run.finish(at, period_s)
    return run


DELIVERY_S = (1.0, 90.0)  # Event Grid and Service Bus: a delivery's delay, drawn (an assumption; none published)
FALLBACK_S = 900  # a scheduled cycle over every host besides the rulebook, as docs/guide/control-plane.md asks
STEP_S = 10  # how often the model's queue is looked at
EVENT_GRID_FAULTS = {"none": (0.0, 0.0), "everything fails sometimes": (0.05, 0.05)}  # (missed, delivered twice)


WAIT_S = info_argument_spec()["wait_seconds"]["default"]  # the module's wait for Resource Graph to catch up


class _ReadFailed(Exception):
    """A failed Resource Graph read inside the wait (the module raises TaskFailed there)."""


@dataclass
class EventGridRun(ControlPlaneRun):
    missed: float = 0.0
    twice: float = 0.0
    notified: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # run owner -> what it was started for
    queue: List[Any] = field(default_factory=list)  # (delivered at, n, delivery)
    drawn: Set[str] = field(default_factory=set)  # deliveries whose fate is drawn
    notifications: int = 0
    waits: int = 0  # reads taken again because Resource Graph did not show the notified event yet

    def first_read(self, cycle: Cycle) -> Dict[str, Any]:
        """scheduled_events_control_plane_info's own wait (read_catching_up), on the model's clock; a failed read
        ends it, as the module's TaskFailed does."""
        begun = self.now

        def read() -> Dict[str, Any]:
            got = ControlPlaneRun.first_read(self, cycle)
            if got.get("failed"):
                raise _ReadFailed(got)
            return got

        def sleep(seconds: float) -> None:
            self.now += timedelta(seconds=seconds)
            self.waits += 1
        try:
            return read_catching_up(read, self.notified.get(cycle.owner), WAIT_S, sleep=sleep,
                                    clock=lambda: (self.now - begun).total_seconds())
        except _ReadFailed as failed:
            return failed.args[0]

    def due(self) -> List[Dict[str, Any]]:
        """The deliveries whose time has come, in the order they come: each status change once it happened, after
        a drawn delay, sometimes twice, sometimes never (before fault_until)."""
        faulty = self.now < self.fault_until
        for delivery in deliveries(self.recent(), self.now):
            if delivery["id"] in self.drawn:
                continue
            self.drawn.add(delivery["id"])
            if faulty and self.chance(self.missed):
                continue
            copies = 2 if faulty and self.chance(self.twice) else 1
            for _ in range(copies):
                at = self.now + timedelta(seconds=self.rng.uniform(*DELIVERY_S))
                self.queue.append((at, len(self.queue), delivery))
        self.queue.sort(key=lambda item: item[:2])
        came = [d for at, _n, d in self.queue if at <= self.now]
        self.queue = [item for item in self.queue if item[0] > self.now]
        return came


def event_grid_run(seed: int, faults: Faults, back: float, missed: float, twice: float, hours: float = 24.0,
                   fleet: str = "one set") -> EventGridRun:
    """One fleet-day of the Event Grid rulebook (a cycle per notification it lets through, on the hosts it lists)
    and a fallback cycle every FALLBACK_S, every other VM on the control plane."""
    run = fleet_run(EventGridRun, seed, faults, hours, fleet, task_s=2.0, back=back, missed=missed, twice=twice)
    run.on_control_plane = set(run.vms()[::2])
    vm_ids = {vm: run.vm_id(vm) for vm in run.vms()}
    index, seen = host_index(vm_ids), []  # the filter's index and its memory of delivery ids
    end, at, fallback = run.now + timedelta(hours=hours), run.now, run.now
    while at < end:
        run.now = max(run.now, at)
        for delivery in run.due():
            woken = hosts_to_wake(delivery, index, sorted(vm_ids), seen)
            if woken is None:
                continue
            run.notifications += 1
            cycle = run.new_cycle(woken["hosts"])
            run.notified[cycle.owner] = woken
            run.run_to_end(cycle)
        if run.now >= fallback:
            run.cycle(run.now)
            fallback = run.now + timedelta(seconds=FALLBACK_S)
        at = max(at + timedelta(seconds=STEP_S), run.now)
    run.finish(at, FALLBACK_S)
    return run


HOME = "/home/runner"  # an AWX job's home, fresh for every job
DEFAULT_STATE_DIR = HOME + "/.ansible/azure_imds_scheduled_events/control_plane"  # the role's defaults, ~ expanded
DEFAULT_MEMORY = HOME + "/.ansible/azure_imds_scheduled_events/vms-azure_vms.json"


@dataclass
class FreshHomeRun(ControlPlaneRun):
    """Scheduled AWX jobs (issue 43, finding 2): each starts with a fresh home, so what the controller kept under it
    (control-plane hosts' state and VM locks, the memory of VMs) is gone for the next job, unless the state store
    (`store`, maintenance_cycle_state_store) is elsewhere. Each job asks the role's own refusal first
    (store/url.awx_refusal); `obey_refusal` False is the model's mutant, a job that runs anyway."""
    store: str = "file:"
    obey_refusal: bool = True
    jobs: int = 0
    jobs_refused: int = 0
    homes_lost: int = 0

    def cycle(self, at: datetime) -> None:
        self.jobs += 1
        refused = awx_refusal(self.store, str(self.jobs), HOME, DEFAULT_STATE_DIR, DEFAULT_MEMORY)
        if refused and self.obey_refusal:
            self.jobs_refused += 1  # stopped before any read: the VMs are left to Azure, nothing is drained
            return
        super().cycle(at)
        # Where the store lives is the model's own knowledge, never the refusal's answer (a refusal that misses a
        # store under the home must still lose it): "file:" keeps the role's default paths, under the home.
        if self.store == "file:":
            self.lose_home()

    def lose_home(self) -> None:
        """The job's container is gone: everything the controller kept in its home with it."""
        self.homes_lost += 1
        for vm in self.on_control_plane:
            self.states.pop(vm, None)
            self.locks.pop(vm, None)
        self.memory.clear()
        self.last_vm.clear()


def fresh_home_run(seed: int, faults: Faults, back: float, store: str, obey_refusal: bool = True,
                   period_s: int = 300, hours: float = 24.0, fleet: str = "one set") -> FreshHomeRun:
    """One fleet-day of AWX jobs on a schedule, every other VM on the control plane, the store as given."""
    return control_plane_run(seed, faults, back, period_s, hours, fleet, FreshHomeRun, store=store,
                             obey_refusal=obey_refusal)
