"""Safety invariants of the maintenance cycle over many randomised fleets (seeded, property-based).

The role's decisions run through `cycle_model.RoleModel` (the role's own pure functions, in its
order) against the simulator's engine in virtual time; the engine's approval log and event
ground truth are the evidence. Each example is a day of a random `fleet-mix` stream, made
eight times busier, with cycles every 1-5 minutes and prepare tasks that sometimes fail.
"""
from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone
from typing import Any, Dict, List, Set, Tuple

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from imds_simulator.engine import Engine
from imds_simulator.fleet import FleetSpec, build_fleet
from tests.reliability.cycle_model import RoleModel
from tools.soak import busier_fleet_mix

START = datetime(2026, 11, 2, 8, 0, tzinfo=timezone.utc)
POLICY = {"max_fault_domains_in_maintenance": 1, "prepare_configured": True}


def when(iso: str | None) -> datetime | None:
    return datetime.fromisoformat(iso.replace("Z", "+00:00")) if iso else None


def simulate(seed: int, failure_rate: float, period_s: int, hours: float = 24.0) -> Tuple[RoleModel, List[Dict[str, Any]]]:
    scenario = busier_fleet_mix(8.0)
    engine = Engine(build_fleet(FleetSpec(**scenario.fleet)), scenario, START, time_scale=1.0, seed=seed)
    model = RoleModel(engine, POLICY, prepare_failure_rate=failure_rate, rng=random.Random(seed))
    model.run(START, hours, period_s)
    return model, engine.event_summaries()


def observed(model: RoleModel, vm: str) -> Set[str]:
    """Event ids a VM was served while they listed it."""
    seen: Set[str] = set()
    for served in model.engine.vm_state(vm).served:
        for event in (served["document"] or {}).get("Events", []):
            if vm.lower() in {r.lower() for r in event["Resources"]}:
                seen.add(event["EventId"].upper())
    return seen


def check_invariants(model: RoleModel, truth: List[Dict[str, Any]], period_s: int, end: datetime) -> List[str]:
    problems: List[str] = []
    events = {e["event_id"]: e for e in truth}
    prepared_at = {(a.host, a.event_id): a.at for a in model.prepares}
    accepted = [a for a in model.engine.approvals if a.get("accepted")]
    times_approved: Dict[str, int] = {}
    for approval in accepted:
        at = when(approval["at"])
        for event_id in approval["event_ids"]:
            times_approved[event_id] = times_approved.get(event_id, 0) + 1
            event = events[event_id]
            if not approval["in_resources"][event_id]:
                problems.append(f"{event_id} approved from {approval['vm']}, which it does not list")
            for vm in event["resources"]:
                done = prepared_at.get((vm, event_id))
                if done is None or done > at:
                    problems.append(f"{event_id} approved at {at} before prepare on {vm} ({done})")
    problems += [f"{i} approved {n} times" for i, n in times_approved.items() if n > 1]
    problems += fault_domain_problems(model, truth)
    for vm in [v.name for v in model.engine.fleet.vms]:
        recovered = {a.event_id for a in model.recovers if a.host == vm}
        for event_id in observed(model, vm):
            removed = when(events[event_id]["removed_at"])
            if removed is not None and (end - removed).total_seconds() > 3 * period_s and event_id not in recovered:
                problems.append(f"{event_id} left {vm} at {removed} and was never recovered there")
    return problems


def fault_domain_problems(model: RoleModel, truth: List[Dict[str, Any]]) -> List[str]:
    """With limit 1: no prepare that brings a second fault domain into maintenance, i.e. none in a fault
    domain not yet in maintenance while another has hosts prepared or in Started events that the cycle
    could see (hosts that answered; a rebooting host cannot be read by anyone)."""
    problems = []
    recovered = {(a.host, a.event_id): a.at for a in model.recovers}
    domains = {v.name: v.fault_domain for v in model.engine.fleet.vms}
    for action in model.prepares:
        busy = set()
        for other in model.prepares:
            gone = recovered.get((other.host, other.event_id))
            if other.at < action.at and (gone is None or gone > action.at):
                busy.add(other.fault_domain)
        for event in truth:
            started, removed = when(event["started_at"]), when(event["removed_at"])
            if started and started < action.at and (removed is None or removed > action.at):
                busy |= {domains[vm] for vm in event["resources"] if seen_at(model, vm, event["event_id"], action.at)}
        if action.fault_domain in busy:
            continue  # already in maintenance: this prepare adds no fault domain
        if busy:
            problems.append(f"prepared {action.host} (fault domain {action.fault_domain}) at {action.at} while "
                            f"fault domain(s) {sorted(busy)} were in maintenance")
    return problems


def seen_at(model: RoleModel, vm: str, event_id: str, at: datetime) -> bool:
    """Whether the VM answered at `at` with the event Started (what the cycle could know)."""
    for served in model.engine.vm_state(vm).served:
        if when(served["at"]) == at:
            return any(e["EventId"].upper() == event_id and e["EventStatus"] == "Started"
                       for e in (served["document"] or {}).get("Events", []))
    return False


# Every failure rate with every schedule period; hypothesis picks the fleets (seeds).
@pytest.mark.parametrize("failure_rate", [0.0, 0.05, 0.25])
@pytest.mark.parametrize("period_s", [60, 120, 300])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(seed=st.integers(0, 2**31 - 1))
def test_the_cycle_never_fails_open_or_silent(seed: int, failure_rate: float, period_s: int) -> None:
    model, truth = simulate(seed, failure_rate, period_s)
    end = START + timedelta(seconds=model.cycles * period_s)
    problems = check_invariants(model, truth, period_s, end)
    assert problems == [], json.dumps(problems[:10], indent=1)
    assert model.prepares and model.recovers and model.engine.approvals, "the scenario exercised the cycle"
