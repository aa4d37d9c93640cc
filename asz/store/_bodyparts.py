"""A session's bodies as spans of their landed parts, for readers that compare bodies.

A request resends the one before it with a few messages added, and its landed record says so:
it copies the front of an earlier body and adds what follows. A reader that wants to know
what changed from one request to the next (the cache report) needs only the bytes after the
shared front, so :class:`BodyParts` gives any span of a body built from the parts that cover
it, and which body and how much of it a body copies. Rebuilding and hashing every request
whole would cost the square of a session's length.

Records are held once their claims hold (every length, piece and copy checked against what
is held) but are not rebuilt to their digests: the landed file's own digest vouches for its
bytes, and ``asz verify`` proves each record rebuilds. A span is therefore never handed out
as a body's exact bytes; ``Session.body`` is the way to those.

:meth:`BodyParts.walk` reads the session once, in landing order, and holds only what later
records may still copy and what the reader still reads: the chain tips, the latest
``KEPT_REQUESTS`` requests, and the bodies those copy from. Memory then stays flat however
long the session is (only pieces, each held once, add up). A record that copies a body let go
(a writer with other rules than this one's) makes the walk start again holding everything.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from typing import TYPE_CHECKING

from asz.store._bodyreader import BodyLoader
from asz.store._held import HeldBodies
from asz.store._manifest import MAX_DEPTH

__all__ = ["KEPT_REQUESTS", "BodyParts"]

KEPT_REQUESTS = 64
"""Latest requests a walk keeps, besides the chain tips, for a reader comparing each request
with the one before it of its chain."""

if TYPE_CHECKING:
    from asz.store._session_files import SessionFiles


class BodyParts:
    """Spans of a session's landed bodies, as a walk over them holds them (see the module)."""

    def __init__(self, session: SessionFiles) -> None:
        self.session = session
        self._held = HeldBodies(rebuild_checked=False)

    def walk(self) -> Iterator[tuple[str, str]]:
        """``(record id, role)`` of every landed body whose record holds, in landing order;
        each is held while it is given, and a request for a while after (see the module).
        When a repack moves the session half way, the walk goes on from its newest
        generation, past the bodies given (``SessionFiles.iterated_when_moved``)."""
        given: set[str] = set()
        for record_id, role in self.session.iterated_when_moved(lambda: self._walk(given)):
            given.add(record_id)
            yield record_id, role

    def _walk(self, given: set[str]) -> Iterator[tuple[str, str]]:
        """The walk from the start of the session's files as listed now, holding what the
        first walk would, giving only what is not in ``given``."""
        self._held = HeldBodies(rebuild_checked=False)
        loader = BodyLoader(self.session, self._held)
        problems = len(self.session.problems)
        latest: deque[str] = deque(maxlen=KEPT_REQUESTS)
        seen: set[str] = set()
        let_go: set[str] = set()
        for _name, landed in self.session.files(loader.names):
            for record in landed.records:
                meta = record.meta
                copy = _copy_named(meta)
                if copy in let_go:
                    del self.session.problems[problems:]  # the walk again says them once
                    yield from self._walk_holding_all(given)
                    return
                loader.take(landed, record)
                record_id = str(meta.get("id"))
                if record_id in seen or not self._held.holds(record_id):
                    continue
                seen.add(record_id)
                role = self._held.role(record_id)
                if role == "request":
                    latest.append(record_id)
                if record_id not in given:
                    yield record_id, role
                if len(seen) % max(1, KEPT_REQUESTS // 2) == 0:
                    let_go |= self._let_go(latest)

    def _walk_holding_all(self, given: set[str]) -> Iterator[tuple[str, str]]:
        """The walk again from the start, forgetting nothing, past what was given."""
        self._held = HeldBodies(rebuild_checked=False)
        BodyLoader(self.session, self._held).load_all()
        for record_id in self._held.record_ids():
            if record_id not in given:
                yield record_id, self._held.role(record_id)

    def _let_go(self, latest: deque[str]) -> set[str]:
        """Forgets what no later record may copy and the reader no longer reads."""
        keep = set(latest) | set(self._held.tips())
        for record_id in list(keep):
            for _ in range(MAX_DEPTH):
                copy = self._held.copy_of(record_id)
                if copy is None or copy[0] in keep:
                    break
                record_id = copy[0]
                keep.add(record_id)
        gone = set(self._held.record_ids()) - keep
        self._held.forget(gone)
        return gone

    def holds(self, record_id: str) -> bool:
        """Whether the walk holds a body under this id now."""
        return self._held.holds(record_id)

    # Each raises KeyError for a body the walk does not hold (any more).

    def size(self, record_id: str) -> int:
        return self._held.size(record_id)

    def chain(self, record_id: str) -> str | None:
        """The chain of a request (its first message's digest), as its manifest names it."""
        return self._held.chain(record_id)

    def copy_of(self, record_id: str) -> tuple[str, int] | None:
        """``(record id, length)`` of the front of an earlier body this one repeats."""
        return self._held.copy_of(record_id)

    def span(self, record_id: str, start: int, end: int) -> bytes:
        """Bytes ``start:end`` of the body, as far as it reaches."""
        return self._held.span(record_id, start, end)


def _copy_named(meta: dict[str, object]) -> str | None:
    """The record id a manifest's copy segment names, if any."""
    segs = meta.get("segs")
    first = segs[0] if isinstance(segs, list) and segs else None
    if isinstance(first, list) and len(first) == 4 and first[0] == "copy":
        return first[1] if isinstance(first[1], str) else None
    return None
