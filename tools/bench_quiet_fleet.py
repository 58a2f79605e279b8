"""What the playbook benchmarks on a quiet fleet share: the simulator serving N VMs with no events, an
inventory of them (local connection, a state file each), the environment an ansible-playbook runs in, and a
timed run that stops the benchmark with the playbook's own failure lines when it fails.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable, Dict, List

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.engine import Engine  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet  # noqa: E402
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread  # noqa: E402

ANSIBLE_PLAYBOOK = str(Path(sys.executable).parent / "ansible-playbook")


@dataclass
class QuietFleet:
    """A served quiet fleet and its inventory under `work`; close() stops the server."""
    work: Path
    inventory: Path
    server: object

    def close(self) -> None:
        self.server.shutdown()


def local_connection(vm: str) -> Dict[str, str]:
    """The benchmarks' usual host: this machine through the local connection, with this venv's interpreter."""
    return {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}


def serve_quiet_fleet(hosts: int, work: Path,
                      connection: Callable[[str], Dict[str, str]] = local_connection) -> QuietFleet:
    """The fleet served, and an inventory of it (group azure_vms) whose hosts are reached as `connection` says."""
    fleet = build_fleet(FleetSpec(name="bench", vms=hosts, fault_domains=3))
    sim = Simulator(Engine(fleet, None, datetime.now(timezone.utc)), ServerOptions(rate_limit=0))
    server, _thread = serve_in_thread(sim)
    inventory = work / "inventory.json"
    inventory.write_text(json.dumps({"azure_vms": {
        "hosts": {v.name: {"maintenance_cycle_imds_url": sim.vm_url(v.name),
                           "maintenance_cycle_state_path": str(work / "state" / f"{v.name}.json"),
                           **connection(v.name)}
                  for v in fleet.vms}}}))
    return QuietFleet(work, inventory, server)


def playbook_env(collections: Path, work: Path) -> Dict[str, str]:
    """The environment of a measured run: the staged collection, no colour, no history callback."""
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    return env


def timed_run(command: List[str], env: Dict[str, str], cwd: Path) -> float:
    """Wall seconds of one run; a failed run ends the benchmark with its failure lines."""
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        failures = [line for line in proc.stdout.splitlines() if "fatal:" in line or "FAILED" in line][:3]
        raise SystemExit(f"{command[1]} failed:\n" + "\n".join(failures) + "\n" + proc.stderr[-1500:])
    return elapsed
