"""The maintenance_cycle role, step for step, on the simulator's engine in virtual time.

Ansible is the slow part of a cycle, not its meaning: the role's decisions are the pure
functions in module_utils (parse, annotate, plan_cycle, confirm_approvals, plan_approval,
cycle_state). This model calls exactly those, in the role's order, against the real engine,
so that thousands of cycles over randomised fleets run in seconds and the engine's approval
log can be checked for the safety invariants. Hosts that cannot answer (rebooting, frozen,
deleted) drop out of a cycle as unreachable hosts drop out of a play.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Dict, List, Optional

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.approval import plan_approval
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_policy import (
    confirm_approvals,
    cycle_state,
    plan_cycle,
    remembered_state,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.events import annotate, parse_document
from imds_simulator.engine import Engine

API_VERSION = "2020-07-01"


@dataclass
class Action:
    cycle: int
    at: datetime
    host: str
    event_id: str
    fault_domain: int


@dataclass
class RoleModel:
    engine: Engine
    policy: Dict[str, Any]
    prepare_failure_rate: float = 0.0
    rng: random.Random = field(default_factory=lambda: random.Random(0))
    states: Dict[str, Optional[Dict[str, Any]]] = field(default_factory=dict)
    prepares: List[Action] = field(default_factory=list)
    recovers: List[Action] = field(default_factory=list)
    approvals_by_cycle: Dict[int, List[str]] = field(default_factory=dict)
    cycles: int = 0

    def fault_domain(self, vm: str) -> int:
        return self.engine.vm_state(vm).vm.fault_domain

    def read(self, vm: str, at: datetime) -> Optional[Dict[str, Any]]:
        """The info module's result, or None when the host is unreachable this cycle."""
        served = self.engine.serve(vm, API_VERSION, at)
        if served.kind not in ("document", "enabling"):
            return None
        parsed = parse_document(json.dumps(served.document)) if served.document is not None else None
        events = annotate(parsed["events"], vm, at) if parsed else []
        return {"events": events, "document_available": parsed is not None,
                "document_incarnation": parsed["document_incarnation"] if parsed else None,
                "this_vm": {"name": vm, "fault_domain": self.fault_domain(vm)}, "state": self.states.get(vm)}

    def cycle(self, at: datetime) -> None:
        self.cycles += 1
        results = {vm: r for vm in self.engine_vms() if (r := self.read(vm, at)) is not None}
        results = {vm: r for vm, r in results.items() if not self.quiet(r)}  # quiet hosts end early
        if not results:
            return
        plan = plan_cycle(results, self.policy)
        alive = set(results)
        prepared_now: Dict[str, List[str]] = {vm: [] for vm in results}
        for vm, host_plan in plan["hosts"].items():
            for event in host_plan["prepare"]:
                if self.rng.random() < self.prepare_failure_rate:
                    alive.discard(vm)  # the block's rescue fails the host
                    break
                self.prepares.append(Action(self.cycles, at, vm, event["event_id"], self.fault_domain(vm)))
                prepared_now[vm].append(event["event_id"])
        approved_now: Dict[str, List[str]] = {vm: [] for vm in results}
        for vm, ids in confirm_approvals(plan, alive).items():
            if ids and vm in alive:
                approved_now[vm] = self.approve(vm, ids, at)
        for vm in set(results) - alive:  # the prepare rescue: remember what was seen, record no progress
            if results[vm]["document_available"]:
                self.states[vm] = remembered_state(results[vm])
        for vm in alive:
            for event in plan["hosts"][vm]["recover"]:
                self.recovers.append(Action(self.cycles, at, vm, event["event_id"], self.fault_domain(vm)))
            if results[vm].get("document_available", True):
                self.states[vm] = cycle_state(results[vm], prepared_now[vm], approved_now[vm])

    def approve(self, vm: str, ids: List[str], at: datetime) -> List[str]:
        """scheduled_events_approve with missing=ignore: re-read, plan, POST once."""
        served = self.engine.serve(vm, API_VERSION, at)
        if served.kind != "document" or served.document is None:
            return []
        parsed = parse_document(json.dumps(served.document))
        decided = plan_approval(parsed, ids, vm, missing="ignore")
        if decided.error or not decided.approve:
            return list(decided.already_started)
        self.engine.approve(vm, {"StartRequests": [{"EventId": i} for i in decided.approve]}, at)
        self.approvals_by_cycle.setdefault(self.cycles, []).extend(decided.approve)
        return decided.approve + decided.already_started

    def quiet(self, result: Dict[str, Any]) -> bool:
        state = result["state"]
        return state is not None and not result["events"] and not state["events"]

    def engine_vms(self) -> List[str]:
        return [v.name for v in self.engine.fleet.vms]

    def run(self, start: datetime, hours: float, period_s: float) -> None:
        at = start
        while at < start + timedelta(hours=hours):
            self.cycle(at)
            at += timedelta(seconds=period_s)
