"""The module tests' simulator has no events but those each test injects."""
from __future__ import annotations

import pytest

from ...simulated_imds import Simulator


@pytest.fixture
def sim(quiet_sim: Simulator) -> Simulator:
    return quiet_sim
