"""The shipped sample history is what its generator writes; the benchmark script measures and reports."""
from __future__ import annotations

import gzip
import json
import re
import subprocess
import sys
from pathlib import Path
from typing import List

import pytest

import event_analysis as ea
from tools.make_sample_history import NAME, make

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "notebooks" / "data" / NAME


def test_the_sample_history_is_reproducible_and_labelled_simulated(tmp_path: Path) -> None:
    fresh = make(tmp_path)
    assert gzip.decompress(fresh.read_bytes()) == gzip.decompress(SAMPLE.read_bytes()), \
        "notebooks/data is stale: run python tools/make_sample_history.py"
    meta = json.loads((SAMPLE.parent / (NAME + ".meta.json")).read_text())
    assert meta["simulated"] is True and "SIMULATED" in meta["description"]
    assert "simulated" in (SAMPLE.parent / "README.md").read_text().lower()


def test_the_sample_holds_what_the_notebooks_promise() -> None:
    observations = ea.load_history(ea.SAMPLE_HISTORY)
    lifecycles = ea.event_lifecycles(observations)
    assert ea.report_of(observations).simulated
    assert lifecycles["vm"].nunique() == 6
    kinds = set(zip(lifecycles["event_type"], lifecycles["event_source"], lifecycles["outcome"]))
    assert ("Reboot", "Platform", "completed") in kinds and ("Reboot", "User", "completed") in kinds
    assert ("Freeze", "Platform", "completed") in kinds and ("Reboot", "Platform", "cancelled") in kinds
    failures = lifecycles[lifecycles["first_seen_started"]]
    assert set(zip(failures["event_type"], failures["event_source"])) == {("Reboot", "Platform")}
    assert lifecycles["approved"].any()


@pytest.mark.parametrize("kind", [[], ["--change-only", "--busier", "40"]], ids=["per-poll", "change-only"])
def test_the_benchmark_reports_both_times_and_the_ratio(kind: List[str]) -> None:
    run = subprocess.run([sys.executable, "tools/bench_analysis.py", "--observations", "20000", "--rounds", "1", *kind],
                         cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    assert re.search(r"history: \d+ observations, \d+ MB, " + ("change-only" if kind else "per-poll"), run.stdout)
    times = dict(re.findall(r"^\s+(parse|arrow|ours)\s+([\d.]+) s", run.stdout, re.M))
    ratio = float(re.search(r"ratio ours / parse = ([\d.]+)", run.stdout).group(1))
    assert set(times) == {"parse", "arrow", "ours"}
    ours, parse = float(times["ours"]), float(times["parse"])
    # the ratio printed is the ratio of the times printed (each rounded to 1 ms)
    assert (ours - 0.0005) / (parse + 0.0005) - 0.005 <= ratio <= (ours + 0.0005) / (parse - 0.0005) + 0.005
