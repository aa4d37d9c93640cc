"""The service's Prometheus metrics, in a registry of its own.

A registry of its own keeps the exposition to what asz means (no interpreter or process
collectors that differ between platforms), and labels never name a session or a path: the
number of series stays fixed however many sessions a root holds.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from asz.redact import RULE_NAMES
from asz.view.families import CACHE_CAUSES, FAMILIES, TOKEN_KINDS

if TYPE_CHECKING:
    from collections.abc import Mapping

    from asz.archive.push_tally import PushTally
    from asz.tally import Tally
    from asz.view.families import CacheCounts

__all__ = [
    "ERROR_KINDS",
    "ArchiveMetrics",
    "CacheCostMetrics",
    "ServiceMetrics",
    "bounded_cause",
    "bounded_family",
]

ERROR_KINDS = ("pass", "crash", "watch", "notify")
"""``pass``: an error a pass reported; ``crash``: a pass that raised; ``watch``: the watcher
lost events or a watch; ``notify``: the service manager could not be told."""

_PASS_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


class ServiceMetrics:
    """What the service counts; every pass's counts feed it through :meth:`record_pass`."""

    def __init__(self, version: str) -> None:
        self.registry = CollectorRegistry(auto_describe=True)

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, registry=self.registry)

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, registry=self.registry)

        self.bodies_waiting = gauge(
            "asz_bodies_waiting", "Bodies no session claims yet, as of the last pass."
        )
        self.bodies_settling = gauge(
            "asz_bodies_settling",
            "Bodies still being written (not JSON yet, written less than unreadable_after ago), "
            "as of the last pass.",
        )
        self.bodies_unreadable = gauge(
            "asz_bodies_unreadable",
            "Bodies that are not one JSON value long after their last write, as of the last pass.",
        )
        self.bodies_excluded = gauge(
            "asz_bodies_excluded", "Bodies whose session the session filter excludes."
        )
        self.conflicts = gauge(
            "asz_conflicts", "Sources changed after they landed; every pass fails while any stay."
        )
        self.bodies_landed = counter("asz_bodies_landed_total", "Bodies landed.")
        self.lines_landed = counter("asz_transcript_lines_landed_total", "Transcript lines landed.")
        self.source_bytes = counter(
            "asz_source_bytes_total",
            "Bytes of source files that landed, as Claude Code wrote them.",
        )
        self.landed_bytes = counter("asz_landed_bytes_total", "Bytes of landed files written.")
        self.rescans = counter(
            "asz_rescans_total", "Passes made for a rescan rather than for a watched change."
        )
        self.watch_overflows = counter(
            "asz_watch_overflows_total",
            "Times the file watcher dropped events and a rescan made up for it.",
        )
        self.errors = Counter(
            "asz_errors_total", "Errors, by kind.", ["kind"], registry=self.registry
        )
        for kind in ERROR_KINDS:
            self.errors.labels(kind)
        self.pass_duration = Histogram(
            "asz_pass_duration_seconds",
            "Wall time of one pass.",
            buckets=_PASS_BUCKETS,
            registry=self.registry,
        )
        self.last_pass = gauge(
            "asz_last_pass_timestamp_seconds",
            "Unix time the last pass finished; 0 before the first.",
        )
        Gauge(
            "asz_build_info", "The running asz version.", ["version"], registry=self.registry
        ).labels(version).set(1)
        self.cache_cost = CacheCostMetrics(self.registry)
        self.archive = ArchiveMetrics(self.registry)

    def record_pass(self, counts: Tally, finished_at: float) -> None:
        self.bodies_waiting.set(counts.bodies_waiting)
        self.bodies_settling.set(counts.bodies_settling)
        self.bodies_unreadable.set(counts.bodies_unreadable)
        self.bodies_excluded.set(counts.bodies_excluded)
        self.conflicts.set(counts.conflicts)
        self.bodies_landed.inc(counts.bodies_landed)
        self.lines_landed.inc(counts.transcript_lines_landed)
        self.source_bytes.inc(counts.source_bytes)
        self.landed_bytes.inc(counts.landed_bytes)
        if counts.errors:
            self.errors.labels("pass").inc(len(counts.errors))
        self.pass_duration.observe(counts.seconds)
        self.last_pass.set(finished_at)

    def record_error(self, kind: str) -> None:
        if kind not in ERROR_KINDS:
            raise ValueError(f"unknown error kind {kind!r}")
        self.errors.labels(kind).inc()

    def add_cache_counts(self, counts: CacheCounts) -> None:
        """Adds one batch of cache-cost deltas: see :meth:`CacheCostMetrics.add`."""
        self.cache_cost.add(counts)

    def exposition(self) -> bytes:
        """The text format Prometheus scrapes."""
        return generate_latest(self.registry)


# -- team archive ------------------------------------------------------------------------------


class ArchiveMetrics:
    """What the pushes to the team archive did and left (``asz.archive.push``); all zero while
    no ``[archive] url`` is set."""

    def __init__(self, registry: CollectorRegistry) -> None:
        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, registry=registry)

        def counter(name: str, doc: str) -> Counter:
            return Counter(name, doc, registry=registry)

        self.waiting_files = gauge(
            "asz_archive_waiting_files",
            "Landed files not in the archive yet, as the push in flight or the last one says.",
        )
        self.waiting_bytes = gauge(
            "asz_archive_waiting_bytes", "Bytes of the landed files not in the archive yet."
        )
        self.conflicts = gauge(
            "asz_archive_conflicts",
            "Objects holding other bytes than this root's, and sessions another root holds, as "
            "of the last push; every push is incomplete while any stay.",
        )
        self.pushed_files = counter("asz_archive_pushed_files_total", "Objects pushed.")
        self.pushed_bytes = counter("asz_archive_pushed_bytes_total", "Bytes of objects pushed.")
        self.errors = counter(
            "asz_archive_push_errors_total",
            "Pushes that failed, whole or in part (after their retries).",
        )
        self.retries = counter(
            "asz_archive_retries_total",
            "Requests to the archive tried again (resets, 5xx, throttling).",
        )
        self.last_success = gauge(
            "asz_archive_last_push_success_timestamp_seconds",
            "Unix time the last push without an error finished; 0 before the first.",
        )
        self.redactions = Counter(
            "asz_redactions_total",
            "Values replaced by a marker in the files pushed, by the rule that found them "
            "(labels name rules, never a value).",
            ["rule"],
            registry=registry,
        )
        for rule in RULE_NAMES:
            self.redactions.labels(rule)
        self.redaction_failures = counter(
            "asz_redaction_failures_total",
            "Landed files whose redaction failed: neither they nor the rest of their session "
            "went, never raw.",
        )
        self.other_policy = gauge(
            "asz_archive_other_policy_files",
            "Files in the archive redacted under another policy (or raw), as of the last push; "
            "their sessions get nothing more until pushed again under this one.",
        )

    def waiting(self, files: int, size: int) -> None:
        """A push begins with this much to go (``asz.archive.push.Progress``)."""
        self.waiting_files.set(files)
        self.waiting_bytes.set(size)

    def pushed(self, size: int, created: bool) -> None:
        """One file went: counted as it goes, so a long push shows its progress."""
        self.waiting_files.dec()
        self.waiting_bytes.dec(size)
        if created:
            self.pushed_files.inc()
            self.pushed_bytes.inc(size)

    def record(self, tally: PushTally, finished_at: float) -> None:
        """A push ended (its objects are counted already, by ``pushed``)."""
        self.waiting_files.set(tally.waiting_files)
        self.waiting_bytes.set(tally.waiting_bytes)
        self.conflicts.set(len(tally.conflicts) + len(tally.held_elsewhere))
        self.retries.inc(tally.retries)
        for rule, n in tally.redactions.items():
            if rule in RULE_NAMES:  # a fixed set of series, whatever a redactor says
                self.redactions.labels(rule).inc(n)
        self.redaction_failures.inc(len(tally.redaction_failed))
        self.other_policy.set(len(tally.other_policy))
        if tally.errors or tally.stopped or tally.redaction_failed:
            self.errors.inc()
        else:
            self.last_success.set(finished_at)


# -- cache cost --------------------------------------------------------------------------------


class CacheCostMetrics:
    """What the calls that land cost, and what their cache breaks wasted.

    Labelled by a model's family and a break's cause only (both bounded, see
    :mod:`asz.view.families`), never by a session or a model id. No series exists before its
    first count, but every metric's HELP and TYPE lines are in the exposition from the start.
    """

    def __init__(self, registry: CollectorRegistry) -> None:
        def counter(name: str, doc: str, labels: tuple[str, ...]) -> Counter:
            return Counter(name, doc, labels, registry=registry)

        self.calls = counter(
            "asz_model_calls_total", "Model calls counted, by family.", ("family",)
        )
        self.tokens = counter(
            "asz_model_tokens_total",
            "Tokens of the calls counted, by family and kind (input, output, cache_read, "
            "cache_write_5m, cache_write_1h).",
            ("family", "kind"),
        )
        self.cost = counter(
            "asz_model_cost_usd_total",
            "What the calls counted cost at the price table, in US dollars, by family.",
            ("family",),
        )
        self.breaks = counter(
            "asz_cache_breaks_total",
            "Cache breaks found from usage (calls that re-wrote cached tokens), by family and "
            "cause.",
            ("family", "cause"),
        )
        self.rewritten = counter(
            "asz_cache_rewritten_tokens_total",
            "Tokens the cache breaks re-wrote, by family and cause.",
            ("family", "cause"),
        )
        self.waste = counter(
            "asz_cache_waste_usd_total",
            "What the cache breaks wasted at the price table, in US dollars, by family and cause.",
            ("family", "cause"),
        )

    def add(self, counts: CacheCounts) -> None:
        """Adds every positive, finite delta of ``counts``; others are ignored, since a
        counter never goes down. A family not in ``FAMILIES`` and a cause not in
        ``CACHE_CAUSES`` are counted as ``other``; a token kind not in ``TOKEN_KINDS`` is
        refused (ValueError) before anything is added."""
        for _family_name, kind in counts.tokens:
            if kind not in TOKEN_KINDS:
                raise ValueError(f"unknown token kind {kind!r}")
        for family, calls in counts.calls.items():
            _inc(self.calls, calls, bounded_family(family))
        for (family, kind), tokens in counts.tokens.items():
            _inc(self.tokens, tokens, bounded_family(family), kind)
        for family, cost in counts.cost_usd.items():
            _inc(self.cost, cost, bounded_family(family))
        by_cause: Mapping[tuple[str, str], float]
        for target, by_cause in (
            (self.breaks, counts.breaks),
            (self.rewritten, counts.rewritten_tokens),
            (self.waste, counts.waste_usd),
        ):
            for (family, cause), delta in by_cause.items():
                _inc(target, delta, bounded_family(family), bounded_cause(cause))


def bounded_family(family: str) -> str:
    """The family as a label: one of ``FAMILIES`` (any other is ``other``); the OTLP
    metrics (``asz.daemon.otlp``) label by the same."""
    return family if family in FAMILIES else "other"


def bounded_cause(cause: str) -> str:
    return cause if cause in CACHE_CAUSES else "other"


def _inc(counter: Counter, delta: float, *labels: str) -> None:
    if delta > 0 and math.isfinite(delta):
        counter.labels(*labels).inc(delta)
