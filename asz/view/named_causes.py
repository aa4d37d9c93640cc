"""What the transcripts and usage name of each break of a landed session, stream by stream.

The cache report asks this for every call the usage invariant found a break at
(:mod:`.usage`); the bodies' comparison, when there is one, is stronger and is the report's
to weigh (:func:`asz.view.evidence.strongest`). A stream's previous call is its previous
non-synthetic one, as for the invariant; its prefix is what its latest start read (the tools
and system cached before any message of it), and the lifetime of what is cached is that of
its latest write.
"""

from __future__ import annotations

from collections.abc import Mapping

from asz.view.calls import Call, Transcript, seen
from asz.view.causes import seconds_between
from asz.view.evidence import Named, api_cause, lifetime, transcript_causes, usage_cause
from asz.view.usage import Expectation, Usage


def named_by_lines(
    transcript: Transcript,
    usage_of: Mapping[str, Usage | None],
    expected: Mapping[str, Expectation],
) -> dict[str, list[Named]]:
    """Message id -> the causes the API's verdict on the line, the lines and usage name, for
    every call that re-wrote the cache; strongest source first."""
    found: dict[str, list[Named]] = {}
    for stream in transcript.streams.values():
        previous: Call | None = None
        prefix: int | None = None
        ttl: float | None = None
        for call in stream.calls:
            if call.synthetic:
                continue
            usage = usage_of.get(call.message_id)
            expectation = expected.get(call.message_id, Expectation())
            read = usage.cache_read if usage else None
            if expectation.expected_read is None and read:
                prefix = read
            if previous is not None and expectation.rewritten_tokens:
                found[call.message_id] = _named(
                    previous, call, usage_of, expectation, prefix=prefix, ttl=ttl
                )
            ttl = lifetime(usage, ttl)
            previous = call
    return found


def _named(
    previous: Call,
    call: Call,
    usage_of: Mapping[str, Usage | None],
    expectation: Expectation,
    *,
    prefix: int | None,
    ttl: float | None,
) -> list[Named]:
    named = []
    verdict = api_cause(call.on_lines.get("verdict"), call.on_lines.get("missed"))
    if verdict is not None:
        named.append(verdict)
    named += transcript_causes(
        seen(previous),
        seen(call),
        speeds=(_speed(previous), _speed(call)),
        gap_seconds=seconds_between(previous.last_time, call.time),
        ttl=ttl,
    )
    usage = usage_of.get(call.message_id)
    located = usage_cause(usage.cache_read if usage else None, expectation.expected_read, prefix)
    if located is not None:
        named.append(located)
    return named


def _speed(call: Call) -> object:
    return (call.usage or {}).get("speed")
