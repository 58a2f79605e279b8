"""scheduled_events_state on real files: a valid state is written atomically with private modes, `changed` only
when the content changes, check mode writes nothing, and content that is not a valid state is refused."""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Dict

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle_state import empty_state, state_text
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
