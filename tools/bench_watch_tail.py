"""Benchmark: what a watch that stops early pays for the round plays it does not use.

playbooks/watch.yml is a setup play and 600 identical round plays (tools/make_watch_playbook.py says why). A
watch that ends after its first round still walks the other 599, each ending at once. This starts the simulator
with a quiet fleet, stages the collection twice (the shipped watch, and the same watch generated with one round)
and alternates, R times each, a watch of one round (watch_seconds=1) through both, then reports the medians,
their difference and what one unused play costs.
Usage: python tools/bench_watch_tail.py [--hosts 3] [--rounds 3]      (make bench-watch-tail)
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
from tools.make_watch_playbook import render  # noqa: E402
from tools.stage_collection import stage  # noqa: E402

SHIPPED_ROUNDS = 600


def timed(command: list, env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    proc = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"the watch failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-1000:]}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    fleet = build_fleet(FleetSpec(name="bench", vms=args.hosts, fault_domains=3))
    sim = Simulator(Engine(fleet, None, datetime.now(timezone.utc)), ServerOptions(rate_limit=0))
    server, _thread = serve_in_thread(sim)
    work = Path(tempfile.mkdtemp(prefix="bench-watch-tail-"))
    shipped, one_round = work / "shipped", work / "one-round"
    stage(shipped)
    stage(one_round)
    (one_round / "ansible_collections/azure_imds/scheduled_events/playbooks/watch.yml").write_text(render(1))
    inventory = work / "inventory.json"
    inventory.write_text(json.dumps({"azure_vms": {
        "hosts": {v.name: {"maintenance_cycle_imds_url": sim.vm_url(v.name),
                           "maintenance_cycle_state_path": str(work / "state" / f"{v.name}.json")}
                  for v in fleet.vms},
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}))
    watch = [str(Path(sys.executable).parent / "ansible-playbook"), "azure_imds.scheduled_events.watch", "-i",
             str(inventory), "-f", str(args.hosts), "-e", "watch_seconds=1",
             "-e", "maintenance_cycle_vm_memory=" + str(work / "vms.json")]
    times = {"shipped": [], "one round": []}
    try:
        for _ in range(args.rounds):
            for name, collections in (("shipped", shipped), ("one round", one_round)):
                env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(collections), ANSIBLE_NOCOLOR="1",
                           ANSIBLE_LOCAL_TEMP=str(work / "tmp"))
                env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
                times[name].append(timed(watch, env, work))
    finally:
        server.shutdown()
    full, short = statistics.median(times["shipped"]), statistics.median(times["one round"])
    unused = SHIPPED_ROUNDS - 1
    print(f"hosts={args.hosts} repetitions={args.rounds}; a watch of one round (watch_seconds=1)")
    print(f"shipped watch.yml ({SHIPPED_ROUNDS} round plays): median {full:.2f} s  runs {[round(t, 2) for t in times['shipped']]}")
    print(f"the same with 1 round play:          median {short:.2f} s  runs {[round(t, 2) for t in times['one round']]}")
    print(f"the {unused} unused plays cost {full - short:.2f} s, {1000 * (full - short) / unused:.1f} ms each; "
          f"ratio {full / short:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
