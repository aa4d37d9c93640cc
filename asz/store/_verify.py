"""``asz verify``: every kind of landed file whole, and everything in it holding.

Verification starts from nothing but the files. For each session:

- body files: read in sequence order into a fresh session, every record checked against what
  is held and rebuilt against the size and SHA-256 its manifest claims;
- transcript streams: every window's bytes match their digest and line count and end with a
  complete line (an empty window, which keeps an empty source, has none), an append-only
  source's windows follow each other (``asz.store._streams``), a snapshot starts at byte 0;
- index files: every line has its offset and matches its digest, offsets only grow;
- the sequence: no number is missing (``Session.gaps``);
- derived files (the summary, the facts, the manifest index): each is made again from the
  landed files alone, and one that was not whole, or held what the files do not give, is a
  problem (and is replaced by what was made).

Each problem names the file, the row and why; a damaged file does not stop the check of the
others.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from asz.store._bodyreader import BodyLoader
from asz.store._derived import DerivedFile
from asz.store._errors import Problem
from asz.store._layout import INDEX_KIND, TRANSCRIPT_KIND
from asz.store._manifest_index import MANIFESTS
from asz.store._session import Session
from asz.store._session_facts import FACTS
from asz.store._summary import SUMMARY

__all__ = ["DERIVED", "VerifyReport", "check_derived", "verify_session"]

DERIVED = (SUMMARY, FACTS, MANIFESTS)
"""The derived files the store makes of a session (the view keeps one more, its report)."""


@dataclass(slots=True)
class VerifyReport:
    """What a verification checked, and every problem it met (none means all holds)."""

    sessions: int = 0
    files: int = 0
    bodies: int = 0
    transcript_lines: int = 0
    index_lines: int = 0
    problems: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "sessions": self.sessions,
            "files": self.files,
            "bodies": self.bodies,
            "transcript_lines": self.transcript_lines,
            "index_lines": self.index_lines,
            "problems": [problem.as_dict() for problem in self.problems],
        }


def verify_session(session: Session, report: VerifyReport) -> None:
    """Checks every landed file of one session into ``report``; again from the start, once,
    when a repack moves the session half way (``Session.again_when_moved``)."""

    def check() -> VerifyReport:
        part = VerifyReport(sessions=1)
        part.problems += session.gaps()
        _check_bodies(session, part)
        _check_transcripts(session, part)
        _check_index(session, part)
        return part

    part = session.again_when_moved(check)
    report.sessions += part.sessions
    report.files += part.files
    report.bodies += part.bodies
    report.transcript_lines += part.transcript_lines
    report.index_lines += part.index_lines
    report.problems += part.problems
    check_derived(session, DERIVED, lambda fresh: fresh.summary(), report.problems)


def check_derived(
    session: Session,
    derived: Sequence[DerivedFile],
    make: Callable[[Session], object],
    problems: list[Problem],
) -> None:
    """Makes the ``derived`` files of ``session`` again from its landed files alone (``make``
    on a session that trusts none), and adds a problem for each that was there but not whole,
    or whole but holding what the landed files do not give at the mark it names. What was
    made replaces them where the root may be written."""
    found = {file: file.opened(session) for file in derived}
    fresh = Session(session.backend, session.id, trusts_derived=False)
    make(fresh)
    for file, (kept, damage) in found.items():
        path = file.path_of(session.id)
        made = fresh.made.get(path)
        if damage is None and (kept is None or made is None or made.mark != kept.mark):
            continue
        if damage is None and made is not None and kept is not None and made.value == kept.value:
            continue
        why = damage or "does not hold what the landed files give"
        done = "made again" if made is not None else "not made again"
        where = session.backend.describe(path)
        session.problem(where, None, f"{why} (a derived file, {done})", problems)


def _check_bodies(session: Session, report: VerifyReport) -> None:
    loader = BodyLoader(session, rebuild_each=True, problems=report.problems)
    loader.load_all()
    report.files += len(loader.names)
    report.bodies += loader.bodies


def _check_transcripts(session: Session, report: VerifyReport) -> None:
    describe = session.backend.describe
    counted: set[str] = set()  # a pack is named for each stream it holds
    for directory in session.stream_dirs():
        names = session.landed_in(directory)
        counted.update(name.path for name in names)
        source: str | None = None
        for name, window, fresh in session.stream(names, report.problems):

            def problem(why: str, where: str = describe(name.path)) -> None:
                session.problem(where, None, why, report.problems)

            if name.kind != TRANSCRIPT_KIND:
                problem(f"a {name.kind} file among landed transcripts")
            source = source or window.source
            if window.source != source or directory.rsplit("/", 1)[-1] != window.key:
                problem(f"holds {window.source}, which does not land in this dir")
            if hashlib.sha256(window.payload).hexdigest() != window.sha256:
                problem("its bytes do not match their sha256")
            if window.payload.count(b"\n") != window.lines:
                problem(f"does not hold the {window.lines} lines it claims")
            if fresh is None:
                if window.off != 0:
                    problem("is a snapshot that does not start at byte 0")
                continue
            if window.payload and not window.payload.endswith(b"\n"):
                problem("does not end with a complete line")
            if fresh.misfit:
                problem(fresh.misfit)
            report.transcript_lines += fresh.data.count(b"\n")
    report.files += len(counted)


def _check_index(session: Session, report: VerifyReport) -> None:
    names = session.landed(INDEX_KIND)
    report.files += len(names)
    last = -1
    for _name, landed in session.files(names, report.problems):
        for record in landed.records:
            off, digest = record.meta.get("off"), record.meta.get("sha256")
            where = str(landed.path)
            if not isinstance(off, int) or off <= last:
                why = "has no offset, or one not after the line landed before it"
                session.problem(where, record.row, why, report.problems)
            else:
                last = off
            if digest != hashlib.sha256(record.payload).hexdigest():
                session.problem(where, record.row, "does not match its sha256", report.problems)
            report.index_lines += 1
