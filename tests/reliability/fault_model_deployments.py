"""The fault model where users really run the cycle (issue 43): each kind of run below is one way a deployment differs
from the one fleet, one policy, one lasting controller of fault_model.py, judged by the same ledger of drains and the
engine's record of approvals, never by the collection's bookkeeping.

- PerGroupRun: the hosts of two groups with different settings (group vars: db leaves Reboots and Redeploys to
  NotBefore, web does not). Each host's policy goes to the plan as the role notes it (plan_cycle's host_policies):
  the run must refuse before it acts, never approve a db event early (`approved_early` below);
- ResetDiskRun: some VMs keep their state on an ephemeral OS disk, which a Redeploy replaces: the state vanishes while
  its event is pending. The read asks the collection's own test of the VM's compute metadata (ephemeral_os_disk) and
  refuses, so the host is unread (busy); a drain forgotten with its state is what the ledger shows otherwise;
- TwoControllersRun: two controllers (the Event Grid rulebook's job and the scheduled cycle the docs ask for beside it)
  start a cycle over the same VMs at the same moment, their steps interleaved at random, through one store (states
  and VM locks), every other VM on the control plane;
- SpotRestartRun: a control-plane Spot VM evicted with Deallocate is started again a while later, while Resource
  Graph still shows its Completed Preempt row: its host must keep its fault domain and owe its recover.

Fresh-home AWX jobs are fault_model_control_plane.FreshHomeRun.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional, Set

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import ephemeral_os_disk
from imds_simulator import scenario as sc
from tests.reliability.fault_model import POLICY, TASK_S, Cycle, Faults, FleetRun, fleet_run, scenario
from tests.reliability.fault_model_control_plane import (
    ControlPlaneRun,
    control_plane_run,
    on_schedule,
)

# ----------------------------------------------------------------------------------------------- per-group policies

GROUP_POLICY = {"leave_to_not_before": ["Reboot", "Redeploy"]}  # db's group vars; web keeps the defaults


@dataclass
class PerGroupRun(FleetRun):
    db: Set[str] = field(default_factory=set)  # every other VM, never the first (whose policy the old plan took)

    def host_policies(self, cycle: Cycle) -> Optional[Dict[str, Dict[str, Any]]]:
        return {vm: dict(self.policy, **(GROUP_POLICY if vm in self.db else {})) for vm in cycle.hosts}

    def approved(self, entry: Dict[str, Any]) -> None:
        """approved_early, for db's settings too: an event listing a db VM, of a type db leaves to NotBefore,
        approved before its NotBefore."""
        super().approved(entry)
        for event_id in entry["event_ids"]:
            event = self.truth(event_id)
            db = sorted(vm for vm in event.resources if vm in self.db)
            if db and event.event_type in GROUP_POLICY["leave_to_not_before"] and event.not_before is not None \
                    and self.now < event.not_before:
                self.verdict.add("approved_early", f"{event_id} ({event.event_type}, listing {db}, whose group "
                                                   f"leaves it to NotBefore) approved at {self.now}, before "
                                                   f"{event.not_before}")


def per_group_run(seed: int, faults: Faults, period_s: int, hours: float = 24.0, fleet: str = "one set"
                  ) -> PerGroupRun:
    run = fleet_run(PerGroupRun, seed, faults, hours, fleet, task_s=TASK_S)
    run.db = set(run.vms()[1::2])
    return on_schedule(run, period_s, hours)


# ---------------------------------------------------------------------------------------------------- reset disks

EPHEMERAL = {"storageProfile": {"osDisk": {"diffDiskSettings": {"option": "Local"}}}}  # IMDS compute, in part
RESETTING = ("Redeploy",)  # a move to another node: an ephemeral OS disk is a fresh one after it


@dataclass
class ResetDiskRun(FleetRun):
    ephemeral: Set[str] = field(default_factory=set)  # VMs whose state is on an ephemeral OS disk
    reset_for: Set[str] = field(default_factory=set)  # Redeploys that have already erased their VMs' disks
    resets: int = 0  # states erased
    disk_refusals: int = 0  # reads refused for the state's disk

    def read(self, vm: str, cycle: Cycle) -> Dict[str, Any]:
        self.reset_disks()
        if vm in self.ephemeral and ephemeral_os_disk(EPHEMERAL):
            self.disk_refusals += 1  # the read's one sentence (a data disk): the host is unread, busy
            return {"failed": True}
        return super().read(vm, cycle)

    def reset_disks(self) -> None:
        """Each Redeploy that has run moved its VMs: they answer again from their new node, their ephemeral OS disks,
        and any state on them, new (the ledger's drain stays: the NIC is out of its pool until a recover puts it
        back). The state is gone by the first read that no longer shows the event (a state erased while a read still
        shows the event Started is prepared again, which is no test of the rule)."""
        self.engine.advance_to(self.now)
        for event in self.engine.events:
            if event.event_type in RESETTING and event.outcome == "completed" and event.event_id not in self.reset_for:
                self.reset_for.add(event.event_id)
                for vm in event.resources:
                    if vm in self.ephemeral and self.states.pop(vm, None) is not None:
                        self.resets += 1


def reset_disk_run(seed: int, faults: Faults, period_s: int, hours: float = 24.0, fleet: str = "one set"
                   ) -> ResetDiskRun:
    run = fleet_run(ResetDiskRun, seed, faults, hours, fleet, task_s=TASK_S)
    run.ephemeral = set(run.vms()[1::3])
    return on_schedule(run, period_s, hours)


# ---------------------------------------------------------------------------------------- two controllers, one store

@dataclass
class TwoControllersRun(ControlPlaneRun):
    side_by_side: int = 0  # periods in which both controllers ran at once

    def cycle(self, at: datetime) -> None:
        """Both controllers' cycles over every VM, started together, each step of either next at random."""
        self.now = max(at, self.now)
        self.side_by_side += 1
        going = []
        for controller in ("event-grid", "scheduled"):
            cycle = self.new_cycle(self.vms())
            cycle.owner = f"{controller}-{self.side_by_side}"  # one owner per controller's job (its VM locks)
            going.append((cycle, self.steps(cycle)))
        while going:
            cycle, steps = self.rng.choice(going)
            if self.advance(cycle, steps) is not None:
                going.remove((cycle, steps))


def two_controllers_run(seed: int, faults: Faults, back: float, period_s: int, hours: float = 24.0,
                        fleet: str = "one set") -> TwoControllersRun:
    # runs side by side, kept apart by the VM locks (parallel_runs: the rulebook passes its max_parallel_runs)
    return control_plane_run(seed, faults, back, period_s, hours, fleet, TwoControllersRun, locking=True,
                             policy=dict(POLICY, parallel_runs=2))


# ------------------------------------------------------------------------------------------- restarted Spot VMs

RESTART_S = 600.0  # a Spot VM evicted with Deallocate is started again this long after (by its owner)


@dataclass
class SpotRestartRun(ControlPlaneRun):
    restarted: int = 0

    def cycle(self, at: datetime) -> None:
        self.now = max(at, self.now)
        self.restart_evicted()
        super().cycle(at)

    def restart_evicted(self) -> None:
        """Control-plane VMs evicted by their own Preempt RESTART_S ago run again, while Resource Graph still shows
        the Completed row (KEPT_S) and after it drops it: either way the owed recover must run (check_present)."""
        self.engine.advance_to(self.now)
        for vm in sorted(self.on_control_plane):
            state = self.engine.vm_state(vm)
            if state.deleted_at is None or (self.now - state.deleted_at).total_seconds() < RESTART_S:
                continue
            ended = [e for e in self.engine.events if e.event_type in ("Preempt", "Terminate")
                     and e.outcome == "completed" and vm.lower() in {r.lower() for r in e.resources}]
            if ended and max(ended, key=lambda e: e.started_at).event_type == "Preempt":
                state.deleted_at = None
                self.restarted += 1


SPOT_EVICTIONS_PER_DAY = 12.0  # scenario()'s Spot evictions, made common enough that restarts happen every day


def spot_scenario() -> sc.Scenario:
    mix = scenario()
    return sc.Scenario(**dict(vars(mix), specs=[replace(s, per_day=SPOT_EVICTIONS_PER_DAY)
                                                 if s.key == "spot-eviction" else s for s in mix.specs]))


def spot_restart_run(seed: int, faults: Faults, back: float, period_s: int, hours: float = 24.0,
                     fleet: str = "one set") -> SpotRestartRun:
    return control_plane_run(seed, faults, back, period_s, hours, fleet, SpotRestartRun, mix=spot_scenario())
