"""What `make test`'s pytest job costs in CPU-seconds, by test file and by test: the 2-core budget is CPU.

    TEST_CPU_REPORT=/tmp/cpu.jsonl .venv/bin/python -m pytest -n 4 --dist loadgroup --ignore=tests/unit
    python tools/test_cpu_report.py /tmp/cpu.jsonl [--top 25] [--timeline 30]

tests/conftest.py writes one line per test (its worker's CPU and its reaped children's, set-up and tear-down
included). Wall times under load say little: a test waits for the cores as much as it uses them
(docs/lab/benchmarks.md, the test suite's cost).
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import Dict, List


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--timeline", type=float, metavar="SECONDS",
                        help="also the tests' CPU and busy workers per slice of the run")
    args = parser.parse_args(argv)
    rows = [json.loads(line) for line in open(args.report) if line.strip()]
    by_test: Counter = Counter()
    for row in rows:
        by_test[row["test"]] += row["cpu_s"]
    by_file: Counter = Counter()
    for test, seconds in by_test.items():
        by_file[test.split("::")[0]] += seconds
    total = sum(by_test.values())
    print(f"{len(by_test)} tests, {total:.0f} CPU-s in all")
    print("\nby file:")
    for name, seconds in by_file.most_common(args.top):
        print(f"  {seconds:8.1f} s  {100 * seconds / total:5.1f} %  {name}")
    print("\nby test:")
    for name, seconds in by_test.most_common(args.top):
        print(f"  {seconds:8.1f} s  {name}")
    if args.timeline:
        print_timeline([r for r in rows if "start" in r], args.timeline)
    return 0


def print_timeline(rows: List[Dict], width: float) -> None:
    """Per slice of the run: the CPU its tests spent (each test's spread evenly over its wall time) against what 2
    cores give, and how many workers were in a test. A slice with few CPU-s and busy workers is tests waiting; the
    last slices show the tail. The ansible-test legs beside pytest are not in the report."""
    if not rows:
        print("\nno timeline: the report predates start and end times")
        return
    origin = min(r["start"] for r in rows)
    slices = int((max(r["end"] for r in rows) - origin) // width) + 1
    cpu, busy = [0.0] * slices, [0.0] * slices
    for row in rows:
        start, end = row["start"] - origin, max(row["end"] - origin, row["start"] - origin + 1e-6)
        for index in range(int(start // width), int(end // width) + 1):
            overlap = min(end, (index + 1) * width) - max(start, index * width)
            cpu[index] += row["cpu_s"] * overlap / (end - start)
            busy[index] += overlap / width
    print(f"\ntimeline ({width:g} s slices; 2 cores give {2 * width:g} CPU-s a slice):")
    for index in range(slices):
        running = [r for r in rows if r["start"] - origin < (index + 1) * width and r["end"] - origin > index * width]
        longest = max(running, key=lambda r: r["end"] - r["start"], default=None)
        name = longest["test"].split("::")[-1][:60] if longest else ""
        print(f"  {index * width:6.0f} s  {cpu[index]:6.1f} CPU-s  {busy[index]:4.1f} workers  {name}")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
