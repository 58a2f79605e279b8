"""Benchmark: the quiet maintenance cycle against the floor of one HTTP request per host.

Starts the IMDS simulator with a quiet fleet of N VMs (no events), saves a state
on every simulated VM with one cycle, then alternates, R times each:
  A. azure_imds.scheduled_events.cycle (the role's quiet path), and
  B. a one-task playbook doing one ansible.builtin.uri GET per host to the same IMDS,
and reports the median wall time of each and the ratio A/B. Target: <= 1.3.
Usage: python tools/bench_quiet_cycle.py [--hosts 100] [--rounds 3] [--forks 10]
Run from the repo root with the project's virtual environment (make bench-cycle).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.engine import Engine  # noqa: E402
from imds_simulator.fleet import FleetSpec, build_fleet  # noqa: E402
from imds_simulator.server import ServerOptions, Simulator, serve_in_thread  # noqa: E402
from tools.stage_collection import stage  # noqa: E402

URI_PLAYBOOK = """---
- name: Floor - one HTTP GET per host through Ansible
  hosts: azure_vms
  gather_facts: false
  tasks:
    - name: Read scheduled events with ansible.builtin.uri
      ansible.builtin.uri:
        url: "{{ maintenance_cycle_imds_url }}/metadata/scheduledevents?api-version=2020-07-01"
        headers:
          Metadata: "true"
        use_proxy: false
"""


def run(command: list, env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        failures = [line for line in proc.stdout.splitlines() if "fatal:" in line or "FAILED" in line][:3]
        raise SystemExit(f"{command[1]} failed:\n" + "\n".join(failures) + "\n" + proc.stderr[-1500:])
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", type=int, default=10)
    args = parser.parse_args()

    fleet = build_fleet(FleetSpec(name="bench", vms=args.hosts, fault_domains=3))
    sim = Simulator(Engine(fleet, None, datetime.now(timezone.utc)), ServerOptions(rate_limit=0))
    server, _thread = serve_in_thread(sim)
    work = Path(tempfile.mkdtemp(prefix="bench-quiet-cycle-"))
    collections = work / "collections"
    stage(collections)
    bin_dir = Path(sys.executable).parent
    inventory = work / "inventory.json"
    inventory.write_text(json.dumps({"azure_vms": {
        "hosts": {v.name: {"maintenance_cycle_imds_url": sim.vm_url(v.name),
                           "maintenance_cycle_state_path": str(work / "state" / f"{v.name}.json")}
                  for v in fleet.vms},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    (work / "uri.yml").write_text(URI_PLAYBOOK)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(work / "tmp"))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    cycle = [str(bin_dir / "ansible-playbook"), "azure_imds.scheduled_events.cycle", "-i", str(inventory),
             "-f", str(args.forks), "-e", "maintenance_cycle_vm_memory=" + str(work / "vms.json")]
    uri = [str(bin_dir / "ansible-playbook"), str(work / "uri.yml"), "-i", str(inventory), "-f", str(args.forks)]
    try:
        run(cycle, env, work)  # first cycle writes every VM's state; later ones are quiet
        times = {"cycle": [], "uri": []}
        for _ in range(args.rounds):
            times["cycle"].append(run(cycle, env, work))
            times["uri"].append(run(uri, env, work))
    finally:
        server.shutdown()
    cycle_s, uri_s = statistics.median(times["cycle"]), statistics.median(times["uri"])
    print(f"hosts={args.hosts} forks={args.forks} rounds={args.rounds}")
    print(f"quiet cycle (azure_imds.scheduled_events.cycle): median {cycle_s:.2f} s  runs {[round(t, 2) for t in times['cycle']]}")
    print(f"floor (one ansible.builtin.uri GET per host):    median {uri_s:.2f} s  runs {[round(t, 2) for t in times['uri']]}")
    print(f"ratio cycle/uri = {cycle_s / uri_s:.2f} (target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
