"""The VM lease lock: who may take, renew and release it (pure). On real files and racing processes, through
the module itself: tests/unit/plugins/modules/test_scheduled_events_lock.py."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from typing import Optional

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.lease.cycle_lock import (
    DELETE,
    LockError,
    check_lock_request,
    claim,
    lock_text,
    refresh,
    release,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.host.interface import Capabilities, Host
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.module_support import lock_step

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
    with pytest.raises(LockError, match="is gone") as gone:
        refresh(None, "run a", NOW, 600, PATH)
    # Two local hosts on the default state path share one lock: the message names that cause and its fix.
    assert "shares this VM's state path" in str(gone.value) and "its own maintenance_cycle_state_path" in str(gone.value)
    assert str(gone.value).count(". ") == 0 and str(gone.value).endswith(".")


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


# ---------------------------------------------------------------- the module's step, on a host that keeps no lock

class Unlocked(Host):
    capabilities = Capabilities(no_lock="no lock here, so this run goes on without it.")

    def update_lock(self, path, change, write=True):
        raise AssertionError("a host that keeps no lock is never asked for one")


def test_on_a_host_that_keeps_no_lock_the_run_goes_on_with_its_kinds_warning(tmp_path) -> None:
    warnings = []
    result = lock_step("claim", str(tmp_path / "l"), "run a", 900.0, Unlocked(warnings.append))
    assert result["supported"] is False and not result["taken"] and warnings == [Unlocked.capabilities.no_lock]
