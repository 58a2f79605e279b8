"""The VM lease lock: who may take, renew and release it (pure), and one check-and-write under the guard
(real files, real processes racing)."""
from __future__ import annotations

import json
import multiprocessing
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import List, Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_lock import (
    DELETE,
    LockError,
    check_lock_request,
    claim,
    lock_text,
    refresh,
    release,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lock_file import update_under_guard
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.module_support import (
    TaskEdges,
    TaskFailed,
    lock_step,
)

NOW = datetime(2026, 11, 22, 3, 0, 0, tzinfo=timezone.utc)
PATH = "/var/lib/se/state.json.lock"


def held_by(owner: str, minutes_left: float) -> str:
    return lock_text(owner, NOW - timedelta(minutes=1), 60 + minutes_left * 60)


def test_a_free_vm_is_taken_silently() -> None:
    text, outcome = claim(None, "run a", NOW, 900, PATH)
    assert json.loads(text) == {"owner": "run a", "acquired_at": "2026-11-22T03:00:00Z",
                                "expires_at": "2026-11-22T03:15:00Z"}
    assert outcome == {"taken": True, "held_by": None, "note": None}


def test_the_holder_renews_its_own_lock() -> None:
    text, outcome = claim(held_by("run a", 10), "run a", NOW, 900, PATH)
    assert outcome["taken"] and json.loads(text)["expires_at"] == "2026-11-22T03:15:00Z"


def test_another_runs_live_lock_is_left_alone_and_named() -> None:
    text, outcome = claim(held_by("run a (AWX job 7)", 10), "run b", NOW, 900, PATH)
    assert text is None and not outcome["taken"]
    assert outcome["held_by"]["owner"] == "run a (AWX job 7)" and "expires" not in outcome["held_by"]
    assert outcome["note"].startswith("another maintenance run holds this VM (run a (AWX job 7), since ")
    assert "until 2026-11-22T03:10:00Z" in outcome["note"] and PATH in outcome["note"]


def test_an_expired_lease_is_taken_over_with_a_note() -> None:
    text, outcome = claim(held_by("run a", -1), "run b", NOW, 900, PATH)
    assert json.loads(text)["owner"] == "run b" and outcome["taken"]
    assert "took over the expired lock" in outcome["note"] and "run a" in outcome["note"]


@pytest.mark.parametrize("text", ["", "{not json", json.dumps({"owner": ""}), json.dumps({"owner": " "}),
                                  json.dumps({"owner": "x", "expires_at": "soon"}), json.dumps(["x"])])
def test_an_unreadable_lock_is_replaced_with_a_note(text: str) -> None:
    written, outcome = claim(text, "run b", NOW, 900, PATH)
    assert outcome["taken"] and "unreadable" in outcome["note"] and json.loads(written)["owner"] == "run b"


def test_refresh_renews_only_this_runs_lock() -> None:
    assert json.loads(refresh(held_by("run a", 1), "run a", NOW, 600, PATH))["expires_at"] == "2026-11-22T03:10:00Z"
    with pytest.raises(LockError, match="now held by run b"):
        refresh(held_by("run b", 10), "run a", NOW, 600, PATH)
    with pytest.raises(LockError, match="is gone"):
        refresh(None, "run a", NOW, 600, PATH)


def test_release_deletes_only_this_runs_lock() -> None:
    assert release(held_by("run a", 5), "run a") is DELETE
    assert release(held_by("run a", -5), "run a") is DELETE
    assert release(held_by("run b", 5), "run a") is None
    assert release(None, "run a") is None
    assert release("{torn", "run a") is None


@pytest.mark.parametrize("owner, lease, fragment", [
    ("", 900, "lock_owner"), ("  ", 900, "lock_owner"), (None, 900, "lock_owner"),
    ("run", 0, "lock_seconds"), ("run", -1, "lock_seconds"), ("run", 1e300, "lock_seconds"),
    ("run", float("inf"), "lock_seconds"), ("run", float("nan"), "lock_seconds"), ("run", True, "lock_seconds")])
def test_bad_requests_are_one_sentence(owner: Optional[str], lease: float, fragment: str) -> None:
    with pytest.raises(LockError, match=fragment) as caught:
        check_lock_request(owner, lease)
    assert str(caught.value).endswith(".")


# ---------------------------------------------------------------- the VM side, on real files

def edges(warnings: List[str]) -> TaskEdges:
    return TaskEdges(warn=warnings.append, update_lock=update_under_guard)


def params(path: Path, owner: str, lease: float = 900) -> dict:
    return {"lock_path": str(path), "lock_owner": owner, "lock_seconds": lease}


def test_claim_renew_release_on_disk(tmp_path: Path) -> None:
    path = tmp_path / "deep" / "state.json.lock"  # the directory is made
    warnings: List[str] = []
    assert lock_step("claim", params(path, "run a"), edges(warnings))["taken"]
    other = lock_step("claim", params(path, "run b"), edges(warnings))
    assert not other["taken"] and other["held_by"]["owner"] == "run a" and "another maintenance run" in other["message"]
    with pytest.raises(TaskFailed, match="now held by run a"):
        lock_step("refresh", params(path, "run b"), edges(warnings))
    assert lock_step("release", params(path, "run b"), edges(warnings))["released"] is False
    assert json.loads(path.read_text())["owner"] == "run a", "another run's lock stays"
    assert lock_step("refresh", params(path, "run a"), edges(warnings))["taken"]
    assert lock_step("release", params(path, "run a"), edges(warnings))["released"] is True
    assert not path.exists() and warnings == []


def test_check_mode_judges_but_writes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.json.lock"
    result = lock_step("claim", params(path, "run a"), edges([]), check_mode=True)
    assert result["taken"] is False and result["held_by"] is None and not path.exists()


def test_an_unwritable_lock_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(TaskFailed, match=r"^cannot use the lock file .*\(.*\)\.$"):
        lock_step("claim", params(blocker / "state.json.lock", "run a"), edges([]))


def test_without_a_lock_edge_the_run_goes_on_with_a_warning(tmp_path: Path) -> None:
    warnings: List[str] = []
    result = lock_step("claim", params(tmp_path / "l", "run a"), TaskEdges(warn=warnings.append))
    assert result["supported"] is False and not result["taken"] and "not supported on Windows" in warnings[0]


def _race(path: str, owner: str, start: "multiprocessing.synchronize.Event", out: "multiprocessing.Queue") -> None:
    start.wait()
    result = lock_step("claim", {"lock_path": path, "lock_owner": owner, "lock_seconds": 900.0},
                       TaskEdges(warn=lambda _m: None, update_lock=update_under_guard))
    out.put((owner, result["taken"]))


@pytest.mark.parametrize("existing", ["none", "expired"])
def test_racing_runs_never_both_take_the_lock(tmp_path: Path, existing: str) -> None:
    """Eight processes claim at once, for a free lock and for an expired one: exactly one wins."""
    for round_ in range(5):
        path = tmp_path / f"{existing}-{round_}.lock"
        if existing == "expired":
            path.write_text(lock_text("dead run", NOW - timedelta(hours=2), 60))
        context = multiprocessing.get_context("fork")
        start, out = context.Event(), context.Queue()
        runs = [context.Process(target=_race, args=(str(path), f"run {i}", start, out)) for i in range(8)]
        for run in runs:
            run.start()
        start.set()
        for run in runs:
            run.join(30)
        results = [out.get(timeout=5) for _run in runs]
        winners = [owner for owner, taken in results if taken]
        assert len(winners) == 1, results
        assert json.loads(path.read_text())["owner"] == winners[0]
