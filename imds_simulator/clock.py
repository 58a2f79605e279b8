"""The two clocks that drive the one engine."""
from __future__ import annotations

from datetime import datetime, timedelta, timezone


class WallClock:
    """Live mode: real UTC time; the time scale lives in the engine's durations."""

    def now(self) -> datetime:
        return datetime.now(timezone.utc)


class VirtualClock:
    """Offline mode: time moves only when told to, so days pass in seconds."""

    def __init__(self, start: datetime):
        self._now = start

    def now(self) -> datetime:
        return self._now

    def advance(self, seconds: float) -> datetime:
        self._now += timedelta(seconds=seconds)
        return self._now

    def set(self, moment: datetime) -> None:
        if moment < self._now:
            raise ValueError("a virtual clock never goes backwards.")
        self._now = moment
