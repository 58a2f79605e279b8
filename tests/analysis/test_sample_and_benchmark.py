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
from tools import bench_month
from tools.make_sample_history import NAME, make

REPO = Path(__file__).resolve().parents[2]
SAMPLE = REPO / "event_analysis" / "samples" / NAME


def test_the_sample_history_is_reproducible_and_labelled_simulated(tmp_path: Path) -> None:
    fresh = make(tmp_path)
    assert gzip.decompress(fresh.read_bytes()) == gzip.decompress(SAMPLE.read_bytes()), \
        "event_analysis/samples is stale: run python tools/make_sample_history.py"
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


def test_the_month_benchmark_measures_every_step_on_day_files(tmp_path: Path) -> None:
    """tools/bench_month.py at a tiny scale: day files, then every step measured in its own process, the
    part-by-part analysis saying what the whole one says; a second run would reuse the history. One notebook: each
    runs the same step, and every notebook reads a partitioned history in test_notebooks.py."""
    command = [sys.executable, "tools/bench_month.py", "--days", "1.2", "--sets", "2", "--vms-per-set", "5",
               "--parts", "3", "--folder", str(tmp_path)]
    refused = subprocess.run(command + ["--notebooks", "reaction,timing"], cwd=REPO, capture_output=True, text=True,
                             timeout=120, check=False)
    assert refused.returncode == 2 and "--notebooks names timing, which is no notebook" in refused.stderr
    assert "Traceback" not in refused.stderr and not list(tmp_path.iterdir()), "refused before anything is made"
    run = subprocess.run(command + ["--notebooks", "fault_domain_serialisation"], cwd=REPO, capture_output=True,
                         text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stderr
    assert sorted(p.name for p in tmp_path.glob("relay-*.jsonl.gz")) == ["relay-2026-01-05.jsonl.gz",
                                                                        "relay-2026-01-06.jsonl.gz"]
    steps = dict(re.findall(r"^\s+(\S+)\s+[\d.]+ s\s+peak\s+\d+ MiB\s+(.*)$", run.stdout, re.M))
    assert list(steps) == ["plain-parse", "partition", "part-by-part", "whole", "notebook:fault_domain_serialisation"]
    assert not any(result.startswith("FAILED") for result in steps.values()), steps
    assert steps["part-by-part"] == steps["whole"] and "2 sets" in steps["whole"]
    # What a second run with the same parameters does first, in this process (each measured step of a run is a
    # process of its own): it finds the day files and their description, and generates nothing.
    made = {path: path.stat().st_mtime_ns for path in tmp_path.glob("relay-*.jsonl.gz")}
    again = bench_month.generate(tmp_path, days=1.2, vms_per_set=5, sets=2)
    assert again["reused"] is True and again["files"] == 2
    assert {path: path.stat().st_mtime_ns for path in tmp_path.glob("relay-*.jsonl.gz")} == made
