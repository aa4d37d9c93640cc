"""The service's export to an OpenTelemetry backend: after each landing pass, in a thread of its
own, and the cache-cost counters over OTLP beside ``/metrics``.

Landing never waits for an export: a pass tells :class:`ExportLoop` which sessions it landed
and goes on; the loop exports them (``asz.export``, the same code as ``asz export otlp``) one
export at a time, with the sessions whose spans still wait (not final yet, or left by a failed
batch). At start it looks at every session once: those wholly sent before and unchanged since
cost a look at their cursor. A batch the endpoint does not take is tried again after a backoff
that doubles up to ``otlp.backoff_cap``; passes keep landing meanwhile, the metrics count the
spans sent, waiting and failed, and ``/healthz`` says so once exports have failed for longer
than ``otlp.unhealthy_after``. Stopping the service abandons an export in flight: the cursors
hold every batch taken before, so the next export sends at most that one batch again.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import anyio
from prometheus_client import Counter, Gauge
from structlog.typing import FilteringBoundLogger

from asz.config import Config
from asz.daemon.http import HealthState
from asz.daemon.metrics import ServiceMetrics, bounded_cause, bounded_family
from asz.export.cursor import Cursors, ExportBusy, export_lock
from asz.export.otel import EndpointError, SpanSender, Target, resolve_target
from asz.export.run import ExportTally, SpanExport
from asz.redact import Redactor, configured_redactor
from asz.store import REDACT_KEY_FILE, STATE_DIR, Store
from asz.view.prices import price_table

if TYPE_CHECKING:
    from opentelemetry.metrics import Counter as OtelCounter
    from opentelemetry.sdk.metrics import MeterProvider

    from asz.view.families import CacheCounts

__all__ = ["ExportLoop", "ExportMetrics", "OtlpCacheMetrics", "export_target"]


def export_target(config: Config, log: FilteringBoundLogger) -> Target | None:
    """Where the service exports to; None when no endpoint is named (no export), or when the
    one named cannot be used (said in the log: landing goes on without it)."""
    otlp = config.otlp
    try:
        return resolve_target(otlp.endpoint, otlp.headers, otlp.headers_file, otlp.timeout)
    except EndpointError as err:
        if otlp.endpoint or otlp.headers or otlp.headers_file:
            log.error("export_off", message=str(err))
        return None


class ExportMetrics:
    """What the exports sent and left, on the service's ``/metrics``."""

    def __init__(self, metrics: ServiceMetrics) -> None:
        registry = metrics.registry
        self.sent = Counter(
            "asz_otlp_spans_sent_total", "Spans the OTLP endpoint took.", registry=registry
        )
        self.failed = Counter(
            "asz_otlp_spans_failed_total",
            "Spans of batches the OTLP endpoint did not take (sent again later).",
            registry=registry,
        )
        self.waiting = Gauge(
            "asz_otlp_spans_waiting",
            "Spans not sent yet, as of the last export: their session is still landing, or "
            "the endpoint did not take them.",
            registry=registry,
        )
        self.last_success = Gauge(
            "asz_otlp_last_export_success_timestamp_seconds",
            "Unix time the last export without an error finished; 0 before the first.",
            registry=registry,
        )

    def record(self, tally: ExportTally, finished_at: float) -> None:
        """An export ended (its spans sent were counted batch by batch)."""
        self.failed.inc(tally.spans_failed)
        self.waiting.set(tally.spans_waiting + tally.spans_failed)
        if tally.error is None:
            self.last_success.set(finished_at)


class ExportLoop:
    """Exports what the passes land (see the module)."""

    def __init__(
        self,
        config: Config,
        store: Store,
        target: Target,
        *,
        metrics: ServiceMetrics,
        health: HealthState,
        log: FilteringBoundLogger,
    ) -> None:
        self.config = config
        self.store = store
        self.target = target
        self.metrics = ExportMetrics(metrics)
        self.health = health
        self.log = log
        self._wake = anyio.Event()
        self._pending: set[str] | None = None
        """Sessions to export; None: every session (at start)."""
        self._failures = 0
        self._sender: SpanSender | None = None
        self._redactor: Redactor | None = None
        health.export_unhealthy_after = config.otlp.unhealthy_after

    def close(self) -> None:
        """Lets the exporter and its connections go, as the service stops."""
        if self._sender is not None:
            self._sender.close()

    def landed(self, sessions: set[str]) -> None:
        """A landing pass ended, having landed ``sessions`` (called on the event loop)."""
        if self._pending is not None:
            self._pending |= sessions
        self._wake.set()

    async def run(self) -> None:
        while True:
            await self._wake.wait()
            self._wake = anyio.Event()
            sessions, self._pending = self._pending, set()
            try:
                export = await anyio.to_thread.run_sync(
                    self._export, sessions, abandon_on_cancel=True
                )
            except ExportBusy as err:
                self.log.info("export_skipped", message=str(err))
                self._again(sessions)
                continue
            except Exception as err:  # a bug in one export must not stop the service
                self.log.error("export_crashed", error=repr(err), exc_info=err)
                self.health.export_done(None, failed=True)
                self._again(sessions)
                await self._back_off()
                continue
            tally = export.tally
            self._again(export.unfinished)
            self._report(tally)
            if tally.error is not None:
                await self._back_off()
            else:
                self._failures = 0

    def _again(self, sessions: set[str] | None) -> None:
        """Sessions to look at in the next export, landed or not."""
        if sessions is None or self._pending is None:
            self._pending = None
        else:
            self._pending |= sessions

    async def _back_off(self) -> None:
        """Waits before the next try: ``backoff``, doubled per failure up to ``backoff_cap``;
        a pass landing meanwhile only adds its sessions."""
        otlp = self.config.otlp
        delay = min(otlp.backoff * 2 ** min(self._failures, 30), otlp.backoff_cap)
        self._failures += 1
        await anyio.sleep(delay)
        self._wake.set()

    def _export(self, sessions: set[str] | None) -> _Done:
        if self._sender is None:  # one exporter for the service's life: it keeps connections
            self._sender = SpanSender(self.target)
        otlp = self.config.otlp
        try:
            if self._redactor is None:
                key_file = self.config.root / STATE_DIR / REDACT_KEY_FILE
                self._redactor = configured_redactor(self.config, key_file)
        except ValueError as err:  # nothing leaves raw: the export waits for a usable policy
            failed = ExportTally(error=f"the redaction policy cannot be used: {err}")
            return _Done(failed, set() if sessions is None else sessions)
        export = SpanExport(
            self.store,
            price_table(self.config.prices),
            self._sender,
            # Read afresh each time: `asz export otlp` may have sent spans in between.
            Cursors(self.store, self.target.traces_url),
            batch=otlp.batch_spans,
            quiet_seconds=otlp.quiet_seconds,
            taken=self.metrics.sent.inc,
            redactor=self._redactor,
            content_limit=otlp.content_limit if otlp.content else None,
        )
        with export_lock(self.config.root):
            chosen = self.store.sessions() if sessions is None else sorted(sessions)
            tally = export.run(chosen)
        return _Done(tally, export.unfinished)

    def _report(self, tally: ExportTally) -> None:
        self.metrics.record(tally, time.time())
        self.health.export_done(tally.as_dict(), failed=tally.error is not None)
        if tally.error is not None:
            self.log.warning("export", message=tally.error, **_said(tally))
        elif tally.spans_sent:
            self.log.info("export", message=f"sent {tally.spans_sent} spans", **_said(tally))
        for problem in tally.problems:
            self.log.error("export_problem", problem=problem)


@dataclass(frozen=True, slots=True)
class _Done:
    tally: ExportTally
    unfinished: set[str]
    """Sessions with spans left to send (``SpanExport.unfinished``)."""


def _said(tally: ExportTally) -> dict[str, object]:
    said = tally.as_dict()
    del said["problems"], said["error"]
    return said


# -- the cache-cost counters over OTLP ---------------------------------------------------------


class OtlpCacheMetrics:
    """The figures of the service's cache-cost counters (``asz_model_*``, ``asz_cache_*``),
    sent over OTLP every ``otlp.metrics_interval`` under OpenTelemetry names, with the same
    bounded labels (``asz.model.family``, ``asz.token.kind``, ``asz.cache.cause``)."""

    def __init__(self, target: Target, interval: float) -> None:
        from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
        from opentelemetry.sdk.metrics import MeterProvider
        from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

        from asz import __version__
        from asz.export.otel import SCHEMA_URL, quiet_sdk_logs, resource

        quiet_sdk_logs()
        exporter = OTLPMetricExporter(
            endpoint=target.metrics_url, headers=target.headers, timeout=target.timeout
        )
        reader = PeriodicExportingMetricReader(
            exporter, export_interval_millis=max(interval, 0.1) * 1000
        )
        self.provider: MeterProvider = MeterProvider(metric_readers=[reader], resource=resource())
        meter = self.provider.get_meter("asz", __version__, schema_url=SCHEMA_URL)
        self.calls = meter.create_counter("asz.model.calls", "{call}", "Model calls counted.")
        self.tokens = meter.create_counter(
            "asz.model.tokens", "{token}", "Tokens of the calls counted, by kind."
        )
        self.cost = meter.create_counter(
            "asz.model.cost", "{USD}", "What the calls counted cost at the price table."
        )
        self.breaks = meter.create_counter(
            "asz.cache.breaks", "{break}", "Cache breaks found from usage, by cause."
        )
        self.rewritten = meter.create_counter(
            "asz.cache.rewritten", "{token}", "Tokens the cache breaks re-wrote, by cause."
        )
        self.waste = meter.create_counter(
            "asz.cache.waste", "{USD}", "What the cache breaks wasted at the price table."
        )

    def add(self, counts: CacheCounts) -> None:
        """Adds every positive, finite delta, as the Prometheus counters do."""
        for family, calls in counts.calls.items():
            _add(self.calls, calls, {"asz.model.family": bounded_family(family)})
        for (family, kind), tokens in counts.tokens.items():
            labels = {"asz.model.family": bounded_family(family), "asz.token.kind": kind}
            _add(self.tokens, tokens, labels)
        for family, cost in counts.cost_usd.items():
            _add(self.cost, cost, {"asz.model.family": bounded_family(family)})
        for counter, by_cause in (
            (self.breaks, counts.breaks),
            (self.rewritten, counts.rewritten_tokens),
            (self.waste, counts.waste_usd),
        ):
            for (family, cause), delta in by_cause.items():
                labels = {
                    "asz.model.family": bounded_family(family),
                    "asz.cache.cause": bounded_cause(cause),
                }
                _add(counter, delta, labels)

    def close(self) -> None:
        """Sends what is counted, then stops."""
        self.provider.shutdown()


def _add(counter: OtelCounter, delta: float, labels: dict[str, str]) -> None:
    if delta > 0 and math.isfinite(delta):
        counter.add(delta, labels)
