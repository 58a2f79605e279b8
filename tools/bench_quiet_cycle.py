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
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.bench_quiet_fleet import ANSIBLE_PLAYBOOK, playbook_env, serve_quiet_fleet, timed_run  # noqa: E402
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", type=int, default=10)
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-quiet-cycle-"))
    fleet = serve_quiet_fleet(args.hosts, work)
    collections = work / "collections"
    stage(collections)
    (work / "uri.yml").write_text(URI_PLAYBOOK)
    env = playbook_env(collections, work)
    cycle = [ANSIBLE_PLAYBOOK, "azure_imds.scheduled_events.cycle", "-i", str(fleet.inventory),
             "-f", str(args.forks), "-e", "maintenance_cycle_vm_memory=" + str(work / "vms.json")]
    uri = [ANSIBLE_PLAYBOOK, str(work / "uri.yml"), "-i", str(fleet.inventory), "-f", str(args.forks)]
    try:
        timed_run(cycle, env, work)  # first cycle writes every VM's state; later ones are quiet
        times = {"cycle": [], "uri": []}
        for _ in range(args.rounds):
            times["cycle"].append(timed_run(cycle, env, work))
            times["uri"].append(timed_run(uri, env, work))
    finally:
        fleet.close()
    cycle_s, uri_s = statistics.median(times["cycle"]), statistics.median(times["uri"])
    print(f"hosts={args.hosts} forks={args.forks} rounds={args.rounds}")
    print(f"quiet cycle (azure_imds.scheduled_events.cycle): median {cycle_s:.2f} s  runs {[round(t, 2) for t in times['cycle']]}")
    print(f"floor (one ansible.builtin.uri GET per host):    median {uri_s:.2f} s  runs {[round(t, 2) for t in times['uri']]}")
    print(f"ratio cycle/uri = {cycle_s / uri_s:.2f} (target <= 1.3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
