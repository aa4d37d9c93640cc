"""What the transcripts and usage name of each break of a landed session, stream by stream.

The cache report asks this for every call the usage invariant found a break at
(:mod:`.usage`); the bodies' comparison, when there is one, is stronger and is the report's
to weigh (:func:`asz.view.evidence.strongest`). Each stream is walked as ``asz statusline``
walks it as it grows (:class:`asz.view.evidence.StreamEvidence`): its previous call is its
previous non-synthetic one, as for the invariant.
"""

from __future__ import annotations

from collections.abc import Mapping

from asz.view.calls import Transcript, facts
from asz.view.evidence import Named, StreamEvidence
from asz.view.usage import Expectation, Usage

__all__ = ["named_by_lines"]


def named_by_lines(
    transcript: Transcript,
    usage_of: Mapping[str, Usage | None],
    expected: Mapping[str, Expectation],
) -> dict[str, list[Named]]:
    """Message id -> the causes the API's verdict on the line, the lines and usage name, for
    every call that re-wrote the cache; strongest source first."""
    found: dict[str, list[Named]] = {}
    for stream in transcript.streams.values():
        evidence = StreamEvidence()
        for call in stream.calls:
            if call.synthetic:
                continue
            usage = usage_of.get(call.message_id)
            expectation = expected.get(call.message_id, Expectation())
            said = facts(call)
            if expectation.rewritten_tokens:
                found[call.message_id] = evidence.named(said, usage, expectation.expected_read)
            evidence.advance(said, usage, start=expectation.expected_read is None)
    return found
