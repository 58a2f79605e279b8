"""What `make test`'s pytest job costs in CPU-seconds, by test file and by test: the 2-core budget is CPU.

    TEST_CPU_REPORT=/tmp/cpu.jsonl .venv/bin/python -m pytest -n 4 --dist loadgroup --ignore=tests/unit
    python tools/test_cpu_report.py /tmp/cpu.jsonl [--top 25]

tests/conftest.py writes one line per test (its worker's CPU and its reaped children's, set-up and tear-down
included). Wall times under load say little: a 30-CPU-second test took 268 s in a loaded CI run.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from typing import List


def main(argv: List[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("report")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args(argv)
    by_test: Counter = Counter()
    for line in open(args.report):
        if line.strip():
            row = json.loads(line)
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
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
