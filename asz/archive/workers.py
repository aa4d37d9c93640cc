"""The push's uploads in flight: a fixed set of daemon threads, and a stop that does not wait.

Not ``concurrent.futures``: the interpreter joins its threads at exit, so a push asked to
stop would first wait for every upload already queued, and the process would live on for
minutes after Ctrl-C or the service's stop. Here a job that has not started when the client
is halted (``asz.archive.retry.Link``) ends at once with ``Halted``, the caller waits a
moment (``grace``) for those in flight, and an upload still in flight after that is abandoned:
each object is created whole or not at all, and the push record lets the next push look for
it before sending it again.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from asz.archive.retry import Halted, Link

__all__ = ["R", "Workers"]

K = TypeVar("K")
R = TypeVar("R")


class Workers(Generic[K, R]):
    """``count`` threads running the jobs submitted, outcomes read back as they end."""

    def __init__(self, count: int, link: Link) -> None:
        self.link = link
        self.pending = 0
        self._todo: queue.SimpleQueue[tuple[K, Callable[[], R]] | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[K, R | BaseException]] = queue.SimpleQueue()
        self._threads = [
            threading.Thread(target=self._work, name=f"asz-push-{n}", daemon=True)
            for n in range(max(1, count))
        ]
        for thread in self._threads:
            thread.start()

    def submit(self, key: K, call: Callable[[], R]) -> None:
        self.pending += 1
        self._todo.put((key, call))

    def finished(self, grace: float) -> Iterator[tuple[K, R | BaseException]]:
        """Each job's result (or what it raised) as it ends (more may be submitted
        meanwhile), until none is pending, or ``grace`` seconds after the client halted,
        whichever comes first."""
        deadline: float | None = None
        while self.pending:
            if deadline is None and self.link.halted:
                deadline = time.monotonic() + grace
            if deadline is not None and time.monotonic() >= deadline:
                return
            try:
                outcome = self._done.get(timeout=0.05)
            except queue.Empty:
                continue
            self.pending -= 1
            yield outcome

    def close(self) -> None:
        """Lets each thread end once the job it holds is done (none is waited for)."""
        for _ in self._threads:
            self._todo.put(None)

    def _work(self) -> None:
        while (job := self._todo.get()) is not None:
            key, call = job
            if self.link.halted:
                self._done.put((key, Halted(self.link.halted)))
                continue
            try:
                result = call()
            except BaseException as err:  # handed to the caller, which says what failed
                self._done.put((key, err))
            else:
                self._done.put((key, result))
