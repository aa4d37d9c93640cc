"""One export: the spans of some sessions that the endpoint has not taken yet, in batches.

For each session the view document and the cache report (the kept one while it holds) are
read, made into span records (:mod:`.spans`), and the final ones the session's cursor does not
list are queued. A batch goes out once ``batch`` spans are queued, and after it is taken the
cursor of every session in it is written; so a crash or a stop sends at most one batch again.
A batch the endpoint does not take ends the export: the rest waits for the next one.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from asz.export.content import content_attributes
from asz.export.cursor import Cursors
from asz.export.spans import SpanRecord, session_spans, time_ns
from asz.redact import Redactor, ScannerFailed
from asz.store import Session, Store, StoreError, UnknownSession
from asz.view.document import build_view
from asz.view.kept import session_report
from asz.view.prices import PriceTable

__all__ = ["ExportFailed", "ExportTally", "Sender", "SpanExport"]


class ExportFailed(Exception):
    """The endpoint did not take a batch (after the exporter's own retries)."""


class Sender(Protocol):
    def send(self, records: list[SpanRecord]) -> None: ...


@dataclass(slots=True)
class ExportTally:
    """What one export sent, left and met."""

    sessions: int = 0
    """Sessions read; those whose spans were all sent before and that landed nothing since
    are ``sessions_unchanged`` instead."""
    sessions_unchanged: int = 0
    spans_sent: int = 0
    spans_already_sent: int = 0
    spans_waiting: int = 0
    """Spans not final yet (their session is still landing), or left by a failed batch."""
    spans_failed: int = 0
    """Spans of the batch the endpoint did not take."""
    untimed: int = 0
    content_withheld: int = 0
    """Spans sent without the content asked for: their request did not read back, or the
    redaction policy could not pass it."""
    batches: int = 0
    seconds: float = 0.0
    error: str | None = None
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "sessions_unchanged": self.sessions_unchanged,
            "spans_sent": self.spans_sent,
            "spans_already_sent": self.spans_already_sent,
            "spans_waiting": self.spans_waiting,
            "spans_failed": self.spans_failed,
            "untimed": self.untimed,
            "content_withheld": self.content_withheld,
            "batches": self.batches,
            "seconds": round(self.seconds, 3),
            "error": self.error,
            "problems": self.problems,
        }


@dataclass(slots=True)
class _Queued:
    session: str
    record: SpanRecord


@dataclass(slots=True)
class _Progress:
    """A session's part in this export: its landed mark, and how many of its spans are
    queued and waiting."""

    mark: str | None
    """None when reading the session met problems: it is read again next time."""
    queued: int = 0
    waiting: int = 0


class SpanExport:
    """Exports sessions of ``store`` through ``sender`` (None: a dry run, which sends nothing
    and writes no cursor, and lists what it would send in ``planned``)."""

    def __init__(
        self,
        store: Store,
        prices: PriceTable,
        sender: Sender | None,
        cursors: Cursors | None,
        *,
        batch: int,
        quiet_seconds: float,
        clock: Callable[[], float] = time.time,
        taken: Callable[[int], None] | None = None,
        redactor: Redactor | None = None,
        content_limit: int | None = None,
    ) -> None:
        self.store = store
        self.prices = prices
        self.sender = sender
        self.cursors = cursors
        self.batch = max(1, batch)
        self.quiet_seconds = quiet_seconds
        self.clock = clock
        self.taken = taken
        """Told how many spans each batch the endpoint took held, as it takes it."""
        self.redactor = redactor
        """The policy every text a span carries passes (a cause's detail; content): None
        only where the policy is off."""
        self.content_limit = content_limit
        """With a redactor: spans carry what each call sent, each attribute at most this many
        bytes (``asz.export.content``); None: figures only."""
        self.planned: list[SpanRecord] = []
        self.unfinished: set[str] = set()
        """Sessions with spans not sent yet: waiting to be final, or left by a failed batch.
        The service exports them again after a later pass, landed or not."""
        self._progress: dict[str, _Progress] = {}

    def run(self, sessions: Iterable[str]) -> ExportTally:
        tally = ExportTally()
        started = time.perf_counter()
        queue: list[_Queued] = []
        ahead = iter(sessions)
        try:
            for session_id in ahead:
                queue += self._session(session_id, tally)
                while len(queue) >= self.batch and tally.error is None:
                    queue = self._send(queue, tally)
                if tally.error is not None:
                    # The sessions a failed batch kept it from are as unfinished as its own.
                    self.unfinished.update(ahead)
                    break
            while queue and tally.error is None:
                queue = self._send(queue, tally)
            tally.spans_waiting += len(queue)
            self.unfinished.update(item.session for item in queue)
        finally:
            tally.seconds = time.perf_counter() - started
        return tally

    def _session(self, session_id: str, tally: ExportTally) -> list[_Queued]:
        try:
            session = self.store.session(session_id)
        except UnknownSession:
            return []
        mark = session.landed_mark()
        if self.cursors is not None and self.cursors.done_at(session_id) == mark:
            tally.sessions_unchanged += 1
            return []
        # The report holds every figure of a call, its stop reason too: no body is read.
        view = build_view(session, responses=False)
        report = session_report(session, self.prices)
        problems = list(dict.fromkeys(view["problems"] + report["problems"]))
        tally.problems += problems
        tally.sessions += 1
        last = time_ns(view["session"]["last_time"])
        quiet = last is None or self.clock() - last / 1e9 >= self.quiet_seconds
        found = session_spans(view, report, quiet=quiet)
        tally.untimed += found.untimed
        sent = self.cursors.sent(session_id) if self.cursors is not None else set()
        progress = self._progress[session_id] = _Progress(None if problems else mark)
        queued = []
        for record in found.spans:
            if record.key in sent:
                tally.spans_already_sent += 1
            elif not record.final:
                progress.waiting += 1
            else:
                if self.redactor is not None:
                    self._redacted(session, record, tally)
                queued.append(_Queued(session_id, record))
        progress.queued = len(queued)
        tally.spans_waiting += progress.waiting
        if progress.waiting:
            self.unfinished.add(session_id)
        elif (
            not queued
            and self.cursors is not None
            and progress.mark is not None
            and self.cursors.done_at(session_id) != mark
        ):
            self.cursors.add(session_id, (), done_at=mark)
        return queued

    def _redacted(self, session: Session, record: SpanRecord, tally: ExportTally) -> None:
        """The span's text through the policy and, when asked for, its call's content. A
        body that cannot be read or redacted leaves the span without content (counted),
        never with it raw."""
        assert self.redactor is not None
        attributes = record.attributes
        detail = attributes.get("asz.cache.detail")
        if isinstance(detail, str):
            attributes["asz.cache.detail"] = self.redactor.text(detail)
        body_id = attributes.get("asz.request.body_id")
        if self.content_limit is None or not isinstance(body_id, str):
            return
        try:
            attributes.update(
                content_attributes(session.body(body_id), self.redactor, self.content_limit)
            )
        except (StoreError, ScannerFailed):
            tally.content_withheld += 1

    def _send(self, queue: list[_Queued], tally: ExportTally) -> list[_Queued]:
        """Sends the first batch of ``queue``; returns what is left of it."""
        batch, rest = queue[: self.batch], queue[self.batch :]
        records = [item.record for item in batch]
        if self.sender is None:
            self.planned += records
        else:
            try:
                self.sender.send(records)
            except ExportFailed as err:
                tally.error = str(err)
                tally.spans_failed += len(batch)
                self.unfinished.update(item.session for item in batch)
                return rest
            if self.cursors is not None:
                self._record(batch)
            if self.taken is not None:
                self.taken(len(batch))
        tally.batches += 1
        tally.spans_sent += len(batch)
        return rest

    def _record(self, batch: list[_Queued]) -> None:
        """Writes the cursor of every session in a batch the endpoint took; a session none of
        whose spans is left is marked done at the landed mark its spans were built from."""
        assert self.cursors is not None
        by_session: dict[str, list[str]] = {}
        for item in batch:
            by_session.setdefault(item.session, []).append(item.record.key)
        for session_id, keys in by_session.items():
            progress = self._progress[session_id]
            progress.queued -= len(keys)
            done = progress.queued == 0 and progress.waiting == 0
            self.cursors.add(session_id, keys, done_at=progress.mark if done else None)
