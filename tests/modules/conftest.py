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


def _live(scenario: str, time_scale: float) -> Iterator[LiveFleet]:
    live = LiveFleet(scenario, time_scale=time_scale)
    live.wait_for_events()
    yield live
    live.close()
