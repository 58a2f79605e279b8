"""Waiting on real processes and reading the simulator's times, shared by the suites that run them."""
from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Callable


def epoch(iso: str) -> float:
    """Seconds since the epoch of an ISO 8601 time (`Z` or an offset)."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp()


def wait_for(predicate: Callable[[], Any], timeout: float, what: str, interval: float = 0.05) -> Any:
    """The predicate's first truthy value; AssertionError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(interval)
