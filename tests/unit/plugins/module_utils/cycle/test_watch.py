"""The watch's bookkeeping between rounds (cycle_policy.watch_*): how long a round waits, when an unread host
fails its round, since when a host is quiet, and when the watch ends."""
from __future__ import annotations

from typing import Any, Dict, List

import pytest

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.errors import PolicyError
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.cycle.watch import (
    watch_after_round,
    watch_done,
    watch_settings,
    watch_start,
    watch_unread,
    watch_wait_seconds,
)

T0 = 1_800_000_000.0
SETTINGS = watch_settings({"watch_seconds": 600, "round_seconds": 30, "quiet_seconds": 300, "stop_when_quiet": True})
EVENT = {"event_id": "602D9444-D2CD-49C7-8624-8643E7171297"}


def read(incarnation: int, events: List[Dict[str, Any]]) -> Dict[str, Any]:
    return {"document_incarnation": incarnation, "events": events}


def test_settings_come_as_numbers_with_defaults_and_playbook_strings() -> None:
    settings = watch_settings({"watch_seconds": "900", "round_seconds": None, "stop_when_quiet": "true"})
    assert settings["watch_seconds"] == 900.0 and settings["round_seconds"] == 30.0
    assert settings["stop_when_quiet"] is True and watch_settings({})["stop_when_quiet"] is False


@pytest.mark.parametrize("given, fragment", [
    ({"watch_seconds": 0}, "^watch_seconds must be a positive number of seconds"),
    ({"round_seconds": "soon"}, "watch_round_seconds must be a positive"),
    ({"unread_seconds": -5}, "watch_unread_seconds must be a positive"),
    ({"quiet_seconds": -1}, "watch_quiet_seconds must be a non-negative"),
    ({"rounds": 3}, "unknown watch setting rounds"),
])
def test_bad_settings_are_one_sentence(given: Dict[str, Any], fragment: str) -> None:
    with pytest.raises(PolicyError, match=fragment) as caught:
        watch_settings(given)
    assert str(caught.value).endswith(".")


def test_the_first_round_reads_at_once_and_a_round_never_outlasts_the_watch() -> None:
    book = watch_start(SETTINGS, T0)
    assert book["since"] is None and book["deadline"] == T0 + 600
    assert watch_wait_seconds(book, SETTINGS, T0) == 30
    assert watch_wait_seconds(book, SETTINGS, T0 + 590) == pytest.approx(10)
    assert watch_wait_seconds(book, SETTINGS, T0 + 700) == 0


def test_an_unread_host_fails_its_round_only_after_unread_seconds() -> None:
    book = watch_after_round(watch_start(SETTINGS, T0), read(3, []), T0 + 10)
    assert watch_unread(book, SETTINGS, T0 + 910) == (900, False)
    assert watch_unread(book, SETTINGS, T0 + 911)[1] is True


def test_quiet_since_starts_when_events_are_gone_and_resets_when_one_comes_back() -> None:
    book = watch_start(SETTINGS, T0)
    book = watch_after_round(book, read(3, [EVENT]), T0 + 10)
    assert book["quiet_since"] is None and book["seen_events"] and book["since"] == 3
    book = watch_after_round(book, read(4, []), T0 + 20)
    assert book["quiet_since"] == T0 + 20
    assert watch_after_round(book, read(4, []), T0 + 50)["quiet_since"] == T0 + 20, "quiet since the first quiet round"
    assert watch_after_round(book, read(5, [EVENT]), T0 + 60)["quiet_since"] is None


def test_the_watch_ends_at_its_deadline_whatever_the_hosts() -> None:
    busy = watch_after_round(watch_start(SETTINGS, T0), read(3, [EVENT]), T0 + 10)
    assert watch_done([busy], 1, SETTINGS, T0 + 599) is False
    assert watch_done([busy], 1, SETTINGS, T0 + 600) is True


def test_stop_when_quiet_needs_events_seen_every_host_in_the_round_and_a_quiet_stretch() -> None:
    start = watch_start(SETTINGS, T0)
    never = watch_after_round(start, read(3, []), T0 + 10)
    assert watch_done([never, never], 2, SETTINGS, T0 + 400) is False, "nothing seen yet: keep watching"
    seen = watch_after_round(watch_after_round(start, read(3, [EVENT]), T0 + 10), read(4, []), T0 + 20)
    assert watch_done([seen, never], 2, SETTINGS, T0 + 319) is False, "quiet for less than quiet_seconds"
    assert watch_done([seen, never], 2, SETTINGS, T0 + 320) is True
    assert watch_done([seen], 2, SETTINGS, T0 + 400) is False, "a host out of the round may have work"
    assert watch_done([seen], 1, dict(SETTINGS, stop_when_quiet=False), T0 + 400) is False
