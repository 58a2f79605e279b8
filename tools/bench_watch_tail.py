"""Benchmark: what a watch that stops early pays for the round plays it does not use.

playbooks/watch.yml is a setup play and 600 identical round plays (tools/make_watch_playbook.py says why). A
watch that ends after its first round still walks the other 599, each ending at once. This starts the simulator
with a quiet fleet, stages the collection three times (the shipped watch, the same watch generated with one
round, and the shipped watch of a baseline commit) and alternates, R times each, a watch of one round
(watch_seconds=1) through each, then reports the medians, what the unused rounds cost and the ratios.
Usage: python tools/bench_watch_tail.py [--hosts 3] [--rounds 3] [--baseline 4f51e7b]   (make bench-watch-tail)
"""
from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tools.bench_busy_cycle import unpack  # noqa: E402
from tools.bench_quiet_fleet import ANSIBLE_PLAYBOOK, playbook_env, serve_quiet_fleet, timed_run  # noqa: E402
from tools.make_watch_playbook import render  # noqa: E402
from tools.stage_collection import stage  # noqa: E402

SHIPPED_ROUNDS = 600  # rounds in the shipped watch.yml (and in the baseline's)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--baseline", default="4f51e7b", help="the commit whose shipped watch to compare with")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-watch-tail-"))
    fleet = serve_quiet_fleet(args.hosts, work)
    shipped, one_round, baseline = work / "shipped", work / "one-round", work / "baseline"
    stage(shipped)
    stage(one_round)
    stage(baseline, unpack(args.baseline, work / "baseline-src"))
    (one_round / "ansible_collections/azure_imds/scheduled_events/playbooks/watch.yml").write_text(render(1))
    watch = [ANSIBLE_PLAYBOOK, "azure_imds.scheduled_events.watch", "-i", str(fleet.inventory),
             "-f", str(args.hosts), "-e", "watch_seconds=1", "-e", "maintenance_cycle_vm_memory=" + str(work / "vms.json")]
    sides = {"shipped": shipped, "one round": one_round, f"baseline {args.baseline}": baseline}
    times = {name: [] for name in sides}
    try:
        for _ in range(args.rounds):
            for name, collections in sides.items():
                times[name].append(timed_run(watch, playbook_env(collections, work), work))
    finally:
        fleet.close()
    full, short, base = (statistics.median(times[name]) for name in sides)
    unused = SHIPPED_ROUNDS - 1
    print(f"hosts={args.hosts} repetitions={args.rounds}; a watch of one round (watch_seconds=1)")
    for name, runs in times.items():
        print(f"{name:>20}: median {statistics.median(runs):.2f} s  runs {[round(t, 2) for t in runs]}")
    print(f"the {unused} unused rounds cost {full - short:.2f} s ({1000 * (full - short) / unused:.1f} ms each); "
          f"at {args.baseline}, {base - short:.2f} s; ratio shipped/one round {full / short:.2f}, "
          f"shipped/baseline {full / base:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
