"""scheduled_events_state on real files: a valid state is written atomically with private modes, `changed` only
when the content changes, check mode writes nothing, and content that is not a valid state is refused."""
from __future__ import annotations

import json
import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import lock_text
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.state import empty_state, state_text
from ansible_collections.azure_imds.scheduled_events.plugins.modules import scheduled_events_state

from .module_runner import run

STATE = dict(empty_state(), document_incarnation=3, approved=["602D9444-D2CD-49C7-8624-8643E7171297"])


def save(path: Path, content: str, check_mode: bool = False, diff: bool = False) -> Dict[str, Any]:
    args: Dict[str, Any] = {"path": str(path), "content": content}
    if diff:
        args["_ansible_diff"] = True
    return run(scheduled_events_state, args, check_mode)


def test_a_state_is_written_once_with_private_modes_then_left_alone(tmp_path: Path) -> None:
    path = tmp_path / "new" / "state.json"
    first = save(path, state_text(STATE))
    assert first["changed"] is True and json.loads(path.read_text()) == STATE
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600 and stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert save(path, state_text(STATE))["changed"] is False, "the same state again changes nothing"
    assert [p.name for p in path.parent.iterdir()] == ["state.json"], "no temporary file left behind"


def test_a_save_says_whether_the_state_it_left_owes_work_and_check_mode_says_nothing(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    owed = {"event_id": "E1", "event_type": "Reboot", "event_status": "Scheduled", "resources": ["vm0"],
            "prepare": "done"}
    assert save(path, state_text(dict(STATE, events=[owed])))["owes_work"] is True
    assert "owes_work" not in save(path, state_text(STATE), check_mode=True), "nothing was saved"
    assert save(path, state_text(STATE))["owes_work"] is False, "approved ids alone owe nothing"


def test_check_mode_says_what_would_change_and_diff_shows_it(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save(path, state_text(empty_state()))
    before = path.read_text()
    would = save(path, state_text(STATE), check_mode=True, diff=True)
    assert would["changed"] is True and path.read_text() == before
    assert would["diff"]["before"] == before and json.loads(would["diff"]["after"]) == STATE


@pytest.mark.parametrize("content, fragment", [
    ("{not json", "is not JSON"),
    (json.dumps(dict(STATE, version=7)), "has version 7"),
    (json.dumps(dict(STATE, events=[{"event_id": "x"}])), "the state to save"),
])
def test_content_that_is_not_a_valid_state_is_refused_and_nothing_is_written(
        tmp_path: Path, content: str, fragment: str) -> None:
    path = tmp_path / "state.json"
    save(path, state_text(STATE))
    before = path.read_text()
    result = save(path, content)
    assert result["failed"] and fragment in result["msg"] and result["msg"].endswith(".")
    assert path.read_text() == before


def test_an_unwritable_place_is_one_sentence(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = save(blocker / "state.json", state_text(STATE))
    assert result["failed"] and result["msg"].startswith("cannot save the state file ") and "Traceback" not in result["msg"]


def save_locked(path: Path, owner: str, release: bool = False) -> Dict[str, Any]:
    args = {"path": str(path), "content": state_text(STATE), "lock_owner": owner, "lease_seconds": 600,
            "release_lock": release}
    return run(scheduled_events_state, args)


def test_a_save_under_the_runs_lock_renews_it_and_the_last_save_releases_it(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    lock = Path(str(path) + ".lock")
    lock.write_text(lock_text("run a", datetime.now(timezone.utc) - timedelta(seconds=500), 600))
    renewed = save_locked(path, "run a")
    assert renewed["failed"] is False and json.loads(path.read_text()) == STATE and renewed["lock"]["taken"]
    expires = datetime.strptime(json.loads(lock.read_text())["expires_at"], "%Y-%m-%dT%H:%M:%SZ")
    assert expires.replace(tzinfo=timezone.utc) > datetime.now(timezone.utc) + timedelta(seconds=500), "renewed"
    last = save_locked(path, "run a", release=True)
    assert last["changed"] is False and last["lock"]["released"] and not lock.exists()


@pytest.mark.parametrize("holder", [None, "run b"])
def test_a_run_whose_lock_is_gone_or_taken_over_saves_nothing(tmp_path: Path, holder: Any) -> None:
    path = tmp_path / "state.json"
    lock = Path(str(path) + ".lock")
    if holder:
        lock.write_text(lock_text(holder, datetime.now(timezone.utc), 600))
    result = save_locked(path, "run a", release=True)
    assert result["failed"] and "nothing was done" in result["msg"] and "Traceback" not in result["msg"]
    assert not path.exists(), "a run that lost the VM must not write its state"
    assert (json.loads(lock.read_text())["owner"] == holder) if holder else not lock.exists()


def test_release_lock_without_an_owner_fails_in_one_sentence(tmp_path: Path) -> None:
    result = run(scheduled_events_state, {"path": str(tmp_path / "s.json"), "content": state_text(STATE),
                                          "release_lock": True})
    assert result["failed"] and "release_lock needs lock_owner" in result["msg"]
    assert list(tmp_path.iterdir()) == []
