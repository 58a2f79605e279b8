"""The fault model with half the fleet on the control-plane transport (docs/control-plane.md).

Every other VM is read from the run's one Resource Graph read and approved with a Microsoft.Maintenance acknowledge,
through the same pure functions the action plugins use (control_plane/graph_read.py, imds_face.py), the rest through
IMDS as in fault_model.py; the judges are the same ledger and engine record. On top of fault_model.py's faults:

- Resource Graph lags: each read shows the fleet as it was up to LAG_S ago (the simulator's rows as of then), so an
  event appears, starts and ends late there, and an approved event still shows Scheduled;
- a read goes back in time (`back`): one shows a moment up to BACK_S ago, older than the read before it (replicas
  of an eventually consistent store), so an event a host prepared for may be missing from it;
- the whole read fails (`read`): every control-plane host is unread.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import timedelta
from types import SimpleNamespace
from typing import Any, Dict, List, Optional, Set

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.graph_read import read_of_rows
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.host_map import host_index
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.imds_face import (
    ControlPlaneBlind,
    acknowledgements,
    check_owed,
    check_present,
    check_read,
    compute_for,
    document_for,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.cycle_state import (
    empty_state,
    with_approved,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.approval import plan_approval
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document.events import (
    annotate,
    compute_facts,
    iso_utc,
    parse_document,
)
from imds_simulator.control_plane import graph_rows
from tests.reliability.fault_model import FAULTS, Cycle, FleetRun, Faults, fleet_run

LAG_S = 60.0  # Resource Graph's lag: up to about a minute
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
    blind: int = 0  # control-plane claims the read could not vouch for
    acknowledged: int = 0

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
        self.engine.advance_to(self.now)
        recent = SimpleNamespace(fleet=self.engine.fleet, events=[
            e for e in self.engine.events
            if e.removed_at is None or (self.now - e.removed_at).total_seconds() < KEPT_S])
        rows = graph_rows(recent, self.now, (self.now - as_of).total_seconds(), [subscription])
        return read_of_rows(rows, iso_utc(self.now), [subscription], vm_ids, host_index(vm_ids), lambda text: None)

    def vm_id(self, vm: str) -> str:
        return self.engine.vm_state(vm).vm.resource_id

    def document(self, vm: str, read: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        """What the face serves the claim (None: the host is blind, its read fails)."""
        try:
            check_read(read, vm, self.vm_id(vm), self.now, MAX_AGE_S)
            check_present(read, vm)
            check_owed(read, vm, self.states.get(vm))
        except ControlPlaneBlind:
            self.blind += 1
            return None
        return parse_document(json.dumps(document_for(read, vm, self.now)))

    def read(self, vm: str, cycle: Cycle) -> Dict[str, Any]:
        if vm not in self.on_control_plane:
            return super().read(vm, cycle)
        if cycle.owner not in self.graph_reads:  # the role's run_once read, before the first claim
            self.graph_reads[cycle.owner] = self.graph_read({h: self.vm_id(h) for h in sorted(self.on_control_plane)})
        parsed = self.document(vm, self.graph_reads[cycle.owner])
        if parsed is None:
            return {"failed": True}
        spec = self.engine.vm_state(vm).vm
        this_vm = compute_facts(compute_for(vm, spec.resource_id, spec.fault_domain, spec.zone))
        unreadable = self.chance(self.faults.unreadable)
        events = annotate(parsed["events"], this_vm["name"], self.now)
        return {"events": events, "events_for_this_vm": [e for e in events if e["affects_this_vm"]],
                "document_available": True, "document_incarnation": parsed["document_incarnation"],
                "this_vm": this_vm, "state": None if unreadable else self.states.get(vm),
                "state_status": "corrupt" if unreadable else ("loaded" if self.states.get(vm) else "missing"),
                "state_path": f"/controller/{vm}/state.json"}

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
                      fleet: str = "one set") -> ControlPlaneRun:
    """One fleet-day of scheduled runs, every other VM on the control plane."""
    run = fleet_run(ControlPlaneRun, seed, faults, hours, fleet, task_s=2.0, back=back)
    run.on_control_plane = set(run.vms()[::2])
    end, at = run.now + timedelta(hours=hours), run.now
    while at < end:
        run.cycle(at)
        at += timedelta(seconds=period_s)
    run.finish(at, period_s)
    return run
