"""Simulated time: every timestamp and mtime of a capture comes from here, never the wall clock."""

from __future__ import annotations

import random
from datetime import UTC, datetime

__all__ = ["Clock", "iso_ms"]

_NS_PER_MS = 1_000_000


class Clock:
    """A monotonic nanosecond clock that only moves when the simulation says so."""

    def __init__(self, start: datetime, rng: random.Random) -> None:
        if start.tzinfo is None:
            start = start.replace(tzinfo=UTC)
        self.ns = int(start.timestamp()) * 1_000_000_000 + start.microsecond * 1000
        self.rng = rng

    def tick(self, low_ms: float, high_ms: float) -> int:
        """Moves forward by a random span and returns the new time; a sub-millisecond part
        keeps mtimes realistic (file systems record nanoseconds)."""
        step = self.rng.uniform(low_ms, high_ms) * _NS_PER_MS
        self.ns += max(int(step), 1) + self.rng.randrange(1000)
        return self.ns

    def now(self) -> datetime:
        return datetime.fromtimestamp(self.ns // 1_000_000_000, tz=UTC)


def iso_ms(ns: int) -> str:
    moment = datetime.fromtimestamp(ns // 1_000_000_000, tz=UTC)
    millis = (ns // _NS_PER_MS) % 1000
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis:03d}Z"
