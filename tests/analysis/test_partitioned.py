"""A history partitioned by host and read part by part gives what the whole history gives."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import List

import pandas as pd
import pytest

import event_analysis as ea
from event_analysis.__main__ import main
from event_analysis.loading import partitioned
from tests.analysis.histories import action, approval, at, event, observation, simulate, write_lines

REPO = Path(__file__).resolve().parents[2]
# One worker runs the file (`--dist loadgroup`): the simulated fleet and its whole reading are made once.
pytestmark = [pytest.mark.filterwarnings("ignore::event_analysis.HistoryWarning"), pytest.mark.xdist_group("partitioned")]


def _fleet_files(tmp: Path) -> List[Path]:
    """Three sets (their fault domains 0 are different racks), change-only and per-poll series, approvals,
    action records, a file written twice (duplicates of both kinds) and a bad line."""
    relay = simulate(tmp, "fleet-mix", days=2, poll=5, seed=3, approve="user", change_only=True,
                     name="relay.jsonl", vms=6, fault_domains=3, sets=2, set_names=["web", "db"])
    polled = simulate(tmp, "fleet-mix", days=2, poll=120, seed=4, approve="all", name="polled.jsonl",
                      kind="scale_set", vms=4, fault_domains=2)
    lines = relay.path.read_text(encoding="utf-8").splitlines(keepends=True)
    extra = write_lines(tmp / "extra.jsonl", [
        approval(10, "web-vm0", ["NOT-SEEN"]), approval(10, "web-vm0", ["NOT-SEEN"]),
        action(20, "web-vm1", "prepare", "NOT-SEEN"), "{broken"])
    again = tmp / "again.jsonl"
    again.write_text("".join(lines[100:160]), encoding="utf-8")
    return [relay.path, polled.path, extra, again]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> List[Path]:
    return _fleet_files(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def whole(fleet: List[Path]) -> ea.HistoryView:
    """The fleet's files read at once, as every part count is compared with."""
    return ea.open_history([str(p) for p in fleet], reaction=True)


def _sorted(frame: pd.DataFrame, keys: List[str]) -> pd.DataFrame:
    return frame.sort_values(keys, kind="stable").reset_index(drop=True)


@pytest.mark.parametrize("parts", [1, 3, 16])
def test_part_by_part_equals_the_whole(fleet: List[Path], whole: ea.HistoryView, tmp_path: Path, parts: int) -> None:
    report = ea.partition_history([str(p) for p in fleet], tmp_path / "parts", parts=parts)
    by_part = ea.open_history(str(tmp_path / "parts"), reaction=True)
    assert report.bad == {"invalid JSON": 1} and whole.report.duplicates >= 60
    assert len(whole.lifecycles) > 50 and whole.lifecycles["vm_set"].nunique() == 3
    pd.testing.assert_frame_equal(by_part.lifecycles, whole.lifecycles)
    pd.testing.assert_frame_equal(by_part.reaction, whole.reaction)
    for field in ("records", "observations", "approvals", "actions", "duplicates", "bad", "resolution"):
        assert getattr(by_part.report, field) == getattr(whole.report, field), field
    extra = f"read part by part: {parts} parts of {tmp_path / 'parts'}"
    assert by_part.description.splitlines() == whole.description.splitlines()[:-1] + [
        extra, whole.description.splitlines()[-1]]


def test_a_slice_of_hosts_and_time_reads_only_their_parts(fleet: List[Path], tmp_path: Path) -> None:
    ea.partition_history([str(p) for p in fleet], tmp_path / "parts", parts=8)
    hosts, start, end = ["web-vm0", "db-vm2", "avset-web_1"], "2026-01-05T12:00:00Z", "2026-01-06T12:00:00Z"
    whole = ea.open_history([str(p) for p in fleet], start, end, hosts)
    by_part = ea.open_history(str(tmp_path / "parts"), start, end, hosts)
    assert 0 < len(whole.lifecycles) and set(whole.lifecycles["host"]) <= set(hosts)
    pd.testing.assert_frame_equal(by_part.lifecycles, whole.lifecycles)
    assert by_part.description.splitlines()[-1] == whole.description.splitlines()[-1]
    for field in ("records", "observations", "approvals", "duplicates", "bad", "resolution"):
        assert getattr(by_part.report, field) == getattr(whole.report, field), field  # the whole history's
    with pytest.warns(UserWarning, match="no observations from host.s. nobody"):
        ea.open_history(str(tmp_path / "parts"), hosts=["web-vm0", "nobody"])


def test_lifecycles_are_computed_one_part_at_a_time(fleet: List[Path], tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    """The bounded memory claim: no lifecycles call ever sees more than one part's hosts."""
    ea.partition_history([str(p) for p in fleet], tmp_path / "parts", parts=4)
    hosts_per_call: List[int] = []
    real = ea.views.event_lifecycles

    def counting(obs: pd.DataFrame, **kwargs: object) -> pd.DataFrame:
        hosts_per_call.append(obs.loc[obs["record"] == "observation", "host"].nunique())
        return real(obs, **kwargs)

    monkeypatch.setattr(ea.views, "event_lifecycles", counting)
    total = len(ea.report_of(ea.load_history([str(p) for p in fleet])).resolution)
    ea.open_history(str(tmp_path / "parts"))
    assert len(hosts_per_call) == 4 and sum(hosts_per_call) == total and max(hosts_per_call) < total


@pytest.mark.parametrize("damage, message", [
    (lambda folder: (folder / "history.json").write_text('{"parts": 2}', encoding="utf-8"),
     "history.json does not describe a partitioned history (no 'report' in it); partition the history again."),
    (lambda folder: (folder / "part-001.parquet").unlink(), "lacks part-001.parquet: partition the history again."),
    (lambda folder: (folder / "part-000.parquet").write_bytes(b"not parquet"),
     "part-000.parquet as Parquet"),
])
def test_a_damaged_folder_is_one_sentence(fleet: List[Path], tmp_path: Path, damage, message: str) -> None:
    ea.partition_history([str(fleet[0])], tmp_path / "parts", parts=2)
    damage(tmp_path / "parts")
    with pytest.raises(ea.HistoryError) as raised:
        ea.open_history(str(tmp_path / "parts"))
    text = str(raised.value)
    assert message in text and text.endswith("partition the history again.") and text.count(". ") == 0, text
    assert "\n" not in text


def test_a_failed_partitioning_leaves_nothing_behind(fleet: List[Path], tmp_path: Path) -> None:
    ea.to_parquet(str(fleet[0]), tmp_path / "one.parquet")
    with pytest.raises(ea.HistoryError, match="is Parquet; partition the JSON-lines"):
        ea.partition_history([str(fleet[1]), str(tmp_path / "one.parquet")], tmp_path / "parts")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["one.parquet"]
    ea.partition_history([str(fleet[1])], tmp_path / "parts", parts=2)  # and the same folder works next time
    assert partitioned.is_partitioned(tmp_path / "parts")


def test_an_approval_after_another_parts_vm_saw_the_event_started_was_unneeded(tmp_path: Path) -> None:
    """`approval_unneeded` is event level: vm `first` saw E Started at 10 s, `late` approved at 25 s. Put in
    different parts, each part alone cannot tell; the whole table can."""
    names = [f"vm{i}" for i in range(40)]
    first, late = next((a, b) for a in names for b in names if partitioned.part_of(a, 2) != partitioned.part_of(b, 2))
    started = [event("E", "Started", [first, late])]
    lines = [observation(0, first, [event("E", "Scheduled", [first, late], not_before=at(60))]),
             observation(10, first, started), observation(40, first, []),
             observation(0, late, [event("E", "Scheduled", [first, late], not_before=at(60))]),
             approval(25, late, ["E"]), observation(40, late, started), observation(50, late, [])]
    path = write_lines(tmp_path / "h.jsonl", lines)
    ea.partition_history(str(path), tmp_path / "parts", parts=2)
    whole, by_part = ea.open_history(str(path), reaction=True), ea.open_history(str(tmp_path / "parts"), reaction=True)
    assert list(whole.reaction["approval_unneeded"]) == [True, True]
    pd.testing.assert_frame_equal(by_part.reaction, whole.reaction)
    with pytest.warns(UserWarning, match="no observations from host.s. nobody"):
        nobody = ea.open_history(str(tmp_path / "parts"), hosts=["nobody"], reaction=True)
    assert nobody.reaction is not None and nobody.reaction.empty and list(nobody.reaction.columns) == list(
        whole.reaction.columns)


def test_partitioning_refuses_to_mix_into_a_used_folder_or_parquet(fleet: List[Path], tmp_path: Path) -> None:
    (tmp_path / "used").mkdir()
    (tmp_path / "used" / "keep.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(ea.HistoryError, match="exists and is not an empty folder"):
        ea.partition_history([str(fleet[0])], tmp_path / "used")
    assert (tmp_path / "used" / "keep.txt").read_text(encoding="utf-8") == "mine"
    ea.to_parquet(str(fleet[0]), tmp_path / "one.parquet")
    with pytest.raises(ea.HistoryError, match="is Parquet; partition the JSON-lines"):
        ea.partition_history([str(tmp_path / "one.parquet")], tmp_path / "new")
    with pytest.raises(ea.HistoryError, match="parts must be between 1 and 4096"):
        ea.partition_history([str(fleet[0])], tmp_path / "new2", parts=0)


def test_parts_do_not_move_between_processes(tmp_path: Path) -> None:
    """Python's str hash is salted per process: parts must come from a hash that is not."""
    code = "from event_analysis.loading.partitioned import part_of; print([part_of(f'vm{i}', 16) for i in range(40)])"
    runs = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                           env=dict(os.environ, PYTHONHASHSEED=seed)).stdout for seed in ("1", "2")}
    assert len(runs) == 1 and len(set(json.loads(runs.pop()))) > 8


def test_the_command_line_partitions_and_summarises_part_by_part(fleet: List[Path], tmp_path: Path,
                                                                capsys: pytest.CaptureFixture) -> None:
    """Through the command line's main(), in this process: a process of its own costs seconds of CPU to import
    pandas, and test_loading.py runs the command line as a real process."""
    def run(*args: str) -> subprocess.CompletedProcess:
        code = main(list(args))
        printed = capsys.readouterr()
        return subprocess.CompletedProcess(["main", *args], code, printed.out, printed.err)

    made = run("partition", *map(str, fleet), str(tmp_path / "parts"), "--parts", "4")
    assert made.returncode == 0 and "wrote 4 parts to" in made.stdout and "1 invalid JSON" in made.stdout
    whole, by_part = run("summary", *map(str, fleet)), run("summary", str(tmp_path / "parts"))
    assert by_part.returncode == 0 and "read part by part: 4 parts" in by_part.stdout
    assert [line for line in by_part.stdout.splitlines() if "read part by part" not in line] == \
        whole.stdout.splitlines()
    refused = run("partition", str(fleet[0]), str(tmp_path / "parts"))
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert refused.stderr.strip().endswith("exists and is not an empty folder; give a new folder for the partitioned "
                                          "history.")
