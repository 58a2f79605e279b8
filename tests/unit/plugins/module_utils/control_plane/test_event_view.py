"""Sightings folded into one view per event: repeats and statuses out of order are dropped, with their reason."""
from __future__ import annotations

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.event_view import (
    ended,
    event_key,
    fold,
)
from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.control_plane.notifications import (
    from_event_grid,
    from_resource_graph,
)

from .payloads import EVENT_ID, event_grid, graph_row


def grid(status: str, delivery: str, at: str, **props) -> dict:
    return from_event_grid(event_grid(status, delivery_id=delivery, event_time=at, **props))


def test_an_event_moves_forward_and_its_end_is_said() -> None:
    view, dropped = fold([grid("Scheduled", "d1", "2026-11-27T10:00:00Z"), grid("Started", "d2", "2026-11-27T10:05:00Z"),
                          grid("Completed", "d3", "2026-11-27T10:12:00Z")])
    assert dropped == [] and view[event_key(EVENT_ID)]["event"]["event_status"] == "Completed"
    assert ended(view) == {event_key(EVENT_ID): "Completed"}


def test_a_repeated_delivery_and_a_status_behind_are_dropped_with_their_reason() -> None:
    started = grid("Started", "d2", "2026-11-27T10:05:00Z")
    view, dropped = fold([started, grid("Started", "d2", "2026-11-27T10:05:00Z"),
                          grid("Scheduled", "d1", "2026-11-27T10:00:00Z")])
    assert view[event_key(EVENT_ID)] is started
    assert [d["reason"] for d in dropped] == [
        "a repeat of delivery d2", "Scheduled after Started was seen: an event's status only moves forward"]


def test_an_end_is_final_and_a_second_end_is_dropped() -> None:
    view, dropped = fold([grid("Canceled", "d1", "2026-11-27T10:00:00Z"), grid("Completed", "d2", "2026-11-27T10:01:00Z")])
    assert ended(view) == {event_key(EVENT_ID): "Canceled"} and len(dropped) == 1


def test_within_a_status_the_later_sighting_wins_whichever_arrives_last() -> None:
    moved = grid("Scheduled", "d2", "2026-11-27T10:03:00Z", not_before="Fri, 27 Nov 2026 10:30:00 GMT")
    view, dropped = fold([moved, grid("Scheduled", "d1", "2026-11-27T10:00:00Z")])
    assert view[event_key(EVENT_ID)]["event"]["not_before"] == "2026-11-27T10:30:00Z"
    assert [d["reason"] for d in dropped] == ["older than the Scheduled sighting already held"]


def test_an_unknown_status_counts_as_under_way_and_never_as_an_end() -> None:
    view, dropped = fold([grid("Paused", "d1", "2026-11-27T10:00:00Z"), grid("Scheduled", "d2", "2026-11-27T10:01:00Z")])
    assert view[event_key(EVENT_ID)]["event"]["event_status"] == "Paused" and ended(view) == {}
    assert len(dropped) == 1


def test_one_event_whichever_way_it_was_seen_and_the_view_given_is_not_changed() -> None:
    first = fold([grid("Scheduled", "d1", "2026-11-27T10:00:00Z")])[0]
    row = from_resource_graph(graph_row("Started", event_id=EVENT_ID.lower()), "2026-11-27T10:06:00Z")
    later, dropped = fold([row], first)
    assert list(later) == [event_key(EVENT_ID)] and later[event_key(EVENT_ID)] is row and dropped == []
    assert first[event_key(EVENT_ID)]["event"]["event_status"] == "Scheduled"
