"""The IMDS simulator in-process, answering over real HTTP on loopback, for the unit tests.

Under `ansible-test units` the tests run from a staged copy of the collection (tools/run_ansible_test.py),
which holds only what Galaxy ships; that tool writes the repository's path to repo_root.txt beside this
file, so that the simulator package (not shipped) is still the one the tests use.
"""
from __future__ import annotations

import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterator, Optional

_REPO_ROOT = Path(__file__).with_name("repo_root.txt")
if _REPO_ROOT.exists():
    sys.path.insert(0, _REPO_ROOT.read_text().strip())

from imds_simulator import scenario as sc  # noqa: E402
from imds_simulator.engine import Engine, EngineOptions  # noqa: E402
from imds_simulator.faults import parse_fault  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet, spec_from_fields  # noqa: E402
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread  # noqa: E402

QUIET = sc.Scenario(name="quiet", summary="no events until a test injects one", specs=[])


def serve(scenario: sc.Scenario, simulate_impact: bool = True, fleet: Optional[FleetSpec] = None,
          time_scale: float = 60.0, first_call_delay_s: float = 0.0) -> Iterator[Simulator]:
    """`fleet` (the default one availability set) in `scenario`, served until the generator is closed."""
    engine = Engine(build_fleet(fleet or FleetSpec()), scenario, datetime.now(timezone.utc), time_scale=time_scale,
                    seed=4, options=EngineOptions(simulate_impact=simulate_impact))
    simulator = Simulator(engine, ServerOptions(rate_limit=0, first_call_delay_s=first_call_delay_s))
    server, _thread = serve_in_thread(simulator)
    try:
        yield simulator
    finally:
        server.shutdown()
        server.server_close()


def own_fleet(scenario: sc.Scenario) -> FleetSpec:
    """The fleet a scenario names (the spot eviction's and the scale-in's are scale sets), not the default set."""
    return spec_from_fields(scenario.fleet)


def inject(simulator: Simulator, spec: dict) -> str:
    """Add one event to the running simulator now; its EventId."""
    with simulator.lock:
        before = len(simulator.engine.events)
        simulator.engine.load(sc.from_event(spec), simulator.clock.now())
        (event,) = simulator.engine.events[before:]
        return event.event_id


def fault(simulator: Simulator, vm: str, *faults: dict) -> None:
    """IMDS misbehaves for `vm` as each fault says (imds_simulator/faults.py), in turn."""
    simulator.faults.add(vm, [parse_fault(f) for f in faults])
