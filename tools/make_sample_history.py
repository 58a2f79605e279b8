"""Regenerate the sample history the notebooks ship with (simulated; see event_analysis/samples/README.md).

    python tools/make_sample_history.py [--out DIR]

Deterministic: the same simulator and seed write the same bytes, which a test checks.
"""
from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from imds_simulator.offline import write_description  # noqa: E402

NAME = "sample-history.simulated.jsonl.gz"
ARGS = ["--scenario", "sample-week", "--days", "5", "--poll-interval", "10", "--approve", "user",
        "--seed", "11", "--start", "2026-01-05T00:00:00Z"]


def make(out_dir: Path) -> Path:
    out_dir.mkdir(parents=True, exist_ok=True)
    history = out_dir / NAME
    subprocess.run([sys.executable, "-m", "imds_simulator", "generate", *ARGS, "--out", str(history)],
                   cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    # generate wrote a description naming this machine's --out path: the shipped one names the command alone
    write_description(str(history), "python -m imds_simulator generate " + " ".join(ARGS),
                      "a 6-VM availability set over 5 days")
    return history


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=REPO / "event_analysis" / "samples")
    print(make(parser.parse_args().out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
