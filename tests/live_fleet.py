"""A simulator serving a fleet over real HTTP on loopback, in the test process.

Shared by the module, role and playbook tests: the playbooks run as real
ansible-playbook subprocesses against it, and tests read its ground truth
(events, approvals, timeline) directly.
"""
from __future__ import annotations

import time
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Union

from imds_simulator import scenario as sc
from imds_simulator.engine import Engine, EngineOptions
from imds_simulator.faults import parse_fault
from imds_simulator.fleet import FleetSpec, build_fleet
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread

# The smallest availability set that still shows what a cycle test looks at: a fault domain's event lists two VMs
# (a leader and a follower) and quiet VMs of another domain stay in the inventory. The scenarios' sets have 6 VMs in
# 3 fault domains, and every quiet host adds its claim and read to each cycle (what that costs: docs/lab/benchmarks.md,
# the test suite's cost).
SMALL_SET = FleetSpec(vms=4, fault_domains=2)


def small_set_for(loaded: Optional[sc.Scenario]) -> Optional[FleetSpec]:
    """SMALL_SET in place of the scenario's availability set (or the default one, without a scenario); None keeps
    a scale set's own fleet."""
    return SMALL_SET if _fleet_of(loaded).kind == SMALL_SET.kind else None


class LiveFleet:
    """A simulator serving over real HTTP on loopback, started in this process."""

    def __init__(self, scenario: Union[str, sc.Scenario, None], time_scale: float = 60.0, seed: int = 1,
                 fleet: Optional[FleetSpec] = None, **server: Any):
        loaded = sc.load(scenario) if isinstance(scenario, str) else scenario
        spec = fleet or _fleet_of(loaded)
        self.engine = Engine(build_fleet(spec), loaded, datetime.now(timezone.utc), time_scale=time_scale,
                             seed=seed, options=EngineOptions(simulate_impact=server.pop("simulate_impact", True)))
        self.sim = Simulator(self.engine, ServerOptions(rate_limit=server.pop("rate_limit", 0), **server))
        self.server, _ = serve_in_thread(self.sim)

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    @property
    def vms(self) -> List[str]:
        return [v.name for v in self.engine.fleet.vms]

    def url(self, vm: str) -> str:
        return self.sim.vm_url(vm)

    def availability_set(self, vm: str) -> str:
        """What an inventory tells the role and IMDS does not: the VM's availability set ("" in a scale set)."""
        spec = self.engine.fleet.vm(vm)
        return getattr(spec, "availability_set", None) or ("" if spec.vm_scale_set_name else self.engine.fleet.name)

    def fault(self, vm: str, *faults: Dict[str, Any]) -> None:
        self.sim.faults.add(vm, [parse_fault(f) for f in faults])

    def inject(self, spec: Dict[str, Any]) -> List[str]:
        with self.sim.lock:
            before = len(self.engine.events)
            self.engine.load(sc.from_event(spec), self.sim.clock.now())
            return [e.event_id for e in self.engine.events[before:]]

    def cancel(self, event_id: str) -> None:
        """Azure withdraws a Scheduled event now."""
        with self.sim.lock:
            self.engine.cancel(event_id, self.sim.clock.now())

    def load(self, scenario: sc.Scenario) -> None:
        """A whole scenario, its times counted from now (a soak starts its stream once the fleet is up)."""
        with self.sim.lock:
            self.engine.load(scenario, self.sim.clock.now())

    def stop_arrivals(self) -> int:
        """No new random arrivals from now on; what is under way goes on."""
        with self.sim.lock:
            return self.engine.stop_arrivals(self.sim.clock.now())

    def approvals(self) -> List[Dict[str, Any]]:
        with self.sim.lock:
            return list(self.engine.approvals)

    def truth(self) -> List[Dict[str, Any]]:
        with self.sim.lock:
            self.engine.advance_to(self.sim.clock.now())
            return self.engine.event_summaries()

    def wait_for_events(self, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.truth():
                return
            time.sleep(0.02)
        raise AssertionError("the scenario produced no event in time")


def _fleet_of(loaded: Optional[sc.Scenario]) -> FleetSpec:
    fields = dict(loaded.fleet) if loaded else {}
    if "names" in fields:
        fields["vms"] = len(fields["names"])
    return FleetSpec(**fields)
