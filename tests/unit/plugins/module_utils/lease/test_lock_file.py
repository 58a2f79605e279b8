"""One check-and-write under the guard: a guard held too long fails in bounded time, naming the file."""
from __future__ import annotations

import fcntl
import multiprocessing
import time
from pathlib import Path

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import DELETE
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.lock_file import (
    GuardBusy,
    update_under_guard,
)


def hold_guard(guard: str, held: "multiprocessing.synchronize.Event",
               release: "multiprocessing.synchronize.Event") -> None:
    with open(guard, "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        held.set()
        release.wait(30)


@pytest.fixture
def stuck_holder(tmp_path: Path):
    """Another process holding `<lock>.guard` until the test ends."""
    lock = str(tmp_path / "state.json.lock")
    context = multiprocessing.get_context("fork")
    held, release = context.Event(), context.Event()
    holder = context.Process(target=hold_guard, args=(lock + ".guard", held, release), daemon=True)
    holder.start()
    assert held.wait(10), "the holder never took the guard"
    yield lock
    release.set()
    holder.join(10)


def test_the_change_is_written_deleted_or_left(tmp_path: Path) -> None:
    lock = str(tmp_path / "sub" / "state.json.lock")
    assert update_under_guard(lock, lambda text: "one\n" if text is None else None) == "one\n"
    assert update_under_guard(lock, lambda text: text + "two\n") == "one\ntwo\n"
    assert Path(lock).read_text() == "one\ntwo\n"
    assert update_under_guard(lock, lambda text: DELETE) is DELETE and not Path(lock).exists()


def test_a_guard_held_by_a_stuck_process_fails_in_bounded_time(stuck_holder: str) -> None:
    calls = []
    started = time.monotonic()
    with pytest.raises(OSError) as info:
        update_under_guard(stuck_holder, calls.append, timeout=0.3)
    assert 0.3 <= time.monotonic() - started < 5
    assert isinstance(info.value, GuardBusy) and calls == []
    assert str(info.value) == ("another process has held %s.guard for more than 0.3 s; find it with fuser -v %s.guard "
                               "and end it, or try again later" % (stuck_holder, stuck_holder))


def test_the_wait_polls_until_the_holder_lets_go(tmp_path: Path) -> None:
    lock = str(tmp_path / "state.json.lock")
    with open(lock + ".guard", "a") as other:  # another open file description: flock treats it as another holder
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        now = [0.0]

        def sleep(seconds: float) -> None:
            now[0] += seconds
            if now[0] >= 1.0:
                fcntl.flock(other.fileno(), fcntl.LOCK_UN)

        answer = update_under_guard(lock, lambda text: "mine\n", timeout=30, clock=lambda: now[0], sleep=sleep)
    assert answer == "mine\n" and Path(lock).read_text() == "mine\n" and 1.0 <= now[0] < 1.2


def test_the_clock_bounds_the_wait(tmp_path: Path) -> None:
    lock = str(tmp_path / "state.json.lock")
    with open(lock + ".guard", "a") as other:
        fcntl.flock(other.fileno(), fcntl.LOCK_EX)
        now = [0.0]

        def sleep(seconds: float) -> None:
            now[0] += seconds

        with pytest.raises(GuardBusy, match=r"for more than 30 s;"):
            update_under_guard(lock, lambda text: "never\n", clock=lambda: now[0], sleep=sleep)
    assert 30 <= now[0] < 30.2 and not Path(lock).exists()
