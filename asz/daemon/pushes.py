"""The service's pushes to the team archive: after each landing pass, in a thread of their own.

Landing never waits for a push: a pass tells :class:`PushLoop` that it ended and goes on; the
loop runs one push (``asz.archive.push``, the same code as ``asz push``) at a time in its own
worker thread, and a pass that ends while one runs leads to one more push after it, not one
each, and at most one every ``archive.push_interval`` seconds (so a live session's small
files go out together, not one push a pass). A push that fails is tried again after the next
pass (a rescan every ``service.rescan_interval`` at the latest), its requests each retried
with backoff first; the
metrics count it (the objects pushed as they go, not at the push's end) and ``/healthz`` says
so once pushes have failed for longer than ``archive.unhealthy_after``. Stopping the service
stops a push in flight within a second or two (``Pusher.stop``): uploads in flight finish or
are abandoned, each object is created whole or not at all, what went is recorded, and the
next push resumes without sending anything twice.
"""

from __future__ import annotations

import math
import threading
import time

import anyio
from structlog.typing import FilteringBoundLogger

from asz.adapters.session_filter import landed_admits
from asz.archive import open_bucket
from asz.archive.bucket import Bucket
from asz.archive.push import GRACE, PushBusy, Pusher, push_lock
from asz.archive.push_tally import PushTally, push_line, stop_line
from asz.archive.redacted import redacted_root
from asz.config import Config
from asz.daemon.http import HealthState
from asz.daemon.metrics import ServiceMetrics
from asz.locations import ArchiveUrl
from asz.store import Store

__all__ = ["PushLoop"]

_STOP_WAIT = GRACE + 1.0
"""Seconds the service waits for its push to stop: the push's own grace, and a margin."""


class PushLoop:
    """Pushes the root to ``config.archive.url`` whenever a pass has landed since the last."""

    def __init__(
        self,
        config: Config,
        store: Store,
        metrics: ServiceMetrics,
        health: HealthState,
        log: FilteringBoundLogger,
    ) -> None:
        self.config = config
        self.store = store
        self.metrics = metrics
        self.health = health
        self.log = log
        self._wake = anyio.Event()
        self._last_line = ""
        self._bucket: Bucket | None = None
        self._pusher: Pusher | None = None
        self._stopping = False
        self._idle = threading.Event()
        self._idle.set()
        health.unhealthy_after = config.archive.unhealthy_after

    def passed(self) -> None:
        """A landing pass ended: push what it landed (called on the event loop)."""
        self._wake.set()

    async def run(self) -> None:
        last = -math.inf
        while True:
            await self._wake.wait()
            # A live session lands a few small files every pass: they go together, at most
            # every ``push_interval`` seconds, not one push a pass.
            await anyio.sleep(max(0.0, last + self.config.archive.push_interval - time.monotonic()))
            last = time.monotonic()
            self._wake = anyio.Event()
            try:
                tally = await self._push_stopping_on_cancel()
            except PushBusy as err:
                self.log.info("push_skipped", message=str(err))
                continue
            except Exception as err:
                self.log.error("push_crashed", error=repr(err), exc_info=err)
                self.metrics.archive.errors.inc()
                self.health.push_done(None, failed=True)
                continue
            self._report(tally)

    async def _push_stopping_on_cancel(self) -> PushTally:
        """One push in a thread; the service stopping stops it and waits for it (a second
        or two), so the process ends with every finished upload recorded."""
        self._idle.clear()
        try:
            return await anyio.to_thread.run_sync(self._push, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():
            self._stopping = True  # before the pusher is read: a push built after sees it
            if self._pusher is not None:
                self._pusher.stop("the service is stopping")
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(self._idle.wait, _STOP_WAIT)
            raise

    def _push(self) -> PushTally:
        try:
            url = self.config.archive.url
            if self._bucket is None:  # one client for the service's life: it keeps connections
                self._bucket = open_bucket(url, self.config.archive)
            # The redaction key is kept under _state: made only once the lock has found the
            # root safe to write into.
            with push_lock(self.config.root):
                self._pusher = Pusher(
                    self.config.root,
                    self.store,
                    landed_admits(self.config, self.store),  # afresh: a waiting one is judged
                    ArchiveUrl.parse(url),
                    self._bucket,
                    workers=self.config.archive.workers,
                    progress=self.metrics.archive,
                    redacted=redacted_root(self.config, self.config.root, self.store),
                )
                if self._stopping:  # the stop came while the pusher was being built
                    self._pusher.stop("the service is stopping")
                tally = self._pusher.run()
            if tally.interrupted:
                self.log.info("push_stopped", message=stop_line(tally), **tally.as_dict())
            return tally
        finally:
            self._idle.set()

    def _report(self, tally: PushTally) -> None:
        self.metrics.archive.record(tally, time.time())
        self.health.push_done(tally.as_dict(), failed=bool(tally.errors or tally.stopped))
        line = push_line(tally)
        if tally.files or tally.errors or not tally.complete:
            said = line.rsplit(" (", 1)[0]
            if tally.files or said != self._last_line:
                log = self.log.info if tally.complete else self.log.warning
                log("push", message=line, **tally.as_dict())
            self._last_line = said
