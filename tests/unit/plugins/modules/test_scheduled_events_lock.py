"""scheduled_events_lock on real lock files: take, renew, release; `changed` only when a file is
created, taken over or deleted; check mode writes nothing; another run's lock is never touched."""
from __future__ import annotations

import json
import multiprocessing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_lock

from .module_runner import run

NOW = datetime.now(timezone.utc)


def lock(path: Path, owner: str, state: str, check_mode: bool = False, lease: float = 900) -> Dict[str, Any]:
    return run(scheduled_events_lock, {"path": str(path), "owner": owner, "state": state, "lease_seconds": lease},
               check_mode)


def test_take_renew_release_and_what_counts_as_a_change(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json.lock"  # the directory is made
    taken = lock(path, "run a", "held")
    assert taken["changed"] is True and taken["lock"]["taken"] and json.loads(path.read_text())["owner"] == "run a"
    again = lock(path, "run a", "held")
    assert again["changed"] is False and again["lock"]["taken"], "renewing one's own lease is not a change"
    renewed = lock(path, "run a", "renewed")
    assert renewed["changed"] is False and renewed["lock"]["taken"]
    released = lock(path, "run a", "released")
    assert released["changed"] is True and released["lock"]["released"] and not path.exists()
    assert lock(path, "run a", "released")["changed"] is False, "nothing left to release"
    assert "warnings" not in released


def test_another_runs_live_lock_is_reported_never_taken_renewed_or_released(tmp_path: Path) -> None:
    path = tmp_path / "state.json.lock"
    lock(path, "run a (AWX job 7)", "held")
    before = path.read_text()
    other = lock(path, "run b", "held")
    assert other["failed"] is False and other["changed"] is False and not other["lock"]["taken"]
    assert other["lock"]["held_by"]["owner"] == "run a (AWX job 7)" and "another maintenance run" in other["lock"]["message"]
    renew = lock(path, "run b", "renewed")
    assert renew["failed"] and "now held by run a (AWX job 7)" in renew["msg"] and "Traceback" not in renew["msg"]
    assert lock(path, "run b", "released")["changed"] is False
    assert path.read_text() == before, "another run's lock stays as it was"


def test_an_expired_lock_is_taken_over_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "state.json.lock"
    path.write_text(lock_text("dead run", NOW - timedelta(hours=2), 60))
    taken = lock(path, "run b", "held")
    assert taken["changed"] is True and taken["lock"]["taken"] and "took over the expired lock" in taken["warnings"][0]


def test_check_mode_says_what_would_change_and_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "vm" / "state.json.lock"
    would = lock(path, "run a", "held", check_mode=True)
    assert would["changed"] is True and would["lock"]["taken"] is False
    assert not (tmp_path / "vm").exists(), "regression: check mode made the folder and the lock's guard file"
    lock(path, "run a", "held")
    before = path.read_text()
    would_release = lock(path, "run a", "released", check_mode=True)
    assert would_release["changed"] is True and path.read_text() == before


@pytest.mark.parametrize("args, fragment", [
    ({"owner": " "}, "lock_owner must be a non-empty name"),
    ({"lease_seconds": 0}, "lock_seconds must be more than 0"),
    ({"lease_seconds": 86401}, "at most 86400"),
])
def test_bad_requests_fail_with_one_sentence(tmp_path: Path, args: Dict[str, Any], fragment: str) -> None:
    base = {"path": str(tmp_path / "l"), "owner": "run a", "state": "held", "lease_seconds": 900}
    result = run(scheduled_events_lock, dict(base, **args))
    assert result["failed"] and fragment in result["msg"] and result["msg"].endswith(".")
    assert not (tmp_path / "l").exists()


def test_an_unusable_lock_path_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = lock(blocker / "state.json.lock", "run a", "held")
    assert result["failed"] and result["msg"].startswith("cannot use the lock file ") and result["msg"].endswith(").")


def _race(path: str, owner: str, start: Any, out: Any) -> None:
    start.wait()
    out.put((owner, lock(Path(path), owner, "held")["lock"]["taken"]))


@pytest.mark.parametrize("existing", ["none", "expired"])
def test_racing_runs_never_both_take_the_lock(tmp_path: Path, existing: str) -> None:
    """Eight processes take the lock at once, free or expired: exactly one gets it."""
    for round_ in range(5):
        path = tmp_path / f"{existing}-{round_}.lock"
        if existing == "expired":
            path.write_text(lock_text("dead run", NOW - timedelta(hours=2), 60))
        context = multiprocessing.get_context("fork")
        start, out = context.Event(), context.Queue()
        runs = [context.Process(target=_race, args=(str(path), f"run {i}", start, out)) for i in range(8)]
        for process in runs:
            process.start()
        start.set()
        for process in runs:
            process.join(30)
        results: List[Tuple[str, bool]] = [out.get(timeout=5) for _process in runs]
        winners = [owner for owner, taken in results if taken]
        assert len(winners) == 1, results
        assert json.loads(path.read_text())["owner"] == winners[0]
