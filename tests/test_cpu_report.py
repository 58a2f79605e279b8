"""tools/test_cpu_report.py: sums by file and test, and the timeline that shows where a run's cores stood idle."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tools.test_cpu_report import main


def write(path: Path, rows: list) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def test_each_tests_cpu_is_spread_over_the_slices_it_ran_in(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    report = write(tmp_path / "cpu.jsonl", [
        {"test": "tests/a.py::test_long", "cpu_s": 10.0, "worker": "gw0", "start": 100.0, "end": 120.0},
        {"test": "tests/a.py::test_short", "cpu_s": 4.0, "worker": "gw1", "start": 105.0, "end": 110.0},
        {"test": "tests/b.py::test_late", "cpu_s": 1.0, "worker": "gw1", "start": 110.0, "end": 115.0},
    ])
    assert main([report, "--timeline", "10"]) == 0
    out = capsys.readouterr().out
    assert "3 tests, 15 CPU-s in all" in out
    assert "14.0 s   93.3 %  tests/a.py" in out
    # 0-10 s: half of test_long's 10 and all of test_short's 4; 10-20 s: the other half and test_late's 1
    assert "0 s     9.0 CPU-s   1.5 workers  test_long" in out
    assert "10 s     6.0 CPU-s   1.5 workers  test_long" in out


def test_a_report_without_times_still_sums_and_says_why_there_is_no_timeline(
        tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    report = write(tmp_path / "old.jsonl", [{"test": "tests/a.py::test_x", "cpu_s": 2.5}])
    assert main([report, "--timeline", "30"]) == 0
    out = capsys.readouterr().out
    assert "1 tests, 2 CPU-s in all" in out and "no timeline: the report predates start and end times" in out
