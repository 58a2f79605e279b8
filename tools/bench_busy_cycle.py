"""Benchmark: one maintenance cycle over an availability set with one fault domain in maintenance, this
checkout against a baseline commit, side by side in one run.

Each round runs both sides in turn, each on a fresh simulated availability set of N VMs (3 fault domains,
time scale 1) with a Reboot listing every VM of fault domain 0 (900 s notice) and no saved state: one
`azure_imds.scheduled_events.cycle` with the test prepare/recover log tasks, approval of prepared events off
(so every round does the same work: read every VM, prepare and save the listed third, release their locks).
Reports, per side, the median wall time and the median CPU time of the playbook's whole process tree
(getrusage of reaped children), and the ratios this/baseline.

    python tools/bench_busy_cycle.py [--hosts 200] [--rounds 3] [--forks 5] [--baseline 821289b]
The baseline is unpacked with `git archive` (it must be a commit of this repository). Run from the repo root
with the project's virtual environment (make bench-cycle).
"""
from __future__ import annotations

import argparse
import io
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Tuple

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.fleet import FleetSpec  # noqa: E402
from tests.integration.runner import CycleBench  # noqa: E402
from tests.live_fleet import LiveFleet  # noqa: E402
from tools.stage_collection import stage  # noqa: E402


def unpack(ref: str, dest: Path) -> Path:
    """The tree of commit `ref` in dest (a checkout of the baseline, without touching this one)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", ref], capture_output=True, check=False)
    if archive.returncode != 0:
        raise SystemExit(f"git archive {ref} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(dest, **({"filter": "data"} if hasattr(tarfile, "data_filter") else {}))
    return dest


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def one_cycle(collections: Path, work: Path, hosts: int, forks: int) -> Tuple[float, float]:
    """(wall s, CPU s) of one cycle on a fresh fleet with fault domain 0 in maintenance."""
    fleet = LiveFleet(None, time_scale=1.0, fleet=FleetSpec(name="bench", vms=hosts, fault_domains=3))
    try:
        fleet.inject({"key": "fd0", "type": "Reboot", "source": "Platform", "notice_s": 900,
                      "resources": {"fault_domain": 0}})
        bench = CycleBench(fleet, work)
        cpu0, started = children_cpu(), time.perf_counter()
        run = bench.run(forks=forks, extra={"maintenance_cycle_approve_prepared_events": False}, timeout=3600,
                        env={"ANSIBLE_COLLECTIONS_PATH": str(collections)})
        wall, cpu = time.perf_counter() - started, children_cpu() - cpu0
        if run.returncode != 0 or run.failed_hosts():
            raise SystemExit(f"the cycle failed (rc {run.returncode}, failed hosts {run.failed_hosts()[:5]}):\n"
                             + run.stdout[-2000:] + run.stderr[-1000:])
        prepared = len(bench.actions("prepare"))
        listed = len(fleet.engine.fleet.in_fault_domain(0))
        if prepared != listed:
            raise SystemExit(f"the cycle prepared {prepared} VMs, the event lists {listed}")
        return wall, cpu
    finally:
        fleet.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--forks", type=int, default=5)
    parser.add_argument("--baseline", default="821289b", help="the commit to compare with")
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="bench-busy-cycle-"))
    sides = {"this checkout": stage(root / "this", REPO).parents[2],
             f"baseline {args.baseline}": stage(root / "baseline", unpack(args.baseline, root / "src")).parents[2]}
    times: Dict[str, List[Tuple[float, float]]] = {side: [] for side in sides}
    for number in range(args.rounds):
        for side, collections in sides.items():
            times[side].append(one_cycle(collections, root / f"run-{number}-{len(times[side])}-{side[:4]}",
                                         args.hosts, args.forks))
            print(f"round {number + 1} {side}: {times[side][-1][0]:.1f} s wall, {times[side][-1][1]:.1f} CPU-s",
                  flush=True)
    medians = {side: (statistics.median(t[0] for t in runs), statistics.median(t[1] for t in runs))
               for side, runs in times.items()}
    (this_wall, this_cpu), (base_wall, base_cpu) = medians.values()
    print(f"hosts={args.hosts} (fault domain 0 listed: a third) forks={args.forks} rounds={args.rounds}")
    for side, (wall, cpu) in medians.items():
        print(f"{side}: median {wall:.1f} s wall, {cpu:.1f} CPU-s")
    print(f"ratio this/baseline: wall {this_wall / base_wall:.2f}, CPU {this_cpu / base_cpu:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
