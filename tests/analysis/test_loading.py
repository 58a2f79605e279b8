"""load_history: every line is used or counted with its reason; files, globs, gzip and Parquet."""
from __future__ import annotations

import gzip
import json
import string
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import event_analysis as ea
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.document import events as module_events
from event_analysis.__main__ import main
from event_analysis.loading import sources
from event_analysis.loading.records import affected
from tests.analysis.histories import action, at, approval, event, observation, simulate, write_lines


def good_lines() -> list:
    ev = event("E1", "Scheduled", ["vm0", "vm1"], not_before=at(900))
    return [observation(0, "vm0", []), observation(10, "vm0", [ev]), approval(11, "vm0", ["E1"]),
            observation(12, "vm1", [ev], fault_domain=1), observation(20, "vm0", [])]


def test_a_clean_history_loads_every_record(tmp_path: Path) -> None:
    frame = ea.load_history(write_lines(tmp_path / "h.jsonl", good_lines()))
    report = ea.report_of(frame)
    assert (report.records, report.observations, report.approvals, report.bad) == (5, 4, 1, {})
    assert len(frame) == 5  # two empty polls, two sightings, one approved id
    seen = frame[frame["event_id"].notna() & (frame["record"] == "observation")]
    assert seen["not_before"].tolist() == [pd.Timestamp(at(900))] * 2
    assert seen["affects_vm"].all() and str(frame["observed_at"].dtype) == "datetime64[ns, UTC]"
    assert frame["host"].is_monotonic_increasing or list(frame["host"].unique()) == ["vm0", "vm1"]


def test_action_records_load_as_rows_of_their_own_and_bad_ones_are_counted(tmp_path: Path) -> None:
    lines = good_lines() + [action(10.5, "vm0", "prepare", "E1"), action(30, "vm0", "recover", "E1", trigger="schedule"),
                            dict(action(31, "vm1", "prepare", "E1"), event_ids=["E1", "E2"]),   # one event each
                            dict(action(32, "vm1", "prepare", "E1"), action="drain")]           # not an action
    with pytest.warns(ea.HistoryWarning, match="2 unknown schema"):
        frame = ea.load_history(write_lines(tmp_path / "h.jsonl", lines))
    report = ea.report_of(frame)
    assert (report.observations, report.approvals, report.actions) == (4, 1, 2)
    acts = frame[frame["record"] == "action"]
    assert acts[["host", "action", "event_id", "event_type", "trigger"]].astype(str).values.tolist() == [
        ["vm0", "prepare", "E1", "Reboot", "event-driven"], ["vm0", "recover", "E1", "Reboot", "schedule"]]
    assert frame.loc[frame["record"] == "observation", "action"].isna().all()
    assert len(ea.event_lifecycles(frame)) == 2, "actions are no sightings"


def test_bad_lines_are_counted_by_reason_with_their_line_numbers(tmp_path: Path) -> None:
    lines = good_lines()
    lines.insert(1, '{"observed_at": "2026-01-05T00:00:05.000Z", "host": "vm0"')  # cut mid-line: invalid
    lines.insert(3, "[1, 2, 3]")  # JSON, not a record
    lines.insert(4, json.dumps(dict(observation(11, "vm0", []), document_incarnation="three")))  # wrong type
    lines.insert(5, json.dumps({"record": "heartbeat", "observed_at": "2026-01-05T00:00:11.000Z", "host": "vm0"}))
    lines.insert(6, json.dumps(dict(observation(11, "vm0", []), observed_at="yesterday")))
    lines.insert(7, "")
    path = write_lines(tmp_path / "h.jsonl", lines)
    with path.open("a") as handle:
        handle.write('{"observed_at": "2026-01-05T00:00:30.000Z", "host": "vm0", "vm": {"na')  # torn last write
    with pytest.warns(ea.HistoryWarning, match="skipped 6 bad line"):
        frame = ea.load_history(path)
    report = ea.report_of(frame)
    assert report.bad == {"invalid JSON": 1, "unknown schema": 4, "truncated last line": 1}
    assert sorted(e.line for e in report.examples) == [2, 4, 5, 6, 7, 12]  # line 8 is blank
    assert report.records == 5 and len(ea.event_lifecycles(frame)) == 2


def test_a_bad_line_deep_in_a_big_file_costs_only_that_line(tmp_path: Path) -> None:
    records = [observation(s, "vm0", []) for s in range(0, 50_000, 10)]
    text = [json.dumps(r) for r in records]
    text[2500] = text[2500][:40]
    path = tmp_path / "big.jsonl"
    path.write_text("\n".join(text) + "\n")
    with pytest.warns(ea.HistoryWarning):
        report = ea.report_of(ea.load_history(path))
    assert report.records == len(records) - 1 and report.bad == {"invalid JSON": 1}
    assert [e.line for e in report.examples] == [2501]


def test_gzip_globs_and_lists_of_files(tmp_path: Path) -> None:
    lines = good_lines()
    write_lines(tmp_path / "a.jsonl", lines[:2])
    with gzip.open(tmp_path / "b.jsonl.gz", "wt") as handle:
        handle.write("".join(json.dumps(r) + "\n" for r in lines[2:]))
    by_glob = ea.load_history(str(tmp_path / "*.jsonl*"))
    by_list = ea.load_history([tmp_path / "b.jsonl.gz", tmp_path / "a.jsonl"])
    assert ea.report_of(by_glob).records == 5 and len(ea.report_of(by_glob).files) == 2
    pd.testing.assert_frame_equal(by_glob, by_list)


@pytest.mark.parametrize("name, message", [
    ("missing.jsonl", "no history file at"), ("*.nothing", "no history file matches"), (".", "is a directory"),
])
def test_unusable_paths_fail_with_one_sentence(tmp_path: Path, name: str, message: str) -> None:
    with pytest.raises(ea.HistoryError, match=message) as raised:
        ea.load_history(tmp_path / name if name != "." else tmp_path)
    assert str(raised.value).count(". ") == 0 and str(raised.value).endswith(".")


def test_a_corrupt_gzip_or_sidecar_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "h.jsonl.gz").write_bytes(b"\x1f\x8b" + b"not really gzip")
    with pytest.raises(ea.HistoryError, match="cannot read"):
        ea.load_history(tmp_path / "h.jsonl.gz")
    write_lines(tmp_path / "h.jsonl", good_lines())
    (tmp_path / "h.jsonl.meta.json").write_text('{"time_scale": -3}')
    with pytest.raises(ea.HistoryError, match="must be positive"):
        ea.load_history(tmp_path / "h.jsonl")


def test_a_damaged_deflate_stream_in_a_gzip_history_is_one_sentence(tmp_path: Path) -> None:
    """A sound gzip header over a damaged stream makes zlib raise its own error, not an OSError: it must still be
    one sentence, saying what to do, rather than a traceback."""
    lines = [observation(second, "vm0", []) for second in range(400)]
    data = bytearray(gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode()))
    data[12] = 0xFF  # the first deflate block's header, just past gzip's 10-byte header
    (tmp_path / "h.jsonl.gz").write_bytes(bytes(data))
    with pytest.raises(ea.HistoryError, match="compressed data is damaged") as raised:
        ea.load_history(tmp_path / "h.jsonl.gz")
    assert str(raised.value).count(". ") == 0 and "zcat" in str(raised.value)


def test_histories_at_different_time_scales_are_not_mixed(tmp_path: Path) -> None:
    write_lines(tmp_path / "a.jsonl", good_lines())
    write_lines(tmp_path / "b.jsonl", good_lines())
    (tmp_path / "b.jsonl.meta.json").write_text('{"simulated": true, "time_scale": 60}')
    with pytest.raises(ea.HistoryError, match="different simulator time scales"):
        ea.load_history(tmp_path / "*.jsonl")


def test_parquet_round_trip_keeps_rows_and_report(tmp_path: Path) -> None:
    sim = simulate(tmp_path, "fleet-mix", days=1, poll=60, seed=4, approve="user", vms=6, fault_domains=3)
    with sim.path.open("a") as handle:
        handle.write("not json\n")
    with pytest.warns(ea.HistoryWarning):
        original = ea.load_history(sim.path)
    report = ea.to_parquet(sim.path, tmp_path / "h.parquet")
    assert report.bad == {"invalid JSON": 1}
    with pytest.warns(ea.HistoryWarning):
        again = ea.load_history(tmp_path / "h.parquet")
    pd.testing.assert_frame_equal(original, again)
    assert ea.report_of(again).bad == {"invalid JSON": 1} and ea.report_of(again).records == ea.report_of(original).records
    pd.testing.assert_frame_equal(ea.event_lifecycles(original), ea.event_lifecycles(again))


def test_a_parquet_file_of_something_else_is_refused(tmp_path: Path) -> None:
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"x": [1]}), tmp_path / "other.parquet")
    with pytest.raises(ea.HistoryError, match="not an observations Parquet file"):
        ea.load_history(tmp_path / "other.parquet")


# ----------------------------------------------------------------- the same "affects" rule as the modules

NAMES = st.text(alphabet=string.ascii_letters + string.digits + "-_", min_size=1, max_size=8)


@settings(max_examples=300, deadline=None)
@given(vm_name=NAMES, resources=st.lists(NAMES, max_size=5))
def test_vectorised_affects_agrees_with_module_utils(vm_name: str, resources: list) -> None:
    expected = module_events.affects({"resources": resources}, vm_name)
    got = affected(pa.array([resources], pa.list_(pa.string())), pa.array([vm_name]))
    assert bool(got[0]) == expected


# ----------------------------------------------------------------- command line

def run_cli(*args: str) -> "subprocess.CompletedProcess[str]":
    return subprocess.run([sys.executable, "-m", "event_analysis", *args], capture_output=True, text=True,
                          timeout=120, check=False, cwd=Path(__file__).resolve().parents[2])


def run_here(capsys: pytest.CaptureFixture, *args: str) -> "subprocess.CompletedProcess[str]":
    """The command line's main() in this process (a process of its own costs seconds of CPU to import pandas):
    what it returns or exits with, and what it printed."""
    try:
        code = main(list(args))
    except SystemExit as exited:  # argparse's --help
        code = exited.code
    printed = capsys.readouterr()
    return subprocess.CompletedProcess(["main", *args], code, printed.out, printed.err)


def test_the_command_line_summarises_converts_and_fails_in_one_sentence(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture) -> None:
    """The summary and a refusal in real processes (as a user runs them); help, a conversion and a missing file
    through the same main() in this one."""
    path = write_lines(tmp_path / "h.jsonl", good_lines() + ["{oops"])
    summary = run_cli("summary", str(path))
    assert summary.returncode == 0 and "skipped 1 bad line(s): 1 invalid JSON" in summary.stdout
    assert f"e.g. {path}:6 (invalid JSON): {{oops" in summary.stdout and "2 event lifecycles: 1 cancelled, 1 open" in summary.stdout
    assert summary.stdout.count("{oops") == 1, "each bad line's example is printed once"
    described = run_here(capsys, "summary", "--help")
    assert described.returncode == 0 and "fault-domain walk with its overlap verdict" in " ".join(described.stdout.split())
    converted = run_here(capsys, "to-parquet", str(path), str(tmp_path / "h.parquet"))
    assert converted.returncode == 0 and (tmp_path / "h.parquet").is_file()
    missing = run_here(capsys, "summary", str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1 and "no history file at" in missing.stderr
    garbage = write_lines(tmp_path / "garbage.jsonl", ["{oops", "not json at all", "[1, 2]"])
    refused = run_cli("summary", str(garbage))
    assert refused.returncode == 1 and refused.stdout == "" and refused.stderr.count("\n") == 1, refused
    assert f"no valid record in {garbage}, so there is nothing to summarise" in refused.stderr
    assert "skipped 3 bad line(s)" in refused.stderr


def test_the_command_line_answers_the_notebooks_first_questions_on_a_simulated_walk(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    sim = simulate(tmp_path, "platform-maintenance", days=0.1, poll=3, seed=6, vms=6, fault_domains=3)
    truth = sorted(sim.truth, key=lambda t: t["appeared_at"])
    out = run_here(capsys, "summary", str(sim.path)).stdout
    assert f"history: {sim.path}" in out
    notice = out.split("Notice per event type")[1].split("Durations per event type")[0]
    assert all(t["event_type"] in notice for t in truth) and "documented_min_s" in notice
    assert "Durations per event type" in out and "impact_s_max" in out
    assert "Fault-domain walk: " + " -> ".join(str(t["fault_domains"][0]) for t in truth) in out
    assert "no overlap between fault domains" in out


def test_a_history_nobody_named_is_said_loudly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(sources.ENVIRONMENT, raising=False)
    monkeypatch.setattr(sources, "DEMO_HISTORY", tmp_path / "no-demo.jsonl")
    path, why = ea.choose_history(None)
    assert path == str(sources.SAMPLE_HISTORY) and why.startswith("NOT YOUR DATA") and "sample" in why
    (tmp_path / "no-demo.jsonl").write_text('{"x": 1}\n')
    path, why = ea.choose_history(None)
    assert path == str(tmp_path / "no-demo.jsonl") and "NOT YOUR DATA" in why and "make demo" in why
    monkeypatch.setenv(sources.ENVIRONMENT, "/data/fleet-*.jsonl")
    assert ea.choose_history(None) == ("/data/fleet-*.jsonl", "history: /data/fleet-*.jsonl (from $SCHEDULED_EVENTS_HISTORY).")
    assert ea.choose_history("mine.jsonl")[1] == "history: mine.jsonl (as given)."


def test_a_history_the_simulator_generates_reads_as_simulated(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "generated.jsonl"
    made = subprocess.run([sys.executable, "-m", "imds_simulator", "generate", "--scenario", "live-migration",
                           "--vms", "3", "--days", "0.02", "--poll-interval", "10", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, check=False, cwd=Path(__file__).resolve().parents[2])
    assert made.returncode == 0, made.stderr
    summary = run_here(capsys, "summary", str(out))
    assert summary.returncode == 0, summary.stderr
    assert "SIMULATED data: generated by the IMDS simulator, not captured from Azure" in summary.stdout
