"""A session's model calls as span records: what the view and the cache report say of each call,
under the OpenTelemetry GenAI names (``docs/otel.md``), with ids fixed by the session and
message ids.

Nothing here is computed afresh: times, models, streams and bodies come from the view
document (``asz.view.document``, built without reading a body), tokens, stop reasons, causes
and money from the session's cache report (``asz.view.cache``). The records hold plain values
only, so building them needs no OpenTelemetry package and a test can read them as they are;
:mod:`.otel` turns them into the SDK's spans.

Ids are digests, never random: the trace id is the first 16 bytes of the SHA-256 of the
session id, a span id the first 8 of the SHA-256 of the session id and the span's key (the
message id of a call, the record id of a side request, the uuid of a compaction). A span sent
twice is the same span, and a subagent's call names its parent's span id without looking it up.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from asz.store import MAIN_STREAM
from asz.view.records import CacheReport, CacheRow, Epoch, ViewCall, ViewDocument
from asz.view.spend import NO_REQUEST
from asz.zones import IN_UTC

__all__ = [
    "BREAK_EVENT",
    "CHAT",
    "COMPACTION_AGENT",
    "PROVIDER",
    "AttributeValue",
    "Attributes",
    "SessionSpans",
    "SpanEvent",
    "SpanRecord",
    "session_spans",
    "span_id_of",
    "time_ns",
    "trace_id_of",
]

AttributeValue = str | bool | int | float | Sequence[str]
Attributes = dict[str, AttributeValue]

CHAT = "chat"
PROVIDER = "anthropic"
COMPACTION_AGENT = "acompact"
"""Claude Code's compaction agent writes its transcript as a stream named ``acompact-…``."""

MAIN, SUBAGENT, COMPACTION, SIDE = "main", "subagent", "compaction", "side"
"""``asz.call.kind``: a call of the main stream, of a subagent, of the compaction agent, or a
landed request that no transcript records (a title, a compaction's own request)."""

BREAK_EVENT = "asz.cache.break"


@dataclass(frozen=True, slots=True)
class SpanEvent:
    name: str
    time_ns: int
    attributes: Attributes


@dataclass(frozen=True, slots=True)
class SpanRecord:
    """One span as it will be sent; ``final`` once nothing that lands later can change it."""

    name: str
    trace_id: int
    span_id: int
    parent_id: int | None
    start_ns: int
    end_ns: int
    client: bool
    """A model call (kind CLIENT); else a compaction (kind INTERNAL)."""
    attributes: Attributes
    events: tuple[SpanEvent, ...] = ()
    final: bool = True

    @property
    def key(self) -> str:
        """What the export cursor records of it: its span id in hex."""
        return f"{self.span_id:016x}"


@dataclass(slots=True)
class SessionSpans:
    spans: list[SpanRecord] = field(default_factory=list)
    untimed: int = 0
    """Calls and side requests left out because nothing gives them a time."""


def trace_id_of(session: str) -> int:
    return int.from_bytes(hashlib.sha256(session.encode()).digest()[:16], "big") or 1


def span_id_of(session: str, key: str) -> int:
    digest = hashlib.sha256(f"{session}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") or 1


def time_ns(text: str | None) -> int | None:
    """An ISO time as Unix nanoseconds, read as every listing reads it (no offset: UTC);
    None when absent or not a time."""
    moment = IN_UTC.moment(text)
    if moment is None:
        return None
    whole = int(moment.timestamp())
    return whole * 1_000_000_000 + moment.microsecond * 1000


def session_spans(
    view: ViewDocument,
    report: CacheReport,
    *,
    quiet: bool,
) -> SessionSpans:
    """Every span of a session, from its view document and its cache report.

    ``quiet``: the session has landed nothing for a while, so what it holds now is final. While
    it is not, a call is final once a later call of its stream landed (its response and its
    request have landed by then), a subagent's call once its stream is linked to its parent's
    call, a compaction once its summary landed, and a side request never.
    """
    session = str(view["session"]["id"])
    builder = _Builder(session, view, report, quiet)
    return builder.build()


class _Builder:
    def __init__(self, session: str, view: ViewDocument, report: CacheReport, quiet: bool) -> None:
        self.session = session
        self.view = view
        self.quiet = quiet
        self.trace_id = trace_id_of(session)
        self.rows = {row["message_id"]: row for row in report["rows"] if row["message_id"]}
        self.side_rows = [
            (request_id, row)
            for row in report["rows"]
            if row["message_id"] is None and (request_id := row["request_id"])
        ]
        self.streams = {stream["id"]: stream for stream in view["streams"]}
        self.calls = [call for call in view["calls"] if not call["synthetic"]]
        self.call_of_body = {
            body["id"]: call for call in self.calls for body in call["provider_bodies"]
        }
        self.unjoined = {item["id"]: item for item in view["summary"]["unjoined"]}
        self.result = SessionSpans()

    def build(self) -> SessionSpans:
        last_in_stream: dict[str, str] = {}
        for call in self.calls:
            last_in_stream[call["stream"]] = call["message_id"]
        for call in self.calls:
            self._call(call, is_last=last_in_stream[call["stream"]] == call["message_id"])
        for epoch in self.view["epochs"]:
            self._compaction(epoch)
        for request_id, row in self.side_rows:
            self._side(request_id, row)
        return self.result

    def _common(self, kind: str, stream: str | None) -> Attributes:
        attributes: Attributes = {
            "gen_ai.operation.name": CHAT,
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.conversation.id": self.session,
            "asz.call.kind": kind,
        }
        if stream is not None:
            attributes["asz.stream"] = stream
        return attributes

    def _call(self, call: ViewCall, is_last: bool) -> None:
        start = time_ns(call["time"])
        if start is None:
            self.result.untimed += 1
            return
        end = max(time_ns(call["last_time"]) or start, start)
        stream = call["stream"]
        in_stream = self.streams.get(stream)
        started_by = in_stream["started_by"] if in_stream else None
        kind = _kind_of(stream)
        attributes = self._common(kind, stream)
        attributes["asz.call.n"] = call["n"]
        model = call["model"]
        if model:
            attributes["gen_ai.request.model"] = model
            attributes["gen_ai.response.model"] = model
        attributes["gen_ai.response.id"] = call["message_id"]
        if call["request_id"]:
            attributes["asz.provider.request_id"] = call["request_id"]
        version = call["version"]
        if version:
            attributes["asz.claude_code.version"] = version
        for body in call["provider_bodies"]:
            attributes[f"asz.{body['role']}.body_id"] = body["id"]
        row = self.rows.get(call["message_id"])
        events: tuple[SpanEvent, ...] = ()
        if row is not None:
            attributes.update(_row_attributes(row))
            events = _break_events(row, start)
        parent = (
            span_id_of(self.session, started_by["message_id"]) if started_by is not None else None
        )
        final = self.quiet or (not is_last and (kind != SUBAGENT or started_by is not None))
        self.result.spans.append(
            SpanRecord(
                name=f"{CHAT} {model}" if model else CHAT,
                trace_id=self.trace_id,
                span_id=span_id_of(self.session, call["message_id"]),
                parent_id=parent,
                start_ns=start,
                end_ns=end,
                client=True,
                attributes=attributes,
                events=events,
                final=final,
            )
        )

    def _compaction(self, epoch: Epoch) -> None:
        start = time_ns(epoch["time"])
        if start is None:
            self.result.untimed += 1
            return
        where = epoch["uuid"] or f"{epoch['stream']}@{epoch['time']}"
        key = f"compaction:{where}"
        attributes: Attributes = {
            "gen_ai.conversation.id": self.session,
            "asz.stream": epoch["stream"],
        }
        if epoch["trigger"]:
            attributes["asz.compaction.trigger"] = epoch["trigger"]
        if epoch["pre_tokens"] is not None:
            attributes["asz.compaction.pre_tokens"] = epoch["pre_tokens"]
        summary = epoch["summary"]
        if summary is not None:
            attributes["asz.compaction.summary_chars"] = len(summary)
            attributes["asz.compaction.summary_bytes"] = len(summary.encode())
        self.result.spans.append(
            SpanRecord(
                name=COMPACTION,
                trace_id=self.trace_id,
                span_id=span_id_of(self.session, key),
                parent_id=None,
                start_ns=start,
                end_ns=start,
                client=False,
                attributes=attributes,
                final=self.quiet or summary is not None,
            )
        )

    def _side(self, request_id: str, row: CacheRow) -> None:
        """A landed request no transcript records, placed at the end of the call its chain
        names as the one before it: nothing else in the root says when it was sent."""
        before = self.call_of_body.get(row["previous"]) if row["previous"] else None
        start = time_ns(before["last_time"] or before["time"]) if before else None
        if start is None:
            self.result.untimed += 1
            return
        attributes = self._common(SIDE, None)
        attributes["asz.request.body_id"] = request_id
        unjoined = self.unjoined.get(request_id)
        if unjoined is not None:
            attributes["asz.side.reason"] = unjoined["reason"]
        attributes.update(_row_attributes(row))
        self.result.spans.append(
            SpanRecord(
                name=CHAT,
                trace_id=self.trace_id,
                span_id=span_id_of(self.session, request_id),
                parent_id=None,
                start_ns=start,
                end_ns=start,
                client=True,
                attributes=attributes,
                final=self.quiet,
            )
        )


def _kind_of(stream: str) -> str:
    if stream == MAIN_STREAM:
        return MAIN
    return COMPACTION if stream.startswith(COMPACTION_AGENT) else SUBAGENT


_ROW_NAMES = (
    ("cache_read_input_tokens", "gen_ai.usage.cache_read.input_tokens"),
    ("cache_creation_input_tokens", "gen_ai.usage.cache_creation.input_tokens"),
    ("output_tokens", "gen_ai.usage.output_tokens"),
    ("cache_write_5m_input_tokens", "asz.cache.write_5m.input_tokens"),
    ("cache_write_1h_input_tokens", "asz.cache.write_1h.input_tokens"),
    ("cause", "asz.cache.cause"),
    ("detail", "asz.cache.detail"),
    ("reported_miss_reason", "asz.cache.provider_miss_reason"),
    ("expected_read", "asz.cache.expected_read_tokens"),
    ("rewritten_tokens", "asz.cache.rewritten_tokens"),
    ("cost_usd", "asz.cost_usd"),
    ("waste_usd", "asz.waste_usd"),
)
"""Cache report row fields and the span attributes they become (when not null)."""


def _row_attributes(row: CacheRow) -> Attributes:
    attributes: Attributes = {}
    if row["stop_reason"]:
        attributes["gen_ai.response.finish_reasons"] = [str(row["stop_reason"])]
    fields: Mapping[str, object] = row
    for field_name, name in _ROW_NAMES:
        value = fields.get(field_name)
        if value is None:
            continue
        if isinstance(value, int | float):  # bool among them
            attributes[name] = float(value) if field_name in ("cost_usd", "waste_usd") else value
        else:
            attributes[name] = str(value)
    if row["input_tokens"] is not None:
        # The conventions count every input token, however the cache served it; Anthropic's
        # input_tokens leaves the cached ones out.
        attributes["gen_ai.usage.input_tokens"] = (
            row["input_tokens"]
            + (row["cache_read_input_tokens"] or 0)
            + (row["cache_creation_input_tokens"] or 0)
        )
    if row["also"]:
        attributes["asz.cache.also"] = [str(cause) for cause in row["also"]]
    return attributes


def _break_events(row: CacheRow, at: int) -> tuple[SpanEvent, ...]:
    """A break as an event of its call, so a backend can alert on the event alone."""
    rewritten = row["rewritten_tokens"]
    if not rewritten:
        return ()
    attributes: Attributes = {
        "asz.cache.cause": str(row["cause"] or NO_REQUEST),
        "asz.cache.rewritten_tokens": rewritten,
    }
    if row["detail"]:
        attributes["asz.cache.detail"] = str(row["detail"])
    if row["waste_usd"] is not None:
        attributes["asz.waste_usd"] = float(row["waste_usd"])
    return (SpanEvent(BREAK_EVENT, at, attributes),)
