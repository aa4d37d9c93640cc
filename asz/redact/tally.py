"""What a session's bodies and lines would have redacted, by rule: ``asz redact --dry-run``
and ``asz push --dry-run`` list it, never a value.

Typed against the store's session by its shape alone, since this package sits below the
readers and imports none of them.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Protocol

from asz.redact.redactor import Redactor, ScannerFailed

__all__ = ["SessionLike", "Tally", "tally_documents", "tally_session"]


class _Line(Protocol):
    @property
    def data(self) -> bytes: ...


class SessionLike(Protocol):
    """What a tally reads of a session (``asz.store.Session`` has it)."""

    def body_ids(self) -> list[str]: ...

    def body(self, record_id: str) -> bytes: ...

    def transcript_lines(self) -> Iterator[_Line]: ...


@dataclass
class Tally:
    """Markers by rule over a session, the documents they were in, and what failed."""

    rules: collections.Counter[str] = field(default_factory=collections.Counter)
    bodies: int = 0
    bodies_redacted: int = 0
    lines: int = 0
    lines_redacted: int = 0
    failed: list[str] = field(default_factory=list)
    """The record ids (or ``line N of <source>``) whose scan stopped: nothing of them would go."""

    @property
    def markers(self) -> int:
        return sum(self.rules.values())

    def as_json(self) -> dict[str, object]:
        return {
            "rules": dict(sorted(self.rules.items())),
            "markers": self.markers,
            "bodies": self.bodies,
            "bodies_redacted": self.bodies_redacted,
            "lines": self.lines,
            "lines_redacted": self.lines_redacted,
            "failed": self.failed,
        }


def tally_documents(
    redactor: Redactor, bodies: Iterable[tuple[str, bytes]], lines: Iterable[tuple[str, bytes]]
) -> Tally:
    """Each body and line (named, with its bytes) through the redactor, counted by rule."""
    tally = Tally()
    for name, raw in bodies:
        tally.bodies += 1
        tally.bodies_redacted += _count(redactor.body, name, raw, tally)
    for name, raw in lines:
        tally.lines += 1
        tally.lines_redacted += _count(redactor.line, name, raw.rstrip(b"\r\n"), tally)
    return tally


def tally_session(redactor: Redactor, session: SessionLike) -> Tally:
    """A session's every body, then every transcript line, as a push would send them."""
    bodies = ((record_id, session.body(record_id)) for record_id in session.body_ids())
    lines = ((f"line {n}", line.data) for n, line in enumerate(session.transcript_lines(), 1))
    return tally_documents(redactor, bodies, lines)


def _count(redact: object, name: str, raw: bytes, tally: Tally) -> int:
    assert callable(redact)
    try:
        hits = redact(raw).hits
    except ScannerFailed:
        tally.failed.append(name)
        return 0
    tally.rules.update(hit.rule for hit in hits)
    return 1 if hits else 0
