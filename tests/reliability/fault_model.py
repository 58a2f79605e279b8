"""The whole-system fault model: the maintenance cycle over simulated fleets, judged by what happened to the VMs.

The driver runs the real pure functions the role calls through its filters and modules (cycle/plan.py's
plan_cycle, confirm_approvals and state_for_step; approval.plan_approval; cycle/state.py's load/with_approved, as
scheduled_events_approve records an approval before its POST) in the role's order, against the simulator's engine
in virtual time:

    claim (lock and read, one host at a time) -> plan -> recover (owed, before any prepare) -> record the prepares
    -> prepare tasks -> save -> approve (renew the lease, record, then POST) -> save -> release the locks

Each run of the cycle is a generator over those steps (FleetRun.steps): here one scheduled run over the fleet goes
to its end at once; fault_model_event_driven.py interleaves several, chosen by the event source's fleet view.

with faults at every step: reads that fail, a run killed (every later step of the cycle does not happen) or a
host lost (every later step on it does not happen) before, during and after the prepare tasks, around the POST
and during recover; prepares, POSTs (reached or not) and recovers that fail; an event's Resources widened while
hosts prepare; a status the code does not know served for a Started event; a state file that cannot be read for
a cycle; a VM whose IMDS still serves the document before the latest (news reaches the VMs at different moments).
A scheduled run's clock moves at each point between its tasks (TASK_S), so events start and end while it goes on.
The scenario overlaps events on one host (short Freezes and Reboots of fault-domain walks, hardware
failures beside pending Reboots, user reboots and redeploys, cancellations, Preempts and Terminates).

The verdicts never come from the collection's own state. They come from a ledger that the stand-in prepare and
recover tasks write per VM (one drain per VM, as a load balancer has one backend entry: a recover undoes it,
whatever event it ran for) and from the engine's record of approvals and of the events' lives:

- approved_undrained: no event is approved while a listed VM of the target is not drained for it (short Freezes,
  approved at once without a drain by policy, excepted);
- over_the_limit: per set, a drain or an approval never brings a fault domain into maintenance (a drained VM, or a
  VM in a Started event; a deleted VM is in none) beyond the limit (one), except an event prepared as its NotBefore
  was near (Azure starts it then, prepared or not), which is counted (`late_drains`) and reported; a run's drains
  are judged against the events a read of that run could show (not one that appeared after it planned);
- approved_early: such an event is left to NotBefore, never approved;
- left_drained: every drain is undone within a bounded time after its events are gone and the faults stop (the
  events a prepare began for since the VM's last undrain count as its events: the cycle cannot tell how far a
  prepare went that a kill or a failure cut short, so it keeps the VM drained for them until they are gone);
- undone_while_pending: no drain is undone while an event it was made for still lists the VM;
- approved_twice: no approval is sent twice (the approval is on record before its POST);
- unlocked_side_by_side (fault_model_event_driven.py): cycles that run side by side without VM locks drain and
  approve nothing (each refuses before it acts).
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Set, Tuple

from ansible_collections.azure_imds.scheduled_events.plugins.filter.cycle import read_vms
from ansible_collections.azure_imds.scheduled_events.plugins.filter.read_quiet import read_quiet
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import plan_approval
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import (
    DELETE,
    LockError,
    claim,
    refresh,
    release,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.plan import confirm_approvals, plan_cycle
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import PolicyError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.split_sets import outside_vms
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.views import DELETED, host_views
from ansible_collections.azure_imds.scheduled_events.plugins.plugin_utils.vm_memory import update
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.transition import AFTER_RECOVER, BEFORE_PREPARE, PREPARED, state_for_step
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import (
    empty_state,
    with_approved,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import annotate, parse_document
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.info import _quiet
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.quiet import owes_work
from imds_simulator import scenario as sc
from imds_simulator.engine import Engine, EngineOptions
from imds_simulator.fleet import FleetSpec, build_fleet
from tools.soak import busier_fleet_mix

START = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)
API_VERSION = "2020-07-01"
LIMIT = 1
SHORT_FREEZE_S = 10  # the policy's approve_freeze_max_seconds: approved at once, without a drain
POLICY = {"max_fault_domains_in_maintenance": LIMIT, "prepare_configured": True, "prepare_anyway_seconds": 480.0,
          "approve_freeze_max_seconds": SHORT_FREEZE_S}
SETTLE_CYCLES = 12  # after the faults stop, a drain whose events are gone is undone within this many cycles
LEASE_S = 900.0  # the role's maintenance_cycle_lock_seconds
TASK_S = 2.0  # a scheduled run's task on its hosts (a drain, a save, a POST): a 5 s Freeze may end, or an event
#              start at its NotBefore, between a run's plan and its prepare tasks


@dataclass
class Faults:
    read: float = 0.0       # a host's read fails: it sits the cycle out
    prepare: float = 0.0    # a prepare task fails (after it drained): the host fails
    post: float = 0.0       # the approval POST fails (half of them after reaching IMDS): the leader fails
    recover: float = 0.0    # a recover task fails (half of them after undoing the drain): the host fails
    widen: float = 0.0      # an event's Resources gains a VM while hosts prepare
    lost: float = 0.0       # at each step, a host is lost (unreachable): nothing more runs on it this cycle
    kill: float = 0.0       # at each step, the run is killed (SIGKILL, a cancelled job): nothing more runs at all
    kill_in_prepare: float = 0.0  # killed while a prepare task runs, before it drained: prepare tasks take most of a
    #                               cycle's time (a drain waits out open connections), so a kill lands there most
    unknown: float = 0.0    # a cycle's reads serve Started events with a status this code does not know
    unreadable: float = 0.0  # a host's state file cannot be read this cycle (the file itself stays intact)
    stale: float = 0.0      # a host's IMDS still serves the document it served before (the platform's news reaches
    #                         the VMs of a set at different moments: one host's read shows an event another's lacks)


class Killed(Exception):
    """The run died: the rest of this cycle does not happen."""


@dataclass
class Ledger:
    """What the stand-in prepare and recover tasks did to each VM: the ground truth of drains."""
    drained_for: Dict[str, Set[str]] = field(default_factory=dict)  # VM -> events its one drain was made for
    begun: Dict[str, Set[str]] = field(default_factory=dict)  # VM -> events a prepare began for since its last undrain
    drains: int = 0
    undrains: int = 0

    def drained(self, vm: str) -> bool:
        return bool(self.drained_for.get(vm))


@dataclass
class Verdict:
    problems: List[str] = field(default_factory=list)
    late_drains: int = 0
    approvals: int = 0
    kills: int = 0

    def add(self, kind: str, text: str) -> None:
        self.problems.append(f"{kind}: {text}")


@dataclass
class Cycle:
    """One run of the role (a playbook run): its hosts, and what it has done so far. Several may run at once
    (the event-driven source's max_parallel_runs), their steps interleaved."""
    owner: str                      # the owner of the VM locks it takes
    hosts: List[str]
    target: List[str] = field(default_factory=list)  # every VM of its target (an event-driven run's limit is less)
    leave_alone: Set[str] = field(default_factory=set)  # in the play, not contacted (counted busy)
    alive: Set[str] = field(default_factory=set)   # hosts still in the play
    lost: Set[str] = field(default_factory=set)    # unreachable: nothing more runs on them, their lock stays
    read: Set[str] = field(default_factory=set)    # hosts its claim reached (its `always` releases their locks)
    unknown_status: bool = False    # its reads serve Started events with a status this code does not know
    before_prepare: Set[Tuple[str, str, int]] = field(default_factory=set)  # busy domains before its prepares
    drains: List[Tuple[str, str, bool]] = field(default_factory=list)  # (VM, event, late) drained by its prepares
    drained_gone: Set[str] = field(default_factory=set)  # VMs of those already deleted when drained
    busy_at_last_drain: Set[Tuple[str, str, int]] = field(default_factory=set)  # the domains in maintenance then
    planned_at: Optional[datetime] = None  # when it planned: no read of it could show an event that appeared later
    read_quiet: List[str] = field(default_factory=list)  # what its done report says it found or left quiet
    saved: Dict[str, Dict[str, Any]] = field(default_factory=dict)  # each host's last save (maintenance_cycle_saved)
    deleted: List[str] = field(default_factory=list)  # what its done report says its plan took as deleted


@dataclass
class FleetRun:
    engine: Engine
    faults: Faults
    rng: random.Random
    fault_until: datetime
    locking: bool = False  # the runs take VM locks (scheduled_events_claim with lease_seconds)
    task_s: float = 0.0  # scheduled runs: the clock moves this much at each point between tasks (events start
    #                      and end while a run goes on); event-driven runs move it by ticks instead
    policy: Dict[str, Any] = field(default_factory=lambda: dict(POLICY))
    ledger: Ledger = field(default_factory=Ledger)
    verdict: Verdict = field(default_factory=Verdict)
    states: Dict[str, Optional[Dict[str, Any]]] = field(default_factory=dict)
    locks: Dict[str, str] = field(default_factory=dict)  # VM -> its lock file's text
    last_vm: Dict[str, Dict[str, Any]] = field(default_factory=dict)
    memory: Dict[Tuple[str, ...], Optional[str]] = field(default_factory=dict)  # target -> its vm_memory file
    late_events: Set[str] = field(default_factory=set)  # events a VM was drained for late (NotBefore near)
    sent: Set[str] = field(default_factory=set)  # events whose approval reached IMDS
    parsed: Dict[Tuple[str, int], Optional[Dict[str, Any]]] = field(default_factory=dict)  # (VM, revision): document
    previous: Dict[str, Tuple[int, Optional[Dict[str, Any]]]] = field(default_factory=dict)  # VM -> (revision, document)
    #                                                           before its latest
    seen: Dict[str, int] = field(default_factory=dict)  # VM -> the newest revision anything on it was served
    now: datetime = START
    cycles: int = 0
    refusals: int = 0  # cycles the plan refused (PolicyError) before anything was done
    split_refused: int = 0  # events a plan refused because their set has VMs outside its target (split_sets)
    taken_as_deleted: int = 0  # hosts a plan took as deleted (their own Preempt or Terminate seen Started, then silent)

    # ----------------------------------------------------------------------------------- ground truth

    def domain(self, vm: str) -> Tuple[str, str, int]:
        spec = self.engine.vm_state(vm).vm
        return (spec.set_name, spec.zone, spec.fault_domain)

    def truth(self, event_id: str) -> Any:
        return next(e for e in reversed(self.engine.events) if e.event_id == event_id)

    def pending(self, event_id: str, vm: str) -> bool:
        """Whether the event still lists the VM and is not over (ground truth)."""
        event = self.truth(event_id)
        return event.status in ("Scheduled", "Started") and vm.lower() in {r.lower() for r in event.resources}

    def exists(self, vm: str) -> bool:
        """Whether the VM is one of the fleet's and not deleted (by its own Preempt or Terminate) by now; the
        engine advanced to now by the caller, once."""
        state = self.engine.vm_state(vm)
        return state is not None and (state.deleted_at is None or state.deleted_at > self.now)

    def busy_domains(self, cycle: Optional[Cycle] = None) -> Set[Tuple[str, str, int]]:
        """Fault domains with a drained VM or a VM in a Started event (with `cycle`, only events a read of that run
        could show: could_show). A deleted VM is in no fault domain: it is gone, drained or not (its drain is never
        undone, and its event may stay Started a while after)."""
        self.engine.advance_to(self.now)
        busy = {self.domain(vm) for vm, events in self.ledger.drained_for.items() if events and self.exists(vm)}
        for event in self.engine.active:
            if event.status == "Started" and (cycle is None or self.could_show(event, cycle)):
                busy |= {self.domain(vm) for vm in event.resources if self.exists(vm)}
        return busy

    def could_show(self, event: Any, cycle: Cycle) -> bool:
        """Whether a read of `cycle` could show `event`: not one that appeared only after it planned."""
        return cycle.planned_at is None or event.appeared_at <= cycle.planned_at

    def listed_domains(self, event_id: str) -> Set[Tuple[str, str, int]]:
        self.engine.advance_to(self.now)
        return {self.domain(vm) for vm in self.truth(event_id).resources if self.exists(vm)}

    def over_limit(self, new: Set[Tuple[str, str, int]], event_id: str) -> List[Tuple[str, str, int]]:
        """The busy domains of the same sets, when `new` brings a domain into maintenance beyond the limit."""
        sets = {d[0] for d in new}
        others = {d for d in self.busy_domains() if d[0] in sets}
        if not (new - others) or not (others - self.listed_domains(event_id)):
            return []  # already in maintenance, or nothing else is (the event may span its own domains)
        return sorted(others) if len(others | new) > LIMIT else []

    # ------------------------------------------------------------------------- the stand-in tasks

    def drain(self, cycle: Cycle, vm: str, event_id: str, late: bool) -> None:
        """A prepare task drained the VM (judged with the run's other prepares: judge_prepares)."""
        cycle.drains.append((vm, event_id, late))
        self.engine.advance_to(self.now)
        if not self.exists(vm):
            cycle.drained_gone.add(vm)
        if late:
            self.late_events.add(event_id)
        self.ledger.drained_for.setdefault(vm, set()).add(event_id)
        self.ledger.drains += 1
        # An event that appeared after the run planned (a hardware failure, Started at once) is Azure's doing, not
        # the run's: no read of the run could show it. It still counts against every approval.
        cycle.busy_at_last_drain = self.busy_domains(cycle)

    def judge_prepares(self, cycle: Cycle) -> None:
        """over_the_limit for the drains of a run's prepare tasks, which run in parallel on their hosts, so
        their order is no one's: a fault domain they brought into maintenance is over the limit when the set has
        more busy domains than the limit once the last of them was made (another run's drains count; an event that
        Azure started only after that, or that appeared only after the run planned, a hardware failure, was none of
        the run's doing), unless an event it was
        drained for lists all of them (an event that spans domains, alone), or it was drained only for events
        prepared late (counted apart)."""
        fresh: Dict[Tuple[str, str, int], List[Tuple[str, bool]]] = {}
        for vm, event_id, late in cycle.drains:
            # A VM deleted when drained is in no fault domain (busy_domains): its drain brings none into maintenance
            if vm not in cycle.drained_gone and self.domain(vm) not in cycle.before_prepare:
                fresh.setdefault(self.domain(vm), []).append((event_id, late))
        late_only = {d for d, drains in fresh.items() if all(late for _e, late in drains)}
        busy = cycle.busy_at_last_drain - late_only
        for domain, drains in sorted(fresh.items()):
            same_set = {d for d in busy | late_only if d[0] == domain[0]}
            if len(same_set) <= LIMIT:
                continue
            if domain in late_only:
                self.verdict.late_drains += 1
                continue
            others = {d for d in busy if d[0] == domain[0]}
            if all(others - self.listed_domains(e) for e, late in drains if not late):
                self.verdict.add("over_the_limit", f"{domain} drained at {self.now} for "
                                                   f"{sorted({e for e, _l in drains})} while "
                                                   f"{sorted(others - {domain})} were in maintenance")
        cycle.drains, cycle.drained_gone = [], set()

    def undrain(self, vm: str) -> None:
        for event_id in sorted(self.ledger.drained_for.get(vm, ())):
            if self.pending(event_id, vm):
                self.verdict.add("undone_while_pending", f"{vm}'s drain undone at {self.now} while {event_id} "
                                                         f"still lists it ({self.truth(event_id).status})")
        self.ledger.begun.pop(vm, None)
        if self.ledger.drained_for.pop(vm, None):
            self.ledger.undrains += 1

    def approved(self, entry: Dict[str, Any]) -> None:
        """Judge an approval the engine accepted."""
        at = self.now
        for event_id in entry["event_ids"]:
            event = self.truth(event_id)
            self.verdict.approvals += 1
            if event_id in self.sent:
                self.verdict.add("approved_twice", f"{event_id} approved again at {at}")
            self.sent.add(event_id)
            if event.event_type == "Freeze" and 0 <= event.duration_s <= SHORT_FREEZE_S:
                continue  # approved at once, without a drain, by policy
            for vm in event.resources:
                if self.engine.vm_state(vm) and event_id not in self.ledger.drained_for.get(vm, ()):
                    self.verdict.add("approved_undrained", f"{event_id} approved at {at} while {vm} was not "
                                                           "drained for it")
            others = self.over_limit(self.listed_domains(event_id), event_id)
            if others:
                self.verdict.add("over_the_limit", f"{event_id} approved at {at} while {others} were in maintenance")
            if event_id in self.late_events:
                self.verdict.add("approved_early", f"{event_id}, prepared anyway as its NotBefore was near, approved "
                                                   f"at {at}, before its NotBefore {event.not_before}")

    # ----------------------------------------------------------------------------------- faults

    def chance(self, p: float) -> bool:
        return self.now < self.fault_until and p > 0 and self.rng.random() < p

    def step(self, cycle: Cycle) -> None:
        """A point between two tasks: time passes, the run may be killed, and each host may be lost."""
        self.now += timedelta(seconds=self.task_s)
        if self.chance(self.faults.kill):
            self.verdict.kills += 1
            raise Killed()
        for vm in sorted(cycle.alive):
            if self.chance(self.faults.lost):
                cycle.alive.discard(vm)
                cycle.lost.add(vm)

    # ----------------------------------------------------------------------------------- the VM locks

    def claim(self, vm: str, cycle: Cycle) -> Dict[str, Any]:
        """scheduled_events_claim: take the run's lock (when locking), read under it; a quiet VM, or a failed
        read, gets the lock back in the same call."""
        lock: Dict[str, Any] = {}
        if self.locking:
            text, outcome = claim(self.locks.get(vm), cycle.owner, self.now, LEASE_S, f"{vm}.lock")
            if text is not None:
                self.locks[vm] = text
            lock = {"taken": outcome["taken"], "held_by": outcome["held_by"]}
        cycle.read.add(vm)
        result = self.read(vm, cycle)
        result["lock"] = lock
        result["quiet"] = "events" in result and self.quiet(result)
        if lock.get("taken") and (result["quiet"] or "events" not in result):
            self.give_back(vm, cycle)
        return result

    def renew(self, vm: str, cycle: Cycle) -> bool:
        """The lease renewed before a step that changes the VM (save, recover, approve); False when the run no
        longer holds the VM (its lease ran out and another run took it): the host fails, nothing is done."""
        if not self.locking:
            return True
        try:
            self.locks[vm] = refresh(self.locks.get(vm), cycle.owner, self.now, LEASE_S, f"{vm}.lock")
        except LockError:
            cycle.alive.discard(vm)
            return False
        return True

    def give_back(self, vm: str, cycle: Cycle) -> None:
        if vm in self.locks and release(self.locks[vm], cycle.owner) is DELETE:
            del self.locks[vm]

    # ----------------------------------------------------------------------------------- the cycle

    def read(self, vm: str, cycle: Cycle) -> Dict[str, Any]:
        if self.chance(self.faults.read):
            return {"failed": True}
        at = self.now
        served = self.engine.serve(vm, API_VERSION, at)
        if served.kind not in ("document", "enabling"):
            return {"failed": True}
        parsed = self.parse(vm, served)
        revision = self.engine.vm_state(vm).revision
        if self.late_news(vm, revision):
            revision, parsed = self.previous[vm]  # the news has not reached this VM's IMDS yet
        self.saw(vm, revision)
        events = annotate(parsed["events"], vm, at) if parsed else []
        if cycle.unknown_status:
            events = [dict(e, event_status="Paused", known_status=False) if e["event_status"] == "Started" else e
                      for e in events]
        spec = self.engine.vm_state(vm).vm
        unreadable = self.chance(self.faults.unreadable)
        return {"events": events, "events_for_this_vm": [e for e in events if e["affects_this_vm"]],
                "document_available": parsed is not None,
                "document_incarnation": parsed["document_incarnation"] if parsed else None,
                "this_vm": {"name": vm, "fault_domain": spec.fault_domain, "zone": spec.zone,
                            "vm_scale_set_name": spec.vm_scale_set_name},
                "state": None if unreadable else self.states.get(vm),
                "state_status": "corrupt" if unreadable else ("loaded" if self.states.get(vm) else "missing"),
                "state_path": f"/var/lib/{vm}/state.json"}

    def parse(self, vm: str, served: Any) -> Optional[Dict[str, Any]]:
        """The module's parse of a served document, once per document (the engine's revision tells a change)."""
        if served.document is None:
            return None
        key = (vm, self.engine.vm_state(vm).revision)
        if key not in self.parsed:
            self.previous.update((vm, (k[1], v)) for k, v in self.parsed.items() if k[0] == vm)
            self.parsed = {k: v for k, v in self.parsed.items() if k[0] != vm}
            self.parsed[key] = parse_document(json.dumps(served.document))
        return self.parsed[key]

    def late_news(self, vm: str, revision: int) -> bool:
        """Whether this read is served the VM's document before its latest: never once anything on the VM was served
        the latest (a VM's IMDS does not go back), nor before a first older one exists."""
        return (vm in self.previous and self.seen.get(vm, -1) <= self.previous[vm][0] < revision
                and self.chance(self.faults.stale))

    def saw(self, vm: str, revision: int) -> None:
        self.seen[vm] = max(self.seen.get(vm, -1), revision)

    @staticmethod
    def quiet(result: Dict[str, Any]) -> bool:
        """scheduled_events_claim's quiet (tasks/info.py's own rule): the cycle ends such a host after its read."""
        return _quiet(result, result["state"], result["state_status"])

    def cycle(self, at: datetime) -> None:
        """One scheduled run over the whole fleet, to its end (or its kill); one that overran its period starts
        when the last one ended."""
        self.now = max(at, self.now)
        self.run_to_end(self.new_cycle(self.vms()))

    def new_cycle(self, hosts: List[str], leave_alone: Set[str] = frozenset(), target: Optional[List[str]] = None
                  ) -> Cycle:
        return Cycle(owner=f"run-{self.cycles + 1}", hosts=list(hosts), leave_alone=set(leave_alone),
                     target=list(target or self.vms()))

    def run_to_end(self, cycle: Cycle) -> bool:
        """Run a cycle's steps at once; False when it was killed."""
        steps = self.steps(cycle)
        while True:
            ended = self.advance(cycle, steps)
            if ended is not None:
                return ended

    def advance(self, cycle: Cycle, steps: Iterator[None]) -> Optional[bool]:
        """One step of a run: None while it goes on, True when it ended, False when it was killed (what its
        prepare tasks did before the kill is judged then)."""
        try:
            next(steps)
        except StopIteration:
            return True
        except Killed:
            self.judge_prepares(cycle)
            return False
        return None

    def host_policies(self, cycle: Cycle) -> Optional[Dict[str, Dict[str, Any]]]:
        """{host: policy} as each host's own variables give it (the role notes them before any read); None: one
        policy for the whole fleet, the run's."""
        return None

    def silent_when_gone(self, vm: str) -> bool:
        """Whether the VM's silence is its own (its IMDS), as the role tells the plan (plugins/filter/cycle.py)."""
        return True

    def steps(self, cycle: Cycle) -> Iterator[None]:
        """The role's cycle, yielding between its steps (another run may go on there; Killed ends it)."""
        self.cycles += 1
        cycle.unknown_status = self.chance(self.faults.unknown)  # Azure serves a new status, to every VM
        reads: Dict[str, Dict[str, Any]] = {}
        for vm in cycle.hosts:
            if vm not in cycle.leave_alone:
                reads[vm] = self.claim(vm, cycle)  # one module call per host, each its own step
                yield
        cycle.read_quiet = read_quiet(sorted(reads), {vm: {"maintenance_cycle_query": r} for vm, r in reads.items()})
        cycle.alive = {vm for vm, r in reads.items() if "events" in r and not r["quiet"] and not r["lock"].get("held_by")}
        given = {vm: {"result": r, "lock": r["lock"] or None, "last_vm": self.last_vm.get(vm)} for vm, r in reads.items()}
        given.update({vm: {"left_alone": True, "last_vm": self.last_vm.get(vm)} for vm in cycle.leave_alone})
        for vm in given:
            given[vm]["availability_set"] = self.engine.vm_state(vm).vm.availability_set
        remembered, deleting = self.remember(cycle, given, reads)  # vm_memory, before quiet hosts end
        for vm in given:
            given[vm]["deleting"] = deleting.get(vm)
            given[vm]["silent_when_gone"] = self.silent_when_gone(vm)
        if not cycle.alive:
            return
        cycle.planned_at = self.now
        try:
            plan = plan_cycle(given, self.policy, self.now, cycle.target, remembered,
                              host_policies=self.host_policies(cycle))
        except PolicyError:
            self.refusals += 1  # the run fails before anything is done; its `always` gives the locks back
            self.release_all(cycle)
            return
        self.split_refused += sum(1 for verdict in plan["admissions"].values() if verdict == "refused")
        cycle.deleted = sorted(vm for vm, host_plan in plan["hosts"].items() if host_plan["status"] == DELETED)
        self.taken_as_deleted += len(cycle.deleted)
        for vm, r in reads.items():
            if "events" in r:
                self.last_vm[vm] = r["this_vm"]
        hosts = plan["hosts"]
        self.step(cycle)
        yield
        # Owed recovers, before any prepare.
        for vm in sorted(cycle.alive):
            if not hosts[vm]["recover"] or not self.renew(vm, cycle):
                continue
            if self.chance(self.faults.recover):
                if self.rng.random() < 0.5:
                    self.undrain(vm)  # failed after undoing the drain
                cycle.alive.discard(vm)
                continue
            self.undrain(vm)
            self.step(cycle)
            yield
        # Write-ahead, then the prepare tasks, then the save before any approval.
        for vm in sorted(cycle.alive):
            if hosts[vm]["prepare"] and hosts[vm]["saves"]:
                self.save(vm, cycle, reads[vm], hosts[vm], BEFORE_PREPARE)
        self.step(cycle)
        yield
        cycle.before_prepare, cycle.drains, cycle.drained_gone = self.busy_domains(), [], set()
        for vm in sorted(cycle.alive):
            for event in hosts[vm]["prepare"]:
                if vm not in cycle.alive:
                    break
                if self.chance(self.faults.kill_in_prepare):
                    self.verdict.kills += 1
                    raise Killed()  # written ahead, not drained: the begun prepare licenses nothing
                self.drain(cycle, vm, event["event_id"], event["event_id"] in hosts[vm]["late"])
                if self.chance(self.faults.prepare):
                    cycle.alive.discard(vm)
                self.step(cycle)  # killed or lost mid-prepare
                yield
        self.judge_prepares(cycle)
        for vm in sorted(cycle.alive):
            if hosts[vm]["save_first"]:
                self.save(vm, cycle, reads[vm], hosts[vm], PREPARED)
        self.step(cycle)
        yield
        if self.chance(self.faults.widen):
            self.widen_an_event()
        approved_now: Dict[str, List[str]] = {vm: [] for vm in cycle.alive}
        for vm, planned in sorted(confirm_approvals(plan, cycle.alive).items()):
            if planned and vm in cycle.alive:
                approved_now[vm] = self.approve(vm, cycle, planned, hosts[vm]["saves"])
                yield
        for vm in sorted(cycle.alive):
            self.save(vm, cycle, reads[vm], hosts[vm], AFTER_RECOVER, approved_now[vm])
        cycle.read_quiet = read_quiet(sorted(reads), {vm: {"maintenance_cycle_query": r,
                                                           "maintenance_cycle_saved": cycle.saved.get(vm)}
                                                      for vm, r in reads.items()})
        self.release_all(cycle)

    def remember(self, cycle: Cycle, given: Dict[str, Dict[str, Any]], reads: Dict[str, Dict[str, Any]]
                 ) -> Tuple[Dict[str, List[str]], Dict[str, Dict[str, Any]]]:
        """The role's vm_memory step: the target's file (plugin_utils/vm_memory.py) takes this run's reads (through
        the role's read_vms filter: with each sighting of a VM's own delete Started) and the VMs outside the target
        they show, and gives back what it remembers of those (the split-set rule) and of the sightings (deleted
        VMs)."""
        key = tuple(sorted(cycle.target))
        outside = outside_vms(host_views(given), cycle.target)
        seen = read_vms(sorted(reads), {vm: {"maintenance_cycle_query": r} for vm, r in reads.items()})
        memory = update(self.memory.get(key), seen, self.now, 24.0, outside)
        self.memory[key] = memory.text
        return memory.outside, memory.deleting

    def release_all(self, cycle: Cycle) -> None:
        """The role's `always`: every host it claimed and can still reach gives its lock back."""
        for vm in sorted(cycle.read - cycle.lost):
            self.give_back(vm, cycle)

    def save(self, vm: str, cycle: Cycle, result: Dict[str, Any], host_plan: Dict[str, Any], step: str,
             approved_now: List[str] = ()) -> None:
        if not host_plan["saves"]:
            cycle.saved[vm] = {"skipped": True}
            return
        if not self.renew(vm, cycle):
            cycle.saved[vm] = {"failed": True}
            return
        # The role saves from its read: each save of a cycle starts from the state the cycle read.
        self.states[vm] = state_for_step(result, host_plan, step, list(approved_now))
        cycle.saved[vm] = {"owes_work": owes_work(self.states[vm], "loaded")}
        if step == BEFORE_PREPARE:
            # The prepare of these events began: the cycle cannot tell how far it went, so the VM's drain (now or
            # later) serves them too until they are prepared or gone (it never undoes a drain they may need).
            self.ledger.begun.setdefault(vm, set()).update(e["event_id"] for e in host_plan["prepare"])

    def approve(self, vm: str, cycle: Cycle, planned: List[Dict[str, Any]], saves: bool) -> List[str]:
        """scheduled_events_approve (missing=ignore, state_path): re-read, decide, record under the lease, POST
        once."""
        served = self.engine.serve(vm, API_VERSION, self.now)
        self.saw(vm, self.engine.vm_state(vm).revision)
        if served.kind != "document" or served.document is None:
            cycle.alive.discard(vm)
            return []
        parsed = parse_document(json.dumps(served.document))
        decided = plan_approval(parsed, [p["event_id"] for p in planned], vm, missing="ignore", planned=planned)
        if decided.error or not decided.approve:
            return list(decided.already_started)
        if not self.renew(vm, cycle):
            return []  # the lease ran out: nothing recorded, nothing sent
        if saves:  # write-ahead: on record in the VM's state before the POST
            self.states[vm] = with_approved(self.states.get(vm) or empty_state(), decided.approve)
        self.step(cycle)
        if vm not in cycle.alive:
            return []
        body = {"StartRequests": [{"EventId": i} for i in decided.approve]}
        roll = self.rng.random() if self.now < self.fault_until else 1.0
        if roll < self.faults.post:
            if roll < self.faults.post / 2:  # it reached IMDS before the connection broke
                self.approved(self.engine.approve(vm, body, self.now))
            cycle.alive.discard(vm)
            return []
        self.approved(self.engine.approve(vm, body, self.now))
        return decided.approve + decided.already_started

    def widen_an_event(self) -> None:
        """Azure adds a VM to a Scheduled event's Resources (the approval must then refuse the stale plan)."""
        scheduled = [e for e in self.engine.events if e.status == "Scheduled" and not e.approved_by]
        if scheduled:
            event = self.rng.choice(scheduled)
            sets = {self.engine.vm_state(vm).vm.set_name for vm in event.resources}  # Resources stay in one set
            others = [v.name for v in self.engine.fleet.vms if v.name not in event.resources and v.set_name in sets]
            if others:
                event.resources.append(self.rng.choice(others))
                for state in self.engine.vms.values():  # a new document (and incarnation) for every VM
                    state.signature = None
                self.engine._refresh(self.now)  # noqa: SLF001 - a fault the engine has no API for

    def vms(self) -> List[str]:
        return [v.name for v in self.engine.fleet.vms]

    # ----------------------------------------------------------------------------------- the end

    def finish(self, end: datetime, period_s: float) -> None:
        """left_drained: a drain whose events have all been gone for SETTLE_CYCLES cycles of a fault-free run."""
        for vm, events in sorted(self.ledger.drained_for.items()):
            gone = [self.truth(i).removed_at for i in events | self.ledger.begun.get(vm, set())]
            if not events or not all(gone) or self.engine.vm_state(vm).deleted_at is not None:
                continue  # an event it was made for is still pending (the drain is owed), or the VM was deleted
            since = max(max(gone), self.fault_until)
            if (end - since).total_seconds() > SETTLE_CYCLES * period_s:
                self.verdict.add("left_drained", f"{vm} is still drained at {end} for {sorted(events)}, all gone "
                                                 f"by {max(gone)}")


# The role's save points and task files, in the order this model runs them: a test (and make invariants) fails
# when the role's order drifts from the model's.
ROLE_ORDER = ["maintenance_cycle_task_files.recover", "'before_prepare'", "maintenance_cycle_task_files.prepare",
              "'prepared'", "scheduled_events_approve:", "'after_recover'"]
ROLE_FILES = ["query.yml", "recover.yml", "prepare.yml", "approve.yml", "finish.yml"]


def role_order_problems(role: Path) -> List[str]:
    """What differs between the role's cycle (main.yml's imports, then the steps in them) and this model's."""
    main = (role / "tasks" / "main.yml").read_text()
    imports = [line.split(":", 1)[1].strip() for line in main.splitlines() if "import_tasks:" in line]
    files = [f for f in imports if f in ROLE_FILES]
    if files != ROLE_FILES:
        return [f"main.yml imports {files}, the model runs {ROLE_FILES}"]
    text = "\n".join((role / "tasks" / f).read_text() for f in files)
    positions = [text.find(token) for token in ROLE_ORDER]
    if -1 in positions or positions != sorted(positions):
        return [f"the role's steps are not in the model's order {ROLE_ORDER} (found at {positions})"]
    return []


# The fleets: one availability set; two availability sets reusing fault-domain numbers; a zonal scale set
# (every VM in fault domain 0) serving lower-case EventIds.
FLEETS = {
    "one set": ({}, "upper"),
    "two sets": ({"sets": 2, "vms": 4}, "upper"),
    "zonal, lower-case ids": ({"kind": "scale_set", "name": "vmss-zonal", "vms": 6, "zones": ["1", "2", "3"]}, "lower"),
}

FAULTS = {
    "none": Faults(),
    "kills and lost hosts": Faults(kill=0.02, kill_in_prepare=0.2, lost=0.02),
    "everything fails sometimes": Faults(read=0.05, prepare=0.1, post=0.1, recover=0.1, widen=0.2, lost=0.01,
                                         kill=0.01, kill_in_prepare=0.05, unknown=0.05, unreadable=0.03, stale=0.3),
}

# Beyond fleet-mix: Spot evictions and scale-in deletions, which overlap the walks on one host, and platform events
# that list two VMs of a set, often of two fault domains: more than the limit, so each may only go alone (the plan's
# "an event that spans domains goes as a whole"), and two of them may overlap.
EXTRA_EVENTS = [
    {"key": "two-hosts", "type": "Reboot", "source": "Platform", "description": "Host maintenance.", "duration_s": -1,
     "notice_s": [600, 900], "started_for_s": [60, 120], "resources": {"set": "random", "count": 2}, "per_day": 1.0},
    {"key": "spot-eviction", "type": "Preempt", "source": "Platform", "description": "Spot eviction.",
     "duration_s": -1, "notice_s": 30, "started_for_s": [60, 120], "resources": {"count": 1}, "per_day": 0.5},
    {"key": "scale-in", "type": "Terminate", "source": "User", "description": "Scale-in.", "duration_s": -1,
     "notice_s": [300, 900], "started_for_s": [60, 120], "resources": {"count": 1}, "per_day": 0.3},
]


def scenario() -> sc.Scenario:
    base = busier_fleet_mix(8.0)
    extra = sc.parse({"name": "overlaps", "summary": "Spot evictions and scale-in beside fleet-mix.",
                      "fleet": base.fleet, "events": EXTRA_EVENTS}, {})
    return sc.Scenario(**dict(vars(base), specs=list(base.specs) + list(extra.specs)))


def fleet_run(kind: type, seed: int, faults: Faults, hours: float, fleet: str, mix: Optional[sc.Scenario] = None,
              **fields: Any) -> Any:
    """A FleetRun (or a kind of it) on a fresh engine (its events drawn from `mix`, by default scenario()): faults
    for the first 80 % of `hours`, then a fault-free settle."""
    mix = mix or scenario()
    spec_fields, id_case = FLEETS[fleet]
    spec = FleetSpec(**dict(mix.fleet, **spec_fields))
    engine = Engine(build_fleet(spec), mix, START, time_scale=1.0, seed=seed,
                    options=EngineOptions(event_id_case=id_case))
    return kind(engine, faults, random.Random(seed), fault_until=START + timedelta(hours=hours * 0.8), **fields)


def simulate(seed: int, faults: Faults, period_s: int, hours: float = 24.0, fleet: str = "one set") -> FleetRun:
    """One fleet-day (by default) of scheduled runs over the whole fleet."""
    run = fleet_run(FleetRun, seed, faults, hours, fleet, task_s=TASK_S)
    end = START + timedelta(hours=hours)
    at = START
    while at < end:
        run.cycle(at)
        at += timedelta(seconds=period_s)
    run.finish(at, period_s)
    return run
