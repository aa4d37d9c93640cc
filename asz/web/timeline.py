"""A session's calls and compactions in the order they happened, each call with what the
cache report says of it: the rows of the session page and the bars of its chart.

The view document lists and numbers calls stream by stream; a person reads a session in time,
with a subagent's calls among the calls of the stream that started it and each compaction
where it happened. So the calls are numbered again here, in time (a subagent's first call
right after the call that started it, not after every call of the main stream), and every
page uses these numbers. Times are Claude Code's (UTC, one fixed form), so they order as text.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from asz.view.records import CacheReport, CacheRow, ViewCall, ViewDocument

__all__ = ["CallRow", "CompactionRow", "Timeline", "timeline"]


@dataclass(frozen=True, slots=True)
class CallRow:
    n: int
    """Its place among the session's calls in time, from 1."""
    message_id: str
    stream: str
    time: str | None
    model: str | None
    synthetic: bool
    input_tokens: int | None
    read: int | None
    written: int | None
    output_tokens: int | None
    stop_reason: str | None
    cause: str | None
    detail: str | None
    rewritten: int | None
    waste_usd: float | None
    cost_usd: float | None
    starts: tuple[str, ...] = ()
    """The subagent streams this call started."""

    @property
    def broke(self) -> bool:
        return (self.rewritten or 0) > 0


@dataclass(frozen=True, slots=True)
class CompactionRow:
    time: str | None
    stream: str
    trigger: str | None
    pre_tokens: int | None


@dataclass(slots=True)
class Timeline:
    items: list[CallRow | CompactionRow] = field(default_factory=list)
    calls: list[CallRow] = field(default_factory=list)

    def around(self, message_id: str) -> tuple[CallRow | None, CallRow, CallRow | None]:
        """The call ``message_id`` names with the calls before and after it in time
        (LookupError when the session has no such call)."""
        place = next(n for n, call in enumerate(self.calls) if call.message_id == message_id)
        before = self.calls[place - 1] if place else None
        after = self.calls[place + 1] if place + 1 < len(self.calls) else None
        return before, self.calls[place], after


def timeline(view: ViewDocument, report: CacheReport) -> Timeline:
    """The session's calls and compactions merged in time."""
    rows = {row["message_id"]: row for row in report["rows"] if row["message_id"]}
    started: dict[str, list[str]] = {}
    for stream in view["streams"]:
        by = stream.get("started_by")
        if by:
            started.setdefault(by["message_id"], []).append(stream["id"])
    calls = [
        _call(call, rows.get(call["message_id"]), started.get(call["message_id"], []))
        for call in view["calls"]
    ]
    compactions: list[CallRow | CompactionRow] = [
        CompactionRow(epoch["time"], epoch["stream"], epoch["trigger"], epoch["pre_tokens"])
        for epoch in view["epochs"]
    ]
    items = sorted([*calls, *compactions], key=_when)
    number = iter(range(1, len(calls) + 1))
    items = [replace(item, n=next(number)) if isinstance(item, CallRow) else item for item in items]
    return Timeline(items, [item for item in items if isinstance(item, CallRow)])


def _when(item: CallRow | CompactionRow) -> tuple[bool, str]:
    return (item.time is None, item.time or "")


def _call(call: ViewCall, row: CacheRow | None, starts: list[str]) -> CallRow:
    """A call as the timeline shows it: its cache report row's figures, or its response's
    usage for a call the report has no row of."""
    usage = call["usage"] or {}
    return CallRow(
        n=call["n"],
        message_id=call["message_id"],
        stream=call["stream"],
        time=call["time"],
        model=call["model"],
        synthetic=bool(call["synthetic"]),
        input_tokens=row["input_tokens"] if row else usage.get("input_tokens"),
        read=row["cache_read_input_tokens"] if row else usage.get("cache_read_input_tokens"),
        written=(
            row["cache_creation_input_tokens"] if row else usage.get("cache_creation_input_tokens")
        ),
        output_tokens=usage.get("output_tokens"),
        stop_reason=call["stop_reason"],
        cause=row["cause"] if row else None,
        detail=row["detail"] if row else None,
        rewritten=row["rewritten_tokens"] if row else None,
        waste_usd=row["waste_usd"] if row else None,
        cost_usd=row["cost_usd"] if row else None,
        starts=tuple(starts),
    )
