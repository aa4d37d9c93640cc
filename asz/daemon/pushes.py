"""The service's pushes to the team archive: after each landing pass, in a thread of their own.

Landing never waits for a push: a pass tells :class:`PushLoop` that it ended and goes on; the
loop runs one push (``asz.archive.push``, the same code as ``asz push``) at a time in its own
worker thread, and a pass that ends while one runs leads to one more push after it, not one
each. A push that fails is tried again after the next pass (a rescan every
``service.rescan_interval`` at the latest), its requests each retried with backoff first; the
metrics count it and ``/healthz`` says so once pushes have failed for longer than
``archive.unhealthy_after``. Stopping the service abandons a push in flight: each object is
created whole or not at all, and the push record lets the next push resume without sending
anything twice.
"""

from __future__ import annotations

import time

import anyio
from structlog.typing import FilteringBoundLogger

from asz.adapters.session_filter import landed_admits
from asz.archive import open_bucket
from asz.archive.bucket import Bucket
from asz.archive.location import ArchiveUrl
from asz.archive.push import PushBusy, Pusher, PushTally, push_line, push_lock
from asz.config import Config
from asz.daemon.http import HealthState
from asz.daemon.metrics import ServiceMetrics
from asz.store import Store


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
        health.unhealthy_after = config.archive.unhealthy_after

    def passed(self) -> None:
        """A landing pass ended: push what it landed (called on the event loop)."""
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            try:
                tally = await anyio.to_thread.run_sync(self._push, abandon_on_cancel=True)
            except PushBusy as err:
                self.log.info("push_skipped", message=str(err))
                continue
            except Exception as err:
                self.log.error("push_crashed", error=repr(err), exc_info=err)
                self.metrics.archive.errors.inc()
                self.health.push_done(None, failed=True)
                continue
            self._report(tally)

    def _push(self) -> PushTally:
        url = self.config.archive.url
        if self._bucket is None:  # one client for the service's life: it keeps connections
            self._bucket = open_bucket(url, self.config.archive)
        pusher = Pusher(
            self.config.root,
            self.store,
            landed_admits(self.config, self.store),  # afresh: a waiting session may be judged
            ArchiveUrl.parse(url),
            self._bucket,
            workers=self.config.archive.workers,
        )
        with push_lock(self.config.root):
            return pusher.run()

    def _report(self, tally: PushTally) -> None:
        self.metrics.archive.record(tally, time.time())
        self.health.push_done(tally.as_dict(), failed=bool(tally.errors))
        line = push_line(tally)
        if tally.files or tally.errors or not tally.complete:
            said = line.rsplit(" (", 1)[0]
            if tally.files or said != self._last_line:
                log = self.log.warning if tally.errors or not tally.complete else self.log.info
                log("push", message=line, **tally.as_dict())
            self._last_line = said
