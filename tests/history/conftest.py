"""Fixtures for the history-capture tests: the module tests' live simulated fleet."""
from __future__ import annotations

from tests.modules.conftest import fleet  # noqa: F401  (fixtures, used by name)
