"""``asz collect`` as a long-running service: watch, settle, batch, pass, report.

One event loop runs the parts that must always answer (the heartbeat health and the systemd
watchdog read, signal handling, taking file events); passes run in a worker thread, one at a
time, so a long pass never silences them. The order of start-up is chosen so nothing written
meanwhile is missed: the watches are armed before the first scan, which is an ordinary pass
over everything, and whatever settles during a pass leads to another one.

The service holds the root's collector lock for its whole life. A second service on the same
root waits for it (checking without blocking the loop) instead of failing, so a restart that
overlaps the old process, or a stand-by copy, takes over when the holder exits.
"""

from __future__ import annotations

import contextlib
import math
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import anyio
from structlog.typing import FilteringBoundLogger

from asz import __version__
from asz.adapters.presence import absent_dirs, nothing_there
from asz.adapters.provider_state import ProviderState
from asz.config import Config
from asz.daemon.analytics import FactsWriter
from asz.daemon.http import HealthState, ListenError, StatusServer
from asz.daemon.metrics import ServiceMetrics
from asz.daemon.notify import Notifier
from asz.daemon.otlp import ExportLoop, OtlpCacheMetrics, export_target
from asz.daemon.pushes import PushLoop
from asz.daemon.repacks import RepackLoop
from asz.daemon.settle import BodyCheck, Kind, SettleQueue, SourcePaths, check_body
from asz.daemon.watcher import Armed, EventKind, Rearmed, Target, Watcher, WatchEvent
from asz.daemon.worker import FIRST_SCAN, RESCAN, PassResult, PassSchedule, PassWorker
from asz.exits import EXIT_FAILED, EXIT_OK
from asz.logs import configure_logging
from asz.passes import pass_line, run_pass
from asz.store import BodyLander, Busy, Root, UnsafeRoot, collector_lock, open_store
from asz.tally import Tally
from asz.view.keeper import ReportKeeper
from asz.view.prices import price_table
from asz.words import CONFLICT_ADVICE

__all__ = ["FULL_RESCAN_EVERY", "HEARTBEAT_SECONDS", "LOCK_POLL_SECONDS", "Service", "run_service"]

LOCK_POLL_SECONDS = 1.0
HEARTBEAT_SECONDS = 1.0
FULL_RESCAN_EVERY = 10
"""A rescan lists the bodies directory when its mtime moved; every tenth one lists it anyway."""


def run_service(config: Config, as_json: bool = False, log_format: str = "auto") -> int:
    """Runs until SIGTERM or SIGINT; 0 after a clean stop, 1 when it could not start.

    ``as_json`` logs every pass, quiet ones included, as ``asz collect --once --json`` prints
    one; otherwise a pass is logged when it changed something or the waiting and unreadable
    counts moved.
    """
    log = configure_logging(log_format=log_format)
    try:
        return anyio.run(Service(config, as_json, log).run)
    except Exception as err:
        # A bug, not a state of the sources: exit non-zero so the service manager restarts it.
        log.error("crashed", error=repr(err), exc_info=err)
        return EXIT_FAILED


class Service:
    def __init__(self, config: Config, as_json: bool, log: FilteringBoundLogger) -> None:
        self.config = config
        self.as_json = as_json
        self.log = log
        self.root = Root(config.root)
        self.metrics = ServiceMetrics(__version__)
        self.health = HealthState(__version__)
        store = open_store(config.root, compression=config.compression)
        self.lander = BodyLander(store)
        self.pushes = (
            PushLoop(config, store, self.metrics, self.health, log) if config.archive.url else None
        )
        self.repacks = RepackLoop(config, store, log) if config.service.repack_after > 0 else None
        target = export_target(config, log)
        self.exports = (
            ExportLoop(config, store, target, metrics=self.metrics, health=self.health, log=log)
            if target
            else None
        )
        self.otlp_metrics = (
            OtlpCacheMetrics(target, config.otlp.metrics_interval)
            if target is not None and target.metrics_url and config.otlp.metrics
            else None
        )
        self.facts = FactsWriter(config, store, log) if config.analytics.url else None
        self.reports = ReportKeeper(
            store, price_table(config.prices), config.service.report_interval
        )
        self.provider = ProviderState()
        self._hints = threading.Lock()
        self._changed_bodies: set[str] = set()
        """Body files the watcher saw change since the last pass began."""
        self._listing_due = True
        self._rescans = 0
        """The watcher may have missed something: the next pass lists the bodies directory."""
        self.notifier = Notifier.from_environ()
        self.sources = SourcePaths.resolve(config.projects_dirs, config.bodies_dirs)
        self._absent: list[Path] | None = None
        """The source directories the last look found absent (None before the first)."""
        timing = config.service
        self.settle = SettleQueue(
            timing.settle_seconds,
            timing.unreadable_after,
            max_wait=timing.settle_seconds + timing.batch_window,
        )
        self.watcher = Watcher(_targets(config))
        self.worker = PassWorker(
            PassSchedule(timing.batch_window, timing.rescan_interval, time.monotonic()),
            self._pass,
            self._report,
        )
        self._logged_backlog: tuple[int, int] | None = None
        self._known_errors: set[str] = set()
        self._known_conflicts: set[str] = set()
        self._stop_announced = False
        self._last_status = ""

    async def run(self) -> int:
        try:
            server = StatusServer(self.config.service.listen, self.health, self.metrics)
        except (ListenError, OSError) as err:
            self.log.error("cannot_listen", listen=self.config.service.listen, error=str(err))
            return EXIT_FAILED
        server.start()
        host, port = server.address
        self.log.info("listening", host=host, port=port)
        self._log_start()
        self._look_for_sources()
        refused = False
        try:
            self._log_rearmed(await anyio.to_thread.run_sync(self.watcher.start))
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(self._stop_on_signal, tasks.cancel_scope)
                tasks.start_soon(self._heartbeat)
                with contextlib.ExitStack() as held:
                    refused = not await self._take_lock(held)
                    if refused:
                        tasks.cancel_scope.cancel()
                    else:
                        tasks.start_soon(self._feed)
                        if self.pushes is not None:
                            tasks.start_soon(self.pushes.run)
                        if self.repacks is not None:
                            self.repacks.start()
                        if self.exports is not None:
                            tasks.start_soon(self.exports.run)
                        await self.worker.run()
        finally:
            with anyio.CancelScope(shield=True):
                self._announce_stop()
                await anyio.to_thread.run_sync(self.watcher.stop)
                await anyio.to_thread.run_sync(server.close)
                if self.otlp_metrics is not None:
                    await anyio.to_thread.run_sync(self.otlp_metrics.close)
                if self.exports is not None:
                    await anyio.to_thread.run_sync(self.exports.close)
        self.log.info("stopped")
        return EXIT_FAILED if refused else EXIT_OK

    # -- tasks --------------------------------------------------------------------------

    async def _stop_on_signal(self, scope: anyio.CancelScope) -> None:
        """The first SIGTERM or SIGINT stops the service once the pass in flight is done.

        A second one stops the process at once, abandoning that pass: every landed file is
        published atomically, so that leaves no partial landed file, and the next pass lands
        what was abandoned. Leaving the receiver gives SIGTERM its default action back;
        SIGINT is given the same instead of Python's KeyboardInterrupt.
        """
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                self.log.info("stopping", signal=signal.Signals(signum).name)
                break
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        self._announce_stop()
        scope.cancel()

    async def _heartbeat(self) -> None:
        """Ticks the health state, and pings systemd's watchdog at its interval.

        Both come from the event loop on purpose: a hung loop must stop them.
        """
        interval = self.notifier.watchdog_interval
        next_ping = 0.0
        while True:
            self.health.tick()
            now = time.monotonic()
            if interval is not None and now >= next_ping:
                self._notify(self.notifier.watchdog)
                next_ping = now + interval
            await anyio.sleep(min(HEARTBEAT_SECONDS, interval or math.inf))

    async def _take_lock(self, held: contextlib.ExitStack) -> bool:
        """Waits for the root's lock; False when the root is not safe to write into, which
        no wait mends: the service stops and says why in one line."""
        told = False
        while True:
            try:
                held.enter_context(collector_lock(self.root))
            except UnsafeRoot as err:
                self.log.error("root_refused", root=str(self.root.path), why=str(err))
                self._notify(self.notifier.status, f"root refused: {err}")
                return False
            except Busy:
                if not told:
                    self.log.info("lock_busy", root=str(self.root.path))
                    self._notify(self.notifier.status, "waiting for another collector's lock")
                    told = True
                await anyio.sleep(LOCK_POLL_SECONDS)
                continue
            self.log.info("lock_held", root=str(self.root.path))
            self._notify(self.notifier.status, "first scan")
            return True

    async def _feed(self) -> None:
        """Moves watcher events into the settle queue, and settled files to the worker."""
        while True:
            deadline = self.settle.next_deadline()
            wait = math.inf if deadline is None else max(deadline - time.monotonic(), 0.0)
            events: list[WatchEvent] = []
            with anyio.move_on_after(wait):
                events = await self.watcher.receive()
            now = time.monotonic()
            for event in events:
                self._route(event, now)
            taken, to_check = self.settle.take_due(now)
            if to_check:
                checked_at = time.monotonic()
                checks = await anyio.to_thread.run_sync(_check_bodies, to_check)
                for path, check in zip(to_check, checks, strict=True):
                    taken += self.settle.judge(path, check, checked_at)
            if taken:
                self.worker.item_ready()

    def _route(self, event: WatchEvent, now: float) -> None:
        if event.kind is EventKind.MOVED and event.armed is not None:
            self._must_list()
            self._log_watching(event.armed)
            self.worker.rescan_soon()
            return
        if event.kind is EventKind.LOST:
            self._must_list()
            self.log.warning("watch_lost", reason=event.reason, overflow=event.overflow)
            if event.overflow:
                self.metrics.watch_overflows.inc()
            else:
                self.metrics.record_error("watch")
            self.worker.rescan_soon()
            return
        kind = self.sources.kind_of(event.path)
        if kind is None:
            return
        if kind is Kind.BODY:
            with self._hints:
                self._changed_bodies.add(os.path.basename(event.path))
        if event.kind is EventKind.GONE:
            self.settle.forget(event.path)
        else:
            self.settle.changed(event.path, kind, now)

    # -- passes -------------------------------------------------------------------------

    def _must_list(self) -> None:
        with self._hints:
            self._listing_due = True

    def _pass(self, reason: str) -> Tally:
        """One pass, in a worker thread; a rescan first puts every watch back where it belongs.

        A pass looks at the body files the watcher named and those the last pass left
        unsettled; a rescan also lists the bodies directory when its mtime moved, and the first
        pass and any pass after the watcher lost something or could not place a watch always
        list it.
        """
        if reason == RESCAN:
            self._log_rearmed(self.watcher.rearm())
            self._rescans += 1
        self._look_for_sources()
        with self._hints:
            changed, self._changed_bodies = self._changed_bodies, set()
            listing_due, self._listing_due = self._listing_due, False
        # Scans are the truth the watcher's hints are checked against: every FULL_RESCAN_EVERY-th
        # rescan lists and stats every body whatever the directory's mtime says, so an edit in
        # place that no event reported is found within that many rescan intervals.
        if reason == RESCAN and self._rescans % FULL_RESCAN_EVERY == 0:
            listing_due = True
        counts = run_pass(
            self.config,
            self.root,
            self.lander,
            provider=self.provider,
            changed_bodies=None if listing_due or reason == FIRST_SCAN else changed,
            rescan=reason == RESCAN,
            reports=self.reports,
        )
        for gained in self.reports.take_gained():
            self.metrics.add_cache_counts(gained)
            if self.otlp_metrics is not None:
                self.otlp_metrics.add(gained)
        if self.facts is not None:
            self.facts.after_pass(counts.sessions)
        return counts

    def _look_for_sources(self) -> None:
        """Notes which source directories are absent, in the health report and, when that
        changes, in the log: Claude Code may make them later, and the watcher takes each as
        it appears, so an absent one is said, not failed on."""
        absent = absent_dirs(self.config)
        if absent == self._absent:
            return
        before, self._absent = self._absent, absent
        self.health.sources_absent = [str(directory) for directory in absent]
        if absent:
            missing = nothing_there(self.config)
            say = self.log.warning if missing else self.log.info
            said = missing or "not there until Claude Code makes them: " + ", ".join(
                self.health.sources_absent
            )
            say("sources_absent", absent=self.health.sources_absent, message=said)
        elif before:
            self.log.info("sources_present", message="every source directory is there")

    def _report(self, result: PassResult) -> None:
        counts = result.counts
        if counts is None:
            self.log.error(
                "pass_crashed",
                reason=result.reason,
                error=repr(result.crash),
                exc_info=result.crash,
            )
            self.metrics.record_error("crash")
            status = f"last pass ({result.reason}) failed: {result.crash!r}"
        else:
            self.metrics.record_pass(counts, result.finished_at)
            if result.reason == RESCAN:
                self.metrics.rescans.inc()
            self.health.pass_done(counts.as_dict(), result.finished_at)
            if self.pushes is not None:
                self.pushes.passed()
            if self.repacks is not None and result.reason in (RESCAN, FIRST_SCAN):
                self.repacks.passed()  # a session turns quiet with time, not with a pass
            if self.exports is not None:
                self.exports.landed(counts.sessions)
            self._log_pass(result.reason, counts)
            status = f"last pass ({result.reason}): {pass_line(counts, timed=False)}"
        if self.health.ready:
            if status != self._last_status:
                self._notify(self.notifier.status, status)
        else:
            self.health.ready = True
            self.log.info("ready")
            self._notify(self.notifier.ready, status)
        self._last_status = status

    def _log_pass(self, reason: str, counts: Tally) -> None:
        backlog = (counts.bodies_waiting, counts.bodies_unreadable)
        if self.as_json or counts.changed or backlog != self._logged_backlog:
            said = f"{reason}: {pass_line(counts)}"
            self.log.info("pass", reason=reason, message=said, **counts.as_dict())
            self._logged_backlog = backlog
        for source in counts.conflict_sources:
            if source not in self._known_conflicts:
                said = f"conflict: {source}; {CONFLICT_ADVICE}"
                self.log.warning("conflict", source=source, message=said)
        for error in counts.errors:
            if error not in self._known_errors:
                self.log.error("pass_error", reason=reason, error=error)
        self._known_conflicts = set(counts.conflict_sources)
        self._known_errors = set(counts.errors)

    # -- reporting helpers --------------------------------------------------------------

    def _log_start(self) -> None:
        timing = self.config.service
        self.log.info(
            "starting",
            version=__version__,
            pid=os.getpid(),
            root=str(self.root.path),
            projects=[str(directory) for directory in self.config.projects_dirs],
            bodies=[str(directory) for directory in self.config.bodies_dirs],
            batch_window=timing.batch_window,
            settle_seconds=timing.settle_seconds,
            rescan_interval=timing.rescan_interval,
            unreadable_after=timing.unreadable_after,
            systemd=self.notifier.enabled,
        )

    def _log_rearmed(self, rearmed: Rearmed) -> None:
        for armed in rearmed.moved:
            self._log_watching(armed)
        if rearmed.moved or rearmed.errors:
            self._must_list()
        for error in rearmed.errors:
            self.log.error("watch_error", error=error)
            self.metrics.record_error("watch")

    def _log_watching(self, armed: Armed) -> None:
        self.log.info(
            "watching", target=str(armed.target.path), watched=armed.base, exact=armed.exact
        )

    def _announce_stop(self) -> None:
        """STOPPING=1 as soon as the service begins to stop, once, whatever made it stop."""
        if not self._stop_announced:
            self._stop_announced = True
            self._notify(self.notifier.stopping)

    def _notify(self, send: Callable[..., None], *args: str) -> None:
        try:
            send(*args)
        except OSError as err:
            self.log.error("notify_failed", error=str(err))
            self.metrics.record_error("notify")


def _targets(config: Config) -> list[Target]:
    """Every projects directory (recursive) and every bodies directory (flat) to watch."""
    targets = []
    if config.adapters.claude_code_local.enabled:
        targets += [Target(directory, recursive=True) for directory in config.projects_dirs]
    if config.adapters.claude_code_provider.enabled:
        targets += [Target(directory, recursive=False) for directory in config.bodies_dirs]
    return targets


def _check_bodies(paths: list[str]) -> list[BodyCheck]:
    return [check_body(Path(path)) for path in paths]
