"""Retrying a request to the bucket: which failures are worth another try, and how long to wait.

Object stores fail in passing all the time (a reset connection, a 500, a 503 ``SlowDown``
that asks the client to slow down), and retrying with exponential backoff and full jitter is
what their operators ask of clients: the waits spread out, so many clients that failed
together do not come back together. The library's own retries are turned off
(``asz.archive.location``) so that this module is the one place that decides, and the push can
look before it sends a body again (``asz.archive.bucket``).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from obstore.exceptions import (
    AlreadyExistsError,
    InvalidPathError,
    NotSupportedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
    UnknownConfigurationKeyError,
)

FINAL = (
    AlreadyExistsError,
    FileNotFoundError,
    InvalidPathError,
    NotSupportedError,
    PermissionDeniedError,
    PreconditionError,
    UnauthenticatedError,
    UnknownConfigurationKeyError,
    ValueError,
)
"""Answers that another try would give again: the object is there, or is not, or the
credentials or the request are wrong. Everything else (resets, refused connections, 5xx,
throttling, timeouts) is taken to pass."""

T = TypeVar("T")


def is_transient(err: BaseException) -> bool:
    """Whether ``err`` is a failure another try may not meet."""
    return isinstance(err, Exception) and not isinstance(err, FINAL)


@dataclass(frozen=True, slots=True)
class Backoff:
    """Up to ``attempts`` tries; before try ``n`` (from 1), a wait drawn from
    ``[0, min(cap, base * 2**n))`` ("full jitter")."""

    attempts: int = 6
    base: float = 0.25
    cap: float = 20.0

    def wait(self, tried: int, draw: Callable[[], float] = random.random) -> float:
        return draw() * min(self.cap, self.base * 2.0**tried)

    def run(
        self,
        call: Callable[[], T],
        *,
        failed: Callable[[BaseException], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> T:
        """``call()`` until it returns, or raises a final error, or the attempts are spent
        (the last error is raised); ``failed`` is told of each transient failure."""
        tried = 0
        while True:
            try:
                return call()
            except Exception as err:
                tried += 1
                if not is_transient(err) or tried >= self.attempts:
                    raise
                if failed is not None:
                    failed(err)
                sleep(self.wait(tried))
