"""observation/history_file.py: the one appender of history lines (the callback's and the relay's)."""
from __future__ import annotations

import errno
import fcntl
import json
import multiprocessing
import time
from pathlib import Path
from typing import List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation import history_file
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.observation.history_file import HistoryFile


def _lines(path: Path) -> List[str]:
    return path.read_text().split("\n")


def _hammer(path: str, writer: int, count: int, size: int) -> None:
    # A patient lock: the test is about whole lines, and a polling writer on a loaded machine can wait longer
    # than the default 10 s behind five others' fsyncs (it did in CI).
    history = HistoryFile(path, lock_timeout=120)
    for n in range(count):
        history.append(json.dumps({"writer": writer, "n": n, "pad": "x" * size}).encode() + b"\n")


def test_appends_from_many_processes_stay_whole_lines_in_order(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    context = multiprocessing.get_context("fork")
    workers = [context.Process(target=_hammer, args=(str(path), w, 200, 9000 if w % 2 else 10)) for w in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
        assert worker.exitcode == 0
    lines = _lines(path)
    assert lines[-1] == "", "the file ends a line"
    records = [json.loads(line) for line in lines[:-1]]  # any torn or interleaved line fails here
    assert len(records) == 6 * 200
    for w in range(6):
        assert [r["n"] for r in records if r["writer"] == w] == list(range(200))


def test_a_torn_last_line_stays_the_only_bad_line(tmp_path: Path) -> None:
    path = tmp_path / "new" / "history.jsonl"  # parents are created
    path.parent.mkdir()
    path.write_text('{"observed_at": "2026-01-01T00:00:00.000Z"}\n{"observed_at": "2026-01-0')
    HistoryFile(str(path)).append(b'{"host": "vm0"}\n')
    assert _lines(path) == ['{"observed_at": "2026-01-01T00:00:00.000Z"}', '{"observed_at": "2026-01-0', '{"host": "vm0"}', ""]


def test_parents_are_created(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dirs" / "history.jsonl"
    HistoryFile(str(path)).append(b"{}\n")
    assert path.read_text() == "{}\n"


def test_a_bounded_file_is_moved_aside_whole_before_it_would_grow_beyond_the_bound(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = HistoryFile(str(path), max_bytes=200)
    for n in range(10):
        history.append(json.dumps({"n": n, "pad": "x" * 50}).encode() + b"\n")
    aside = tmp_path / "history.jsonl.1"
    assert path.stat().st_size <= 200 and aside.stat().st_size <= 200
    assert [json.loads(line)["n"] for line in _lines(aside)[:-1] + _lines(path)[:-1]] == list(range(6, 10))
    assert not (tmp_path / "history.jsonl.2").exists(), "one file aside, no more"


def test_an_unbounded_file_is_never_moved_aside(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    history = HistoryFile(str(path))
    for n in range(50):
        history.append(json.dumps({"n": n, "pad": "x" * 50}).encode() + b"\n")
    assert len(_lines(path)) == 51 and not (tmp_path / "history.jsonl.1").exists()


def test_a_lock_held_beyond_the_timeout_is_a_timeout_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "history.jsonl"
    path.write_text("")
    with open(path, "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        started = time.monotonic()
        with pytest.raises(TimeoutError):
            HistoryFile(str(path), lock_timeout=0.2).append(b"{}\n")
        waited = time.monotonic() - started
        fcntl.flock(holder, fcntl.LOCK_UN)
    assert waited >= 0.2 and path.read_text() == ""


def test_a_file_system_without_flock_is_written_and_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = fcntl.flock

    def no_lock(fd: int, operation: int) -> None:
        if operation & fcntl.LOCK_EX:
            raise OSError(errno.ENOLCK, "No locks available")
        real(fd, operation)

    monkeypatch.setattr(history_file.fcntl, "flock", no_lock)
    path = tmp_path / "history.jsonl"
    history = HistoryFile(str(path))
    history.append(b"{}\n")
    assert path.read_text() == "{}\n"
    assert history.unlocked_warning is not None and "No locks available" in history.unlocked_warning


def test_another_lock_error_is_raised_not_ignored(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(fd: int, operation: int) -> None:
        raise OSError(errno.EBADF, "Bad file descriptor")

    monkeypatch.setattr(history_file.fcntl, "flock", broken)
    with pytest.raises(OSError, match="Bad file descriptor"):
        HistoryFile(str(tmp_path / "history.jsonl")).append(b"{}\n")
