"""Retrying a request to the bucket, and what every request of one client shares.

Object stores fail in passing all the time (a reset connection, a 500, a 503 ``SlowDown``
that asks the client to slow down), and retrying with exponential backoff and full jitter is
what their operators ask of clients. The library's own retries are turned off
(``asz.archive.location``) so that this module is the one place that decides, and the push can
look before it sends a body again (``asz.archive.bucket``).

Eight workers retrying each on its own would hammer a throttled bucket eight times as hard,
and would go on for hours against an endpoint that is gone, one file at a time. So the
workers of one client share a :class:`Link`: a failure pauses every worker (the pause grows
while failures follow one another, and ends with the first answer), a failure no retry mends
(``asz.archive.failure``: no such bucket, refused credentials) stops them all at once, and so
does the breaker: ``BREAKER`` requests in a row that met no answer at all (refused, reset,
timed out), with no answer between them. A stop asked from outside (Ctrl-C, the service
stopping) ends the waits at once and lets no new request start.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from asz.archive.failure import Failure, Kind, understand

__all__ = ["BREAKER", "Backoff", "Halted", "Link"]

BREAKER = 6
"""Requests in a row that met no answer, with none answered between them, that end a push:
enough that a reset here and there never does, few enough that an endpoint that is gone ends
the push within seconds rather than after every file has failed alone."""
_UNANSWERED_PAUSE_STEPS = 1
"""An unanswered request pauses as a first failure would, never longer (0.25 to 0.5 s by
default): the breaker, not a long wait, is what gives up on an endpoint that is gone, and it
does so within a few seconds even when one request at a time meets it."""

T = TypeVar("T")


class Halted(Exception):
    """No request is sent any more: a failure no retry mends, the breaker, or a stop asked."""

    def __init__(self, said: str) -> None:
        super().__init__(said)
        self.said = said


@dataclass(frozen=True, slots=True)
class Backoff:
    """Up to ``attempts`` tries of a request; before try ``n`` (from 1), a wait drawn from
    ``[w/2, w)`` with ``w = min(cap, base * 2**n)`` ("equal jitter"): spread out, so clients
    that failed together do not come back together, and never near nothing, since the wait
    is every worker's."""

    attempts: int = 6
    base: float = 0.25
    cap: float = 20.0

    def wait(self, tried: int, draw: Callable[[], float] = random.random) -> float:
        whole = min(self.cap, self.base * 2.0**tried)
        return whole / 2 + draw() * whole / 2


class Link:
    """The state every request of one client shares: the pause, the breaker and the stop."""

    def __init__(self, backoff: Backoff | None = None, breaker: int = BREAKER) -> None:
        self.backoff = backoff or Backoff()
        self.breaker = breaker
        self.failed: Callable[[BaseException], None] | None = None
        """Told of every failure that is tried again (the push counts them)."""
        self._lock = threading.Lock()
        self._halt = threading.Event()
        self._why = ""
        self._asked = False
        self._paused_until = 0.0
        self._failures = 0
        self._unanswered = 0

    def start(self) -> None:
        """A new push on a client kept from the last (the service's): nothing is stopped."""
        with self._lock:
            self._halt.clear()
            self._why, self._asked = "", False
            self._failures = self._unanswered = 0
            self._paused_until = 0.0

    def stop(self, why: str, *, asked: bool = False) -> None:
        """No request starts any more, and every pause ends now; the first reason stays."""
        with self._lock:
            if not self._why:
                self._why, self._asked = why, asked
            self._halt.set()

    @property
    def halted(self) -> str:
        """Why requests stopped; empty while they go on."""
        return self._why

    @property
    def asked(self) -> bool:
        """Whether the stop was asked for (Ctrl-C, the service stopping), not a failure."""
        return self._asked

    def wait(self, seconds: float) -> bool:
        """Sleeps ``seconds`` unless stopped first; True when stopped."""
        return self._halt.wait(seconds)

    def run(self, call: Callable[[], T]) -> T:
        """``call()`` after any shared pause, until it returns, fails for good (raised as it
        came, or as Halted when it stops every request), or its attempts are spent."""
        tried = 0
        while True:
            self._before()
            try:
                result = call()
            except Halted:
                raise
            except Exception as err:
                failure = understand(err)
                if failure.kind is Kind.OBJECT:
                    self._answered()
                    raise
                tried += 1
                self._failed(failure)
                if failure.kind is Kind.FATAL:
                    raise Halted(self._why) from None
                if tried >= self.backoff.attempts:
                    raise
                if self.failed is not None:
                    self.failed(err)
                continue
            self._answered()
            return result

    def _before(self) -> None:
        while True:
            if self._halt.is_set():
                raise Halted(self._why)
            wait = self._paused_until - time.monotonic()
            if wait <= 0:
                return
            self._halt.wait(wait)

    def _answered(self) -> None:
        with self._lock:
            self._failures = self._unanswered = 0

    def _failed(self, failure: Failure) -> None:
        if failure.kind is Kind.FATAL:
            self.stop(failure.said)
            return
        with self._lock:
            self._failures += 1
            steps = self._failures
            if failure.kind is Kind.UNANSWERED:
                self._unanswered += 1
                steps = min(steps, _UNANSWERED_PAUSE_STEPS)
                broken = self._unanswered >= self.breaker
            else:
                broken = False
            pause = time.monotonic() + self.backoff.wait(steps)
            self._paused_until = max(self._paused_until, pause)
        if broken:
            in_a_row = f"{self.breaker} requests in a row"
            self.stop(f"the bucket did not answer {in_a_row} ({failure.said})")
