"""Breaks found from usage alone: the invariant every call whose prefix was still cached keeps.

Within one stream (the main transcript, or one subagent's), a call reads from the cache at
least what the call before it read plus what that call wrote:
``expected_read = previous.cache_read + previous.cache_creation``. A call that reads less
re-wrote ``expected_read - cache_read`` tokens, and that shortfall is the size of the break.
This needs only the ``usage`` each call records, so it holds on transcripts with no bodies.

A stream's first call (a subagent's first call included) and the first call after a
compaction in its stream are starts, not breaks: their ``expected_read`` is None. So is a
call whose previous call's usage is unknown, or that follows a gap in its stream's landed
lines (a call between them may not have landed). Synthetic calls never reached the provider
and take no part: they are neither checked nor "the call before".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store behind them is not loaded by those who fold lines themselves
    from asz.view.calls import Call, Stream, Transcript

__all__ = ["Expectation", "StreamBreaks", "Usage", "expectations", "hit_ratio"]


@dataclass(frozen=True, slots=True)
class Usage:
    """The token counts of one call; None where its ``usage`` does not say."""

    input: int | None
    output: int | None
    cache_read: int | None
    cache_creation: int | None
    write_5m: int | None
    """``cache_creation.ephemeral_5m_input_tokens``, when the split is given."""
    write_1h: int | None

    @classmethod
    def of(cls, usage: Mapping[str, Any] | None) -> Usage | None:
        if usage is None:
            return None
        split = usage.get("cache_creation")
        split = split if isinstance(split, dict) else {}
        return cls(
            input=_count(usage.get("input_tokens")),
            output=_count(usage.get("output_tokens")),
            cache_read=_count(usage.get("cache_read_input_tokens")),
            cache_creation=_count(usage.get("cache_creation_input_tokens")),
            write_5m=_count(split.get("ephemeral_5m_input_tokens")),
            write_1h=_count(split.get("ephemeral_1h_input_tokens")),
        )


@dataclass(frozen=True, slots=True)
class Expectation:
    """What a call should have read, and what it re-wrote (0 when it read at least that);
    both None for a start or when the usage needed is unknown."""

    expected_read: int | None = None
    rewritten_tokens: int | None = None


class StreamBreaks:
    """The invariant along one stream, told its non-synthetic calls in order: the one place
    a break is found, whether the calls come from a landed session (:func:`expectations`) or
    from a transcript read as it grows (``asz statusline``)."""

    __slots__ = ("expected_read",)

    def __init__(self, expected_read: int | None = None) -> None:
        self.expected_read = expected_read
        """What the next call should read; None when the next call is a start."""

    def restart(self) -> None:
        """A compaction, or a gap in the lines, before the next call: it is a start."""
        self.expected_read = None

    def call(self, usage: Usage | None) -> Expectation:
        """What the invariant says of the next call, whose usage is ``usage``."""
        expected = self.expected_read
        read = usage.cache_read if usage is not None else None
        written = usage.cache_creation if usage is not None else None
        self.expected_read = read + written if read is not None and written is not None else None
        if expected is None:
            return Expectation()
        if read is None:
            return Expectation(expected_read=expected)
        return Expectation(expected_read=expected, rewritten_tokens=max(0, expected - read))


def hit_ratio(read: int, written: int, uncached: int) -> float | None:
    """The tokens read from the cache over every prompt token (read from it, written to it,
    neither), as every figure of asz says it; None without a prompt token."""
    whole = read + written + uncached
    return round(read / whole, 4) if whole else None


def expectations(
    transcript: Transcript, usage_of: Mapping[str, Usage | None]
) -> dict[str, Expectation]:
    """Message id -> what the invariant says of that call, for every non-synthetic call."""
    found: dict[str, Expectation] = {}
    for stream in transcript.streams.values():
        breaks = StreamBreaks()
        previous: Call | None = None
        for call in stream.calls:
            if call.synthetic:
                continue
            if previous is not None and _start_between(transcript, stream, previous, call):
                breaks.restart()
            found[call.message_id] = breaks.call(usage_of.get(call.message_id))
            previous = call
    return found


def _start_between(transcript: Transcript, stream: Stream, previous: Call, call: Call) -> bool:
    """A compaction, or a gap in the landed lines, between two calls of one stream."""
    gap = stream.gap_position
    if gap is not None and previous.position < gap <= call.position:
        return True
    return any(
        epoch.stream == stream.name and previous.position < epoch.position < call.position
        for epoch in transcript.epochs
    )


def _count(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None
