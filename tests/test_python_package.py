"""The analysis library and the simulator as a Python package: a wheel that works where no repository is."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.xdist_group("wheel")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout (offline: the test requirements' setuptools)."""
    dist = tmp_path_factory.mktemp("dist")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dist),
                    str(REPO)], check=True, capture_output=True, timeout=600)
    (built,) = dist.glob("*.whl")
    return built


@pytest.fixture(scope="module")
def installed(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel installed into a folder of its own, without dependencies (this interpreter has them; their
    declaration is checked below)."""
    site = tmp_path_factory.mktemp("site")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target", str(site), str(wheel)],
                   check=True, capture_output=True, timeout=600)
    return site


def run_outside(site: Path, tmp: Path, *command: str) -> subprocess.CompletedProcess:
    """Run from an unrelated folder, with the installed wheel first on the path and no repository on it."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SCHEDULED_EVENTS_HISTORY")}
    env.update(PYTHONPATH=str(site), PYTHONNOUSERSITE="1", HOME=str(tmp), MPLBACKEND="Agg")
    return subprocess.run(list(command), cwd=tmp, env=env, capture_output=True, text=True, timeout=300)


def test_the_wheel_holds_the_two_packages_their_data_and_no_collection_content(wheel: Path) -> None:
    assert wheel.name.startswith("azure_imds_scheduled_events_analysis-")
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")}
    assert tops == {"event_analysis", "imds_simulator"}
    assert "event_analysis/samples/sample-history.simulated.jsonl.gz" in names
    assert "event_analysis/samples/reaction-sample.simulated.jsonl.gz.meta.json" in names
    assert "imds_simulator/scenarios/fleet-mix.json" in names and "event_analysis/loading/history_records.py" in names
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry_points).decode()
    assert "scheduled-events-analysis = event_analysis.__main__:main" in text
    assert "imds-simulator = imds_simulator.cli:main" in text
    metadata = zipfile.ZipFile(wheel).read(entry_points.replace("entry_points.txt", "METADATA")).decode()
    requires = {line.split(":", 1)[1].strip().split(";")[0].strip() for line in metadata.splitlines()
                if line.startswith("Requires-Dist:")}
    # What the library imports at its top level must be declared (the notebooks' and AWX's in their extras).
    assert {"pandas<4,>=2.2", "pyarrow>=16", "matplotlib<4,>=3.8"} <= requires
    assert "requests<3,>=2.31" in requires and "papermill<3,>=2.6" in requires


def test_the_installed_package_is_the_wheel_and_reads_no_repository_file(installed: Path, tmp_path: Path) -> None:
    probe = ("import json, event_analysis as ea, event_analysis.loading.awx as awx, imds_simulator\n"
             "print(json.dumps([ea.__file__, imds_simulator.__file__, awx.history_records.__file__, "
             "str(ea.SAMPLE_HISTORY)]))")
    run = run_outside(installed, tmp_path, sys.executable, "-c", probe)
    assert run.returncode == 0, run.stderr
    assert all(path.startswith(str(installed)) for path in json.loads(run.stdout)), run.stdout


def test_the_console_scripts_generate_partition_and_summarise(installed: Path, tmp_path: Path) -> None:
    """A what-if history from the simulator's script, partitioned and summarised by the analysis script."""
    simulator, analysis = installed / "bin" / "imds-simulator", installed / "bin" / "scheduled-events-analysis"
    made = run_outside(installed, tmp_path, str(simulator), "generate", "--scenario", "fleet-mix", "--days", "2",
                       "--poll-interval", "5", "--change-only", "--approve", "user", "--out", "what-if.jsonl.gz")
    assert made.returncode == 0, made.stderr
    split = run_outside(installed, tmp_path, str(analysis), "partition", "what-if.jsonl.gz", "parts", "--parts", "3")
    assert split.returncode == 0 and "wrote 3 parts to parts" in split.stdout, split.stderr
    summary = run_outside(installed, tmp_path, str(analysis), "summary", "parts")
    assert summary.returncode == 0, summary.stderr
    assert "read part by part: 3 parts" in summary.stdout and "change-only" in summary.stdout
    assert "Fault-domain walk: " in summary.stdout and "event lifecycles:" in summary.stdout
    sample = run_outside(installed, tmp_path, str(analysis), "summary",
                         str(installed / "event_analysis" / "samples" / "sample-history.simulated.jsonl.gz"))
    assert sample.returncode == 0 and "SIMULATED" in sample.stdout, sample.stderr
    wrong = run_outside(installed, tmp_path, str(analysis), "summary", "nothing-here.jsonl")
    assert wrong.returncode == 1 and wrong.stderr.strip() == \
        "scheduled-events-analysis: no history file at nothing-here.jsonl." and not wrong.stdout


def test_reading_from_awx_without_requests_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    """requests is the `awx` extra, not a dependency: without it, one sentence says what to install."""
    from event_analysis import HistoryError
    from event_analysis.loading import awx

    monkeypatch.setitem(sys.modules, "requests", None)  # as if it were not installed
    with pytest.raises(HistoryError, match=r"^reading a job from AWX needs the requests package: pip install "
                                           r"'azure-imds-scheduled-events-analysis\[awx\]'"):
        list(awx.awx_job_events("https://awx.example", 1, "token"))
