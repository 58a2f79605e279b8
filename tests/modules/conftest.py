"""Fixtures for the module tests: a live simulated fleet in this process."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.modules.harness import LiveFleet


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    """6 VMs / 3 fault domains under platform maintenance at time scale 4, first event already out.

    The notice lasts 225-255 s: a test's plays (up to six ad-hoc runs in a row) on a machine loaded by the other
    suites end minutes before the event starts by itself (a refusal test would then read "already started", a read
    after its end no event: a timing, not the behaviour under test). Nothing here waits for the clock."""
    yield from _live("platform-maintenance", time_scale=4.0)


@pytest.fixture
def answering_fleet() -> Iterator[LiveFleet]:
    """The same fleet, but a VM keeps answering when its event starts: for a test that watches, from the VM the
    event lists, the event start (a rebooting VM drops the connection from the moment it starts, so the wait ends
    in a broken read, or in Started, by how a loaded machine times the polls)."""
    yield from _live("platform-maintenance", time_scale=4.0, simulate_impact=False)


@pytest.fixture
def changing_fleet() -> Iterator[LiveFleet]:
    """The same fleet at time scale 30, for a test that waits for the document to change by itself: the
    notice (30-34 s) ends, the event starts, and its end and the next domain's event change it again."""
    yield from _live("platform-maintenance", time_scale=30.0)


def _live(scenario: str, time_scale: float, simulate_impact: bool = True) -> Iterator[LiveFleet]:
    live = LiveFleet(scenario, time_scale=time_scale, simulate_impact=simulate_impact)
    live.wait_for_events()
    yield live
    live.close()
