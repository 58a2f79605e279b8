"""Every notebook runs end to end under papermill (a real Jupyter kernel); committed copies carry no outputs."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any, Dict, Iterator

import nbformat
import papermill
import pytest
from nbclient import NotebookClient
from papermill.clientwrap import PapermillNotebookClient
from papermill.engines import NBClientEngine, papermill_engines

import event_analysis as ea

from tests.analysis.histories import event, observation, write_lines, at

# One worker runs the file (`--dist loadgroup`): each notebook's kernel, and the partitioned capture, are made once.
pytestmark = pytest.mark.xdist_group("notebooks")
REPO = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((REPO / "notebooks").glob("*.ipynb"))
SAMPLE = ea.SAMPLE_HISTORY
# make bench-reaction's runs: relays' change-only histories with the cycles' callback records (event-driven, the retired watch)
RELAY_CAPTURE = ea.REACTION_SAMPLE


class Kernel:
    """One notebook's own Jupyter kernel, started for its first run and kept for its later ones: a kernel's start
    and its imports of pandas and matplotlib cost seconds of CPU each time. The first run is a fresh kernel's; each
    later run starts from an empty namespace and no open figure (so a name or figure a run relies on must be its
    own cells'), and only ever after runs of the same notebook, so nothing another notebook did can help it."""

    def __init__(self, cwd: Path):
        env = dict(os.environ, PYTHONPATH=str(REPO), MPLBACKEND="Agg")  # the kernel imports this checkout's library
        self.client = NotebookClient(nbformat.v4.new_notebook(), kernel_name="python3", startup_timeout=120)
        self.client.km = self.client.create_kernel_manager()
        self.client.start_new_kernel(cwd=str(cwd), env=env)
        self.client.start_new_kernel_client()
        self.runs = 0

    def execute(self, notebook: Path, out: Path, **parameters: Any) -> Dict[str, Any]:
        """Run it under papermill (which raises on the first cell error) with its parameters injected."""
        if self.runs:
            self._forget()
        self.runs += 1
        papermill.execute_notebook(str(notebook), str(out), parameters=parameters, engine_name=ON_A_KEPT_KERNEL,
                                   progress_bar=False, execution_timeout=300, kernel=self)
        return json.loads(out.read_text())

    def _forget(self) -> None:
        cell = nbformat.v4.new_code_cell('import sys\nif "matplotlib.pyplot" in sys.modules:\n'
                                         '    sys.modules["matplotlib.pyplot"].close("all")\n%reset -f')
        self._on_this_kernel(NotebookClient(nbformat.v4.new_notebook(cells=[cell]), km=self.client.km,
                                            timeout=60)).execute()

    def _on_this_kernel(self, client: NotebookClient) -> NotebookClient:
        client.kc = self.client.kc  # reused: a client of its own per run would leave its channels open
        return client

    def close(self) -> None:
        self.client._cleanup_kernel()  # pylint: disable=protected-access (nbclient's own shutdown of what it started)


class OnAKeptKernel(NBClientEngine):
    """Papermill's nbclient engine, on a Kernel already running rather than a new one per notebook."""

    @classmethod
    def execute_managed_notebook(cls, nb_man: Any, kernel_name: str, log_output: bool = False,  # type: ignore[override]
                                 execution_timeout: Any = None, kernel: Kernel = None, **kwargs: Any) -> Any:
        client = PapermillNotebookClient(nb_man, km=kernel.client.km, timeout=execution_timeout,
                                         kernel_name=kernel_name, log_output=log_output)
        return kernel._on_this_kernel(client).execute()  # pylint: disable=protected-access


ON_A_KEPT_KERNEL = "azure-imds-tests-kept-kernel"
papermill_engines.register(ON_A_KEPT_KERNEL, OnAKeptKernel)


@pytest.fixture(scope="module")
def kernels() -> Iterator[Dict[str, Kernel]]:
    started: Dict[str, Kernel] = {}
    yield started
    for kernel in started.values():
        kernel.close()


def execute(kernels: Dict[str, Kernel], notebook: Path, out: Path, **parameters: Any) -> Dict[str, Any]:
    """Run `notebook` on its own kernel (started by its first run)."""
    if notebook.stem not in kernels:
        kernels[notebook.stem] = Kernel(notebook.parent)
    return kernels[notebook.stem].execute(notebook, out, **parameters)


@pytest.fixture(scope="module")
def relay_parts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The relays' capture, partitioned once for every notebook's part-by-part run."""
    folder = tmp_path_factory.mktemp("relay") / "parts"
    ea.partition_history(str(RELAY_CAPTURE), folder, parts=5)
    return folder


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
                                                                   kernels: Dict[str, Kernel]) -> None:
    executed = execute(kernels, notebook, tmp_path / notebook.name, history=str(SAMPLE))
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


def test_the_notice_notebook_flags_short_notice(tmp_path: Path, kernels: Dict[str, Kernel]) -> None:
    short = event("SHORT", "Scheduled", ["vm0"], not_before=at(10 + 300))
    history = write_lines(tmp_path / "short.jsonl",
                          [observation(0, "vm0", []), observation(10, "vm0", [short]), observation(20, "vm0", [])])
    output = text_of(execute(kernels, REPO / "notebooks" / "notice_times.ipynb", tmp_path / "n.ipynb",
                             history=str(history)))
    assert "SHORT" in output and "below" in output


# Both in one run: the filters keep one quiet host and a window, and leave out the host with an event. That the filters select the same as a whole read does on a busy
# history is test_partitioned.py's; every cell on a busy history is the sample's run above.
@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_applies_its_filters_and_copes_with_a_quiet_history(notebook: Path, tmp_path: Path,
                                                                          kernels: Dict[str, Kernel]) -> None:
    busy = event("E1", "Scheduled", ["vm1"], not_before=at(600))
    history = write_lines(tmp_path / "h.jsonl", [observation(s, "vm0", []) for s in range(0, 200, 10)]
                          + [observation(s, "vm1", [busy]) for s in range(0, 200, 10)])
    output = text_of(execute(kernels, notebook, tmp_path / "q.ipynb", history=str(history), hosts=["vm0"],
                             start="2026-01-05T00:00:50Z", end="2026-01-05T00:02:30Z"))
    # vm0's polls at 50, 60, ... 140 s: the window's end is exclusive
    assert "selected: 10 polls by 1 host(s) from 2026-01-05 00:00:50 to 2026-01-05 00:02:20 UTC, 0 distinct" in output
    assert "no events" in output.lower()


def test_the_reaction_notebook_shows_each_way_of_running_and_the_late_preparation(
        tmp_path: Path, kernels: Dict[str, Kernel]) -> None:
    from tests.analysis.test_reaction import history
    history(tmp_path)  # writes tmp_path/h.jsonl: an event-driven Reboot and a late Preempt under the watch (an old history's trigger)
    executed = execute(kernels, REPO / "notebooks" / "reaction.ipynb", tmp_path / "r.ipynb",
                       history=str(tmp_path / "h.jsonl"))
    output = text_of(executed)
    assert "event-driven" in output and "watch" in output and "2 prepares begun for 3" in output
    assert images_in(executed) == 1
    assert re.search(r"\bP\s+vm0\s+Preempt\s+watch\b", output), "the late Preempt is listed"


@pytest.mark.parametrize("notebook", NOTEBOOKS, ids=lambda p: p.stem)
def test_each_notebook_reads_the_relays_capture_and_says_the_same_of_it_part_by_part(
        notebook: Path, tmp_path: Path, kernels: Dict[str, Kernel], relay_parts: Path) -> None:
    """Relay histories mixed with a cycles' capture: the relays' series are said to be change-only. And a folder
    from `python -m event_analysis partition`, read part by part, gives every table and sentence the file itself
    gives (on 5 parts)."""
    whole = execute(kernels, notebook, tmp_path / "file.ipynb", history=str(RELAY_CAPTURE))
    as_file = text_of(whole)
    assert "SIMULATED" in as_file and "change-only" in as_file, "the relays' series are said to be change-only"
    if notebook.stem == "reaction":
        assert re.search(r"event-driven\s+Preempt", as_file) and re.search(r"watch\s+Preempt", as_file)
        assert images_in(whole) == 1
    as_parts = text_of(execute(kernels, notebook, tmp_path / "parts.ipynb", history=str(relay_parts)))
    assert "read part by part: 5 parts" in as_parts

    def comparable(text: str) -> list:
        # Sorted: a cell's printed lines and its displayed tables reach the notebook as separate messages, whose
        # order a loaded machine can swap (seen in a CI-like run); every line must still be there, as often. Blank
        # lines are left out: a loaded kernel splits one cell's printing into more or fewer stream messages (CI, stop
        # 34: two more blank lines, every printed line the same), and each message adds a separator.
        return sorted(line for line in text.splitlines()
                      if line.strip() and "(as given)" not in line and "read part by part" not in line)

    assert comparable(as_parts) == comparable(as_file) and len(comparable(as_file)) > 20
