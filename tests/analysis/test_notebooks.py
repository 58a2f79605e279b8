"""Every notebook runs end to end under papermill (a real Jupyter kernel); committed copies carry no outputs."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Dict

import nbformat
import papermill
import pytest

import event_analysis as ea

from tests.analysis.histories import event, observation, write_lines, at

REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
SAMPLE = ea.SAMPLE_HISTORY
# make bench-reaction's runs: relays' change-only histories with the cycles' callback records (event-driven, the retired watch)
RELAY_CAPTURE = ea.REACTION_SAMPLE


def execute(notebook: Path, out: Path, monkeypatch: pytest.MonkeyPatch, **parameters: Any) -> Dict[str, Any]:
    """Run it in a fresh kernel; papermill raises on the first cell error."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))  # the kernel imports event_analysis from this checkout
    monkeypatch.setenv("MPLBACKEND", "Agg")
    papermill.execute_notebook(str(notebook), str(out), parameters=parameters, kernel_name="python3",
                               cwd=str(notebook.parent), progress_bar=False, execution_timeout=300)
    return json.loads(out.read_text())


def text_of(executed: Dict[str, Any]) -> str:
    chunks = []
    for cell in executed["cells"]:
        for output in cell.get("outputs", []):
            chunks.append("".join(output.get("text", "")))
            chunks.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(chunks)


def images_in(executed: Dict[str, Any]) -> int:
    return sum("image/png" in o.get("data", {}) for c in executed["cells"] for o in c.get("outputs", []))


def test_the_four_notebooks_are_there_with_a_parameters_cell() -> None:
    assert [n.stem for n in NOTEBOOKS] == ["durations", "fault_domain_serialisation", "notice_times", "reaction"]
    for path in NOTEBOOKS:
        notebook = nbformat.read(path, as_version=4)
        nbformat.validate(notebook)
        tagged = [c for c in notebook.cells if "parameters" in c.metadata.get("tags", [])]
        assert len(tagged) == 1 and "history = None" in tagged[0].source, path.name
        for cell in notebook.cells:
            if cell.cell_type == "code":
                assert cell.outputs == [] and cell.execution_count is None, f"{path.name}: strip outputs"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_runs_on_the_sample_and_shows_it_is_simulated(notebook: Path, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    executed = execute(notebook, tmp_path / notebook.name, monkeypatch, history=str(SAMPLE))
    output = text_of(executed)
    assert "SIMULATED" in output and "259172 records" in output
    if notebook.stem == "reaction":  # the simulator's sample holds no automation: nothing reacted, said so
        assert "no prepare in this history" in output and "unknown" in output
    else:
        assert images_in(executed) >= 1
    if notebook.stem == "durations":  # the sample's live migrations against the published pause (impact_check)
        assert "published_typical_s" in output and "typical" in output
    if notebook.stem == "fault_domain_serialisation":  # the sample's walk, one fault domain after the other
        assert "0 -> 1 -> 2" in output and "no overlap between fault domains" in output.lower()


def test_the_notice_notebook_flags_short_notice(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    short = event("SHORT", "Scheduled", ["vm0"], not_before=at(10 + 300))
    history = write_lines(tmp_path / "short.jsonl",
                          [observation(0, "vm0", []), observation(10, "vm0", [short]), observation(20, "vm0", [])])
    output = text_of(execute(REPO / "notebooks" / "notice_times.ipynb", tmp_path / "n.ipynb", monkeypatch,
                             history=str(history)))
    assert "SHORT" in output and "below" in output


# One kernel per notebook for both (each kernel costs seconds of CPU to start): the filters keep one quiet host and a
# window, and leave out the host with an event. That the filters select the same as a whole read does on a busy
# history is test_partitioned.py's; every cell on a busy history is the sample's run above.
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_applies_its_filters_and_copes_with_a_quiet_history(notebook: Path, tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    busy = event("E1", "Scheduled", ["vm1"], not_before=at(600))
    history = write_lines(tmp_path / "h.jsonl", [observation(s, "vm0", []) for s in range(0, 200, 10)]
                          + [observation(s, "vm1", [busy]) for s in range(0, 200, 10)])
    output = text_of(execute(notebook, tmp_path / "q.ipynb", monkeypatch, history=str(history), hosts=["vm0"],
                             start="2026-01-05T00:00:50Z", end="2026-01-05T00:02:30Z"))
    # vm0's polls at 50, 60, ... 140 s: the window's end is exclusive
    assert "selected: 10 polls by 1 host(s) from 2026-01-05 00:00:50 to 2026-01-05 00:02:20 UTC, 0 distinct" in output
    assert "no events" in output.lower()


def test_the_reaction_notebook_shows_each_way_of_running_and_the_late_preparation(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.analysis.test_reaction import history
    history(tmp_path)  # writes tmp_path/h.jsonl: an event-driven Reboot and a late Preempt under the watch (an old history's trigger)
    executed = execute(REPO / "notebooks" / "reaction.ipynb", tmp_path / "r.ipynb", monkeypatch,
                       history=str(tmp_path / "h.jsonl"))
    output = text_of(executed)
    assert "event-driven" in output and "watch" in output and "2 prepares begun for 3" in output
    assert images_in(executed) == 1
    assert re.search(r"\bP\s+vm0\s+Preempt\s+watch\b", output), "the late Preempt is listed"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_reads_the_relays_capture_and_says_the_same_of_it_part_by_part(
        notebook: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relay histories mixed with a cycles' capture: the relays' series are said to be change-only. And a folder
    from `python -m event_analysis partition`, read part by part, gives every table and sentence the file itself
    gives (on 5 parts)."""
    ea.partition_history(str(RELAY_CAPTURE), tmp_path / "parts", parts=5)
    whole = execute(notebook, tmp_path / "file.ipynb", monkeypatch, history=str(RELAY_CAPTURE))
    as_file = text_of(whole)
    assert "SIMULATED" in as_file and "change-only" in as_file, "the relays' series are said to be change-only"
    if notebook.stem == "reaction":
        assert re.search(r"event-driven\s+Preempt", as_file) and re.search(r"watch\s+Preempt", as_file)
        assert images_in(whole) == 1
    as_parts = text_of(execute(notebook, tmp_path / "parts.ipynb", monkeypatch, history=str(tmp_path / "parts")))
    assert "read part by part: 5 parts" in as_parts

    def comparable(text: str) -> list:
        # Sorted: a cell's printed lines and its displayed tables reach the notebook as separate messages, whose
        # order a loaded machine can swap (seen in a CI-like run); every line must still be there, as often. Blank
        # lines are left out: a loaded kernel splits one cell's printing into more or fewer stream messages (CI, stop
        # 34: two more blank lines, every printed line the same), and each message adds a separator.
        return sorted(line for line in text.splitlines()
                      if line.strip() and "(as given)" not in line and "read part by part" not in line)

    assert comparable(as_parts) == comparable(as_file) and len(comparable(as_file)) > 20
