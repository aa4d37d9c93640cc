"""The landing worker: when to run a pass, and running it off the event loop.

A pass is exactly :func:`asz.passes.run_pass`, the same code as ``asz collect --once``, and it
lands every session's new bodies and lines at once. So the worker batches by time: the first
file the settle queue takes opens a batch, and the pass starts ``batch_window`` seconds later
(at once with 0), taking everything that settled meanwhile in one landed file per session
instead of one per body. A transcript landing is such a file, so every line Claude Code
writes leads to a pass, and every pass re-judges the bodies waiting for a session: a response
waiting for its transcript line lands in the pass that lands the line, with no rescan.

Events can be missed (a dropped event queue, a directory that appeared between a look and a
watch), so a rescan also runs ``rescan_interval`` after the last scan and soon after the
watcher says it lost something. A pass for changes looks at what the events named, so only
the first scan and rescans reset the rescan clock: a steady stream of changes never holds a
rescan off.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio

if TYPE_CHECKING:
    from asz.tally import Tally

__all__ = [
    "CHANGES",
    "FIRST_SCAN",
    "MIN_RESCAN_GAP",
    "RESCAN",
    "PassResult",
    "PassSchedule",
    "PassWorker",
]

MIN_RESCAN_GAP = 1.0
"""Seconds a rescan the watcher asked for waits after the last pass began, so a watcher that
keeps reporting trouble cannot keep the worker in a loop of passes."""

FIRST_SCAN = "first scan"
CHANGES = "changes"
RESCAN = "rescan"


class PassSchedule:
    """When the next pass is due; all times are monotonic seconds passed in by the caller."""

    def __init__(self, batch_window: float, rescan_interval: float, now: float) -> None:
        self.batch_window = batch_window
        self.rescan_interval = rescan_interval
        self._batch_opened: float | None = None
        self._rescan_at = now
        self._last_start: float | None = None

    @property
    def pending(self) -> bool:
        """Whether something settled since the last pass began."""
        return self._batch_opened is not None

    def item_ready(self, now: float) -> None:
        """A file settled: the batch opens now unless it is open already."""
        if self._batch_opened is None:
            self._batch_opened = now

    def rescan_soon(self, now: float) -> None:
        earliest = now if self._last_start is None else self._last_start + MIN_RESCAN_GAP
        self._rescan_at = min(self._rescan_at, max(now, earliest))

    def due_at(self) -> float:
        batch_due = (
            math.inf if self._batch_opened is None else self._batch_opened + self.batch_window
        )
        return min(batch_due, self._rescan_at)

    def start(self, now: float) -> str:
        """Records that a pass starts at ``now`` and says why it runs."""
        if self._last_start is None:
            reason = FIRST_SCAN
        elif self._batch_opened is not None and self._batch_opened + self.batch_window <= now:
            reason = CHANGES
        else:
            reason = RESCAN
        self._batch_opened = None
        self._last_start = now
        if reason != CHANGES:
            self._rescan_at = now + self.rescan_interval
        return reason


@dataclass(frozen=True, slots=True)
class PassResult:
    reason: str
    started_at: float
    """Unix time, as is ``finished_at``."""
    finished_at: float
    counts: Tally | None
    crash: Exception | None = None
    """What the pass raised, when it did not return counts."""


class PassWorker:
    """Runs passes when the schedule says, one at a time, in a worker thread.

    ``run_once(reason)`` is the blocking pass; ``report`` is told every result on the loop.
    A pass that has begun is never abandoned: when the service is told to stop, the pass
    finishes (landing is atomic, so it could be abandoned, but finishing loses no work) and
    no further pass begins.
    """

    def __init__(
        self,
        schedule: PassSchedule,
        run_once: Callable[[str], Tally],
        report: Callable[[PassResult], None],
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.schedule = schedule
        self._run_once = run_once
        self._report = report
        self._clock = clock
        self._wake = anyio.Event()

    def item_ready(self) -> None:
        self.schedule.item_ready(self._clock())
        self._wake.set()

    def rescan_soon(self) -> None:
        self.schedule.rescan_soon(self._clock())
        self._wake.set()

    async def run(self) -> None:
        while True:
            # The pass below is shielded, so this is where a stop request takes effect.
            await anyio.lowlevel.checkpoint_if_cancelled()
            delay = self.schedule.due_at() - self._clock()
            if delay > 0:
                with anyio.move_on_after(delay):
                    await self._wake.wait()
                self._wake = anyio.Event()
                continue
            with anyio.CancelScope(shield=True):
                self._report(await self._one_pass())

    async def _one_pass(self) -> PassResult:
        reason = self.schedule.start(self._clock())
        started = time.time()
        try:
            counts = await anyio.to_thread.run_sync(self._run_once, reason)
        except Exception as err:
            return PassResult(reason, started, time.time(), None, err)
        return PassResult(reason, started, time.time(), counts)
