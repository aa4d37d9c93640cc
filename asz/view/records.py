"""The cache report and the view document as typed records, from where they are built to where
they are rendered.

Both are JSON documents (``asz cache --json``, ``asz view --json``, the kept ``cache.json``),
so they stay dicts at run time, and ``TypedDict`` says which keys each holds and of what type:
a renderer, an exporter or the web view that reads a key the builder does not write, or reads
it as the wrong type, fails ``mypy --strict`` rather than a user's page. docs/view.md says
what each field means.
"""

from __future__ import annotations

from typing import Any, NotRequired, TypedDict

from asz.view.usage import Usage

__all__ = [
    "ByCause",
    "CacheReport",
    "CacheRow",
    "CacheTotals",
    "CallFacts",
    "Comparison",
    "Epoch",
    "RowFacts",
    "ViewBody",
    "ViewCall",
    "ViewCounts",
    "ViewDocument",
    "ViewSession",
    "ViewStart",
    "ViewStream",
    "ViewSummary",
    "ViewUnjoined",
    "Weighed",
    "WriteSplit",
]


class Comparison(TypedDict):
    """What the bodies say of a request against the one before it in its chain."""

    previous: str | None
    cause: str | None
    detail: str | None
    also: list[str]


class Weighed(TypedDict):
    """What the evidence makes of a row: where its cause came from, and for a break that
    another source names better, that cause, its detail and what else it names."""

    cause_from: str | None
    evidence: dict[str, str]
    cause: NotRequired[str | None]
    detail: NotRequired[str | None]
    also: NotRequired[list[str]]


class WriteSplit(TypedDict):
    """The cache writes by lifetime, as the cost counts them."""

    cache_write_5m_input_tokens: int | None
    cache_write_1h_input_tokens: int | None


class CacheRow(TypedDict):
    """One call, or one landed request joined to no call (``message_id`` null)."""

    request_id: str | None
    message_id: str | None
    stream: str | None
    time: str | None
    previous: str | None
    cause: str | None
    detail: str | None
    also: list[str]
    cause_from: str | None
    evidence: dict[str, str]
    input_tokens: int | None
    cache_read_input_tokens: int | None
    cache_creation_input_tokens: int | None
    cache_write_5m_input_tokens: int | None
    cache_write_1h_input_tokens: int | None
    output_tokens: int | None
    stop_reason: str | None
    reported_miss_reason: Any
    expected_read: int | None
    rewritten_tokens: int | None
    cost_usd: float | None
    waste_usd: float | None
    model: NotRequired[str | None]
    """Only while the report is built: the spend by family reads it, then it is dropped."""
    usage: NotRequired[Usage | None]
    """As ``model``."""


class ByCause(TypedDict):
    requests: int
    cache_creation_input_tokens: int


class CacheTotals(TypedDict):
    """The session's sums over its rows."""

    requests: int
    with_usage: int
    input_tokens: int
    cache_read_input_tokens: int
    cache_creation_input_tokens: int
    hit_ratio: float | None
    by_cause: dict[str, ByCause]
    rewritten_tokens: int
    breaks: int
    cost_usd: float | None
    waste_usd: float | None
    unpriced_models: list[str]
    reported: int
    agreed: int
    breaks_by_evidence: dict[str, int]
    api_agreement: dict[str, dict[str, int]]
    by_family: NotRequired[dict[str, dict[str, Any]]]


class CacheReport(TypedDict):
    """A session's cache report (``asz cache SESSION --json``)."""

    session: str
    rows: list[CacheRow]
    totals: CacheTotals
    empty_because: str | None
    problems: list[str]


class RowFacts(TypedDict):
    """What the analytics tables take of a cache report row that the report does not say
    (``asz cache`` prints no such thing), as the view document says it."""

    call: int | None
    """The call's number in the session, as ``asz view`` numbers it (synthetic calls
    counted); null for a landed request joined to no call."""
    model: str | None
    version: str | None
    """The Claude Code version its lines name."""
    response_id: str | None
    """The joined response's record id."""
    placed: str | None
    """A landed request joined to no call: the end of the call before it in its chain (the
    time ``asz export otlp`` places it at); null for a call, whose time is the row's."""


class CallFacts(TypedDict):
    """Kept beside a session's cache report (``asz.view.kept``): what writing the session's
    analytics rows needs besides the report, so that it reads no transcript."""

    last_time: str | None
    """The session's last transcript time (the view's ``session.last_time``)."""
    rows: list[RowFacts]
    """One per report row, in the report's order."""


class ViewCounts(TypedDict):
    lines: int
    unreadable_lines: int
    streams: int
    calls: int
    synthetic_calls: int
    epochs: int
    requests: int
    responses: int


class ViewSession(TypedDict):
    id: str
    directories: dict[str, list[str]]
    first_time: str | None
    last_time: str | None
    models: list[str]
    counts: ViewCounts


class ViewStart(TypedDict):
    """The call, and the tool use in it, that started a subagent's stream."""

    stream: str
    message_id: str
    tool_use_id: str
    prompt_id: str | None


class ViewStream(TypedDict):
    id: str
    sources: list[str]
    lines: int
    calls: int
    first_time: str | None
    last_time: str | None
    gap: str | None
    started_by: ViewStart | None


class ViewBody(TypedDict):
    role: str
    id: str
    ref: dict[str, Any]
    """Where it landed: ``file``, ``seq`` and ``row``."""


class ViewCall(TypedDict):
    n: int
    stream: str
    message_id: str
    request_id: str | None
    prompt_id: str | None
    model: str | None
    synthetic: bool
    version: str | None
    time: str | None
    last_time: str | None
    fragments: int
    usage: dict[str, Any] | None
    stop_reason: str | None
    provider_bodies: list[ViewBody]


class Epoch(TypedDict):
    """A compaction: where the conversation the model sees starts again."""

    type: str
    stream: str
    uuid: str | None
    time: str | None
    trigger: str | None
    pre_tokens: int | None
    summary: str | None


class ViewUnjoined(TypedDict):
    id: str
    role: str
    reason: str
    detail: str | None


class ViewSummary(TypedDict):
    calls: int
    bodies_landed: int
    requests_joined: int
    requests_joined_through_index: int
    responses_joined: int
    calls_with_both: int
    unjoined: list[ViewUnjoined]
    unjoined_by_reason: dict[str, int]


class ViewDocument(TypedDict):
    """A session's view document (``asz view SESSION --json``)."""

    schema: str
    session: ViewSession
    streams: list[ViewStream]
    calls: list[ViewCall]
    epochs: list[Epoch]
    summary: ViewSummary
    problems: list[str]
