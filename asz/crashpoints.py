"""Named crash points: the places in the landing path where a power cut matters most.

A landing step is safe only if a crash between any two of its writes loses nothing and lands
nothing twice. Killing a process at a random moment rarely hits the narrow gap between two
writes, so each gap has a name and ``ASZ_CRASH_AT=<name>[:<n>]`` ends the process there, at
once and without any clean-up (as a power cut would), the ``n``-th time it passes (the first
by default). Without the variable a crash point costs one environment lookup.

The points, in the order a pass reaches them:

``index.written`` / ``index.published`` / ``index.saved``
    ``index.jsonl`` lines written to a temporary file, published, then the index state saved.
``transcript.written`` / ``transcript.published`` / ``transcript.cursor``
    A transcript window written, published, then the stream's cursor saved.
``body.written`` / ``body.published``
    Bodies written and read back, then published (before the sequence number is remembered).
``provider.landed`` / ``provider.ledger``
    Every session's bodies landed, before the ledger is saved, then after it is.
``generation.written`` / ``generation.published`` / ``generation.manifest`` / ``generation.retired``
    A new generation of a session (``asz.store._generation``, a repack): a file written and
    read back, published (not counted yet), the manifest that makes them count published,
    then each file it replaced removed.

And in a write of the analytics tables (``ANALYTICS_POINTS``, ``asz.analytics.write``):

``analytics.opened`` / ``analytics.written`` / ``analytics.keyed`` / ``analytics.closed`` /
``analytics.compacted``
    The pass marked open, a file of it written, the keys of its rows written (before the pass
    closes), the pass closed (before compacting), and a compacted file written before the
    files it covers are removed.

And in a push (``asz.archive.record``):

``push.compacted``
    The push record's new snapshot written, before its journal is cut back.
"""

from __future__ import annotations

import os

__all__ = [
    "ANALYTICS_POINTS",
    "ENV",
    "EXIT_CODE",
    "GENERATION_POINTS",
    "POINTS",
    "PUSH_POINTS",
    "crash_point",
]

ENV = "ASZ_CRASH_AT"
EXIT_CODE = 70
POINTS = (
    "index.written",
    "index.published",
    "index.saved",
    "transcript.written",
    "transcript.published",
    "transcript.cursor",
    "body.written",
    "body.published",
    "provider.landed",
    "provider.ledger",
)
"""The points a landing pass reaches."""
GENERATION_POINTS = (
    "generation.written",
    "generation.published",
    "generation.manifest",
    "generation.retired",
)
"""The points a new generation (``asz repack``) reaches."""

ANALYTICS_POINTS = (
    "analytics.opened",
    "analytics.written",
    "analytics.keyed",
    "analytics.closed",
    "analytics.compacted",
)

PUSH_POINTS = ("push.compacted",)

_passed: dict[str, int] = {}


def crash_point(name: str) -> None:
    """Ends the process with exit code 70 when ``ASZ_CRASH_AT`` names this point and count."""
    wanted = os.environ.get(ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _passed[name] = _passed.get(name, 0) + 1
    if _passed[name] >= (int(nth) if nth else 1):
        os._exit(EXIT_CODE)
