"""Unit-test fixtures: the IMDS simulator in-process over real HTTP (see simulated_imds)."""
from __future__ import annotations

from typing import Iterator

import pytest

from .simulated_imds import QUIET, Simulator, sc, serve


@pytest.fixture
def sim() -> Iterator[Simulator]:
    """The platform-maintenance scenario (a Reboot walked over fault domains)."""
    yield from serve(sc.load("platform-maintenance"))


@pytest.fixture
def quiet_sim() -> Iterator[Simulator]:
    """No events but those a test injects (the module tests' `sim`); a started event does not take its VMs'
    IMDS away, so that a test can read on after it."""
    yield from serve(QUIET, simulate_impact=False)
