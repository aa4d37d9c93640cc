"""What a pass, or any part of one, did: one tally that every part fills and the pass adds up.

A source's landing, a session's, an adapter's pass and the whole pass are all a
:class:`Tally`; a part hands its tally up and the caller adds it to its own with
:meth:`Tally.add`, so counts are never copied field by field. The ``--json`` line of a pass,
its human line, the service's log line and its metrics are all made from one.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

__all__ = ["Tally"]


@dataclass(slots=True)
class Tally:
    """Counts of landing and judging; every field adds up (sets join, lists extend)."""

    sessions: set[str] = field(default_factory=set)
    """Sessions where anything landed."""
    files: int = 0
    """Landed files written."""
    records: int = 0
    """Records in them: transcript windows, bodies, index lines."""
    transcript_files: int = 0
    transcript_lines_landed: int = 0
    bodies_landed: int = 0
    index_lines: int = 0
    source_bytes: int = 0
    """Bytes of Claude Code's files that landed."""
    landed_bytes: int = 0
    """Bytes of the landed files written for them."""
    bodies_waiting: int = 0
    """Bodies no session claims yet."""
    bodies_settling: int = 0
    """Bodies still being written: not one JSON value yet and written less than
    ``unreadable_after`` ago, or changed while read. Left alone until judged, so they are
    neither waiting (which would say no session claims them) nor unreadable."""
    bodies_unreadable: int = 0
    bodies_excluded: int = 0
    transcripts_unattributed: int = 0
    sessions_excluded: int = 0
    pending: int = 0
    """Sources with more to land than one pass lands."""
    conflict_sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    def add(self, other: Tally) -> Tally:
        """Adds ``other`` into this tally; returns this tally."""
        for name in _FIELDS:
            mine = getattr(self, name)
            theirs = getattr(other, name)
            if isinstance(mine, set):
                mine |= theirs
            elif isinstance(mine, list):
                mine += theirs
            else:
                setattr(self, name, mine + theirs)
        return self

    def landed_file(self, session: str, records: int, landed_bytes: int) -> None:
        """Counts one landed file of ``session`` holding ``records`` records."""
        self.sessions.add(session)
        self.files += 1
        self.records += records
        self.landed_bytes += landed_bytes

    @property
    def landed(self) -> int:
        """Transcript windows and bodies landed: what a person counts as landed."""
        return self.transcript_files + self.bodies_landed

    @property
    def conflicts(self) -> int:
        return len(self.conflict_sources)

    @property
    def complete(self) -> bool:
        """Waiting, settling and unreadable bodies never fail a pass; conflicts, errors and
        sources left pending do."""
        return not self.conflict_sources and not self.errors

    @property
    def changed(self) -> bool:
        return self.landed > 0 or bool(self.conflict_sources) or bool(self.errors)

    def as_dict(self) -> dict[str, Any]:
        """The pass's ``--json`` object."""
        return {
            "sessions": len(self.sessions),
            "landed": self.landed,
            "records": self.records,
            "bodies_landed": self.bodies_landed,
            "bodies_waiting": self.bodies_waiting,
            "bodies_settling": self.bodies_settling,
            "bodies_unreadable": self.bodies_unreadable,
            "bodies_excluded": self.bodies_excluded,
            "transcript_lines_landed": self.transcript_lines_landed,
            "transcripts_unattributed": self.transcripts_unattributed,
            "sessions_excluded": self.sessions_excluded,
            "source_bytes": self.source_bytes,
            "landed_bytes": self.landed_bytes,
            "conflicts": self.conflicts,
            "conflict_sources": self.conflict_sources,
            "errors": self.errors,
            "seconds": self.seconds,
            "complete": self.complete,
        }


_FIELDS = tuple(item.name for item in fields(Tally))
