"""tests/conftest.py's STARTED_FIRST names tests that exist: a renamed test would silently go back to its place."""
from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import STARTED_FIRST

REPO = Path(__file__).resolve().parent.parent


def test_every_test_started_first_exists() -> None:
    for node in STARTED_FIRST:
        path, name = node.split("::")
        assert re.search(r"^def %s\(" % re.escape(name), (REPO / path).read_text(), re.M), f"{node} is not a test"
