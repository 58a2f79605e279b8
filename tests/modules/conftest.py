"""Fixtures for the module tests: a live simulated fleet in this process."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.modules.harness import LiveFleet


@pytest.fixture
def fleet() -> Iterator[LiveFleet]:
    """6 VMs / 3 fault domains under platform maintenance at time scale 30 (notice 30-34 s: longer than
    a play on a loaded CI machine), first event already out."""
    live = LiveFleet("platform-maintenance", time_scale=30.0)
    live.wait_for_events()
    yield live
    live.close()
