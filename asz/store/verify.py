"""``asz verify``: every landed file whole, every landed body rebuilding to its digest.

Verification starts from nothing but the files: it holds a fresh session per session
directory, reads each file in sequence order (closing digest and record count checked) and
rebuilds every body against the size and SHA-256 its manifest claims. Each problem names the
file, the row and why; a damaged file does not stop the check of the others.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from asz.store.codec import CodecError, Record, Repeat, SessionBodies
from asz.store.framing import LandedFileError, read_file
from asz.store.root import Root


@dataclass(frozen=True, slots=True)
class Problem:
    session: str
    file: str
    row: int | None
    why: str

    def as_dict(self) -> dict:
        return {"session": self.session, "file": self.file, "row": self.row, "why": self.why}

    def __str__(self) -> str:
        where = f"{self.file}: row {self.row}" if self.row is not None else self.file
        return f"{where}: {self.why}"


@dataclass(slots=True)
class VerifyReport:
    sessions: int = 0
    files: int = 0
    bodies: int = 0
    transcript_lines: int = 0
    problems: list[Problem] = field(default_factory=list)

    def as_dict(self) -> dict:
        return {
            "sessions": self.sessions,
            "files": self.files,
            "bodies": self.bodies,
            "transcript_lines": self.transcript_lines,
            "problems": [problem.as_dict() for problem in self.problems],
        }


SessionCheck = Callable[[Root, str, VerifyReport], None]


def verify_bodies(root: Root, session: str, report: VerifyReport) -> None:
    """Rebuilds every landed body of a session from its files alone."""
    held = SessionBodies()
    for item in root.landed(root.bodies_dir(session)):
        report.files += 1
        try:
            landed = read_file(item.path)
        except LandedFileError as err:
            report.problems.append(Problem(session, str(item.path), err.row, err.why))
            continue
        for record in landed.records:
            try:
                held.add(Record(meta=record.meta, payload=record.payload))
            except Repeat:
                continue
            except CodecError as err:
                report.problems.append(Problem(session, str(item.path), record.row, str(err)))
                continue
            try:
                held.rebuild(str(record.meta["id"]))
            except CodecError as err:
                report.problems.append(Problem(session, str(item.path), record.row, str(err)))
                continue
            report.bodies += 1


def verify_root(
    root: Root, sessions: Iterable[str] | None = None, checks: Iterable[SessionCheck] = ()
) -> VerifyReport:
    """Checks the named sessions (all of the root's when None) with every check given."""
    report = VerifyReport()
    for session in root.sessions() if sessions is None else sessions:
        report.sessions += 1
        for check in (verify_bodies, *checks):
            check(root, session, report)
    return report
