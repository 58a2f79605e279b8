"""tasks/control_plane.py's read_catching_up: a run an Event Grid notification started reads Resource Graph again while
the read shows an older moment than the notification, for a bounded time, and says when it gave up waiting."""
from __future__ import annotations

from typing import List

from ansible_collections.azure_imds.scheduled_events.plugins.module_utils.tasks.control_plane import (
    READ_AGAIN_S,
    read_catching_up,
)

NOTIFIED = {"event_id": "E1", "event_status": "Scheduled"}


class Graph:
    """Reads that show the event from the `shows_from`-th on, on a clock that only sleeping moves."""

    def __init__(self, shows_from: int) -> None:
        self.shows_from, self.reads, self.now = shows_from, 0, 0.0
        self.slept: List[float] = []

    def read(self) -> dict:
        self.reads += 1
        shown = [{"event_id": "e1", "event_status": "Scheduled"}] if self.reads >= self.shows_from else []
        return {"events": shown, "read_at": f"read {self.reads}"}

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def catch_up(graph: Graph, notified: dict, seconds: float) -> dict:
    return read_catching_up(graph.read, notified, seconds, sleep=graph.sleep, clock=lambda: graph.now)


def test_reads_again_until_the_notified_event_shows() -> None:
    graph = Graph(shows_from=3)
    result = catch_up(graph, NOTIFIED, 90)
    assert (graph.reads, graph.slept, result["read_at"], result["lagging"]) == (3, [READ_AGAIN_S] * 2, "read 3", False)


def test_gives_up_within_its_bound_and_says_the_read_still_lags() -> None:
    graph = Graph(shows_from=100)
    result = catch_up(graph, NOTIFIED, 12)
    assert graph.now <= 12 and graph.reads == 1 + int(12 // READ_AGAIN_S) and result["lagging"] is True


def test_one_read_without_a_notification_or_when_the_first_read_shows_it() -> None:
    for notified, graph in ((None, Graph(shows_from=100)), (NOTIFIED, Graph(shows_from=1))):
        result = catch_up(graph, notified, 90)
        assert (graph.reads, graph.slept, result["lagging"]) == (1, [], False)
