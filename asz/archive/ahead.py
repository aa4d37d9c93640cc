"""Requests to the bucket started before a reader asks for them, a few at a time.

A reader asks for one thing after another (a session's listing, then its files, then the next
session's), and each request waits a round trip: over a real network that latency, not the
bytes, is what a command's time is made of. What it will most likely ask for next is known
(the next sessions of the root, the next files of the session), so a few of those are started
in threads beside it and are waiting, done, when it asks. Each is asked of the bucket once,
started early or not; one the reader never asks for costs one request.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Generic, TypeVar

__all__ = ["AHEAD", "KEPT", "R", "ReadAhead"]

K = TypeVar("K")
R = TypeVar("R")

AHEAD = 8
"""Requests started ahead at a time, and the threads that make them."""
KEPT = 2 * AHEAD
"""Calls started and not taken that are kept: past it, the oldest is let go (a reader that
never asks for what was read ahead, a long-running server's, must not keep it for good)."""


class ReadAhead(Generic[K, R]):
    """Calls started by key ahead of need, taken by the same key when needed."""

    def __init__(self, workers: int = AHEAD) -> None:
        self.workers = workers
        self._pool: ThreadPoolExecutor | None = None
        self._started: dict[K, Future[R]] = {}

    def __len__(self) -> int:
        """Calls started and not taken yet."""
        return len(self._started)

    def started(self, key: K) -> bool:
        return key in self._started

    def start(self, key: K, call: Callable[[], R]) -> None:
        if key in self._started:
            return
        while len(self._started) >= KEPT:
            self._started.pop(next(iter(self._started))).cancel()  # the oldest: not run, or let go
        if self._pool is None:
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="asz-read")
        self._started[key] = self._pool.submit(call)

    def take(self, key: K, call: Callable[[], R]) -> R:
        """What ``call`` gives, from the call started ahead for ``key`` when there is one."""
        started = self._started.pop(key, None)
        return call() if started is None else started.result()
