"""A landed session in one line: where it ran, when, with which models, and what landed of it.

``asz sessions`` lists every session of a root, so a summary must not cost a read of every
landed file of every session each time. The transcript part comes from the session's facts
(kept up to date window by window, ``asz.store._session_facts``); the body part needs the
manifests, which means reading every body file. So a summary is kept in a derived cache
(``<session>/summary.json``) together with a digest of the names of the landed files it was
made from (``asz.store._derived``): landed files are never changed after they are published, so
while they are the same the summary is, and listing a session costs a listing of its
directories and a stamp of each file. When they differ the summary is made again from the
files (one session at a time: the ones that landed something, or were damaged, since). A
summary made while a file did not read is not kept, so the next listing meets the problem
again instead of hiding it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any

from asz.store._cached import count, optional_text, text
from asz.store._derived import DerivedFile
from asz.store._layout import summary_path
from asz.store._session_facts import load_facts

if TYPE_CHECKING:
    from asz.store._layout import LandedName
    from asz.store._session_files import SessionFiles

__all__ = ["SUMMARY", "SessionSummary", "summarize"]

SUMMARY = DerivedFile(summary_path, schema=2, limit=1 << 20)


@dataclass(frozen=True, slots=True)
class SessionSummary:
    """What ``asz sessions`` says of one session (times as Claude Code writes them: UTC,
    ``2026-01-31T12:00:00.000Z``)."""

    id: str
    project_dir: str | None
    """The main transcript's directory under Claude Code's projects directory."""
    cwd: str | None
    """The first working directory the transcripts name: where the session started."""
    first_activity: str | None
    """The earliest time a landed transcript line carries; None without one."""
    last_activity: str | None
    models: tuple[str, ...]
    """Every model a transcript's assistant line or a request body names, sorted."""
    calls: int
    """Model calls the transcripts record (distinct message ids)."""
    bodies: int
    transcript_lines: int
    landed_bytes: int

    @property
    def project(self) -> str | None:
        """The project as a person names it: the cwd, else the projects-directory name."""
        return self.cwd or self.project_dir

    def as_dict(self) -> dict[str, Any]:
        """The summary as ``asz sessions --json`` prints it (field names as above)."""
        found = asdict(self)
        found["models"] = list(self.models)
        return found

    @classmethod
    def from_dict(cls, value: Any) -> SessionSummary:
        """A summary from :meth:`as_dict`'s form; TypeError or KeyError when it is not one."""
        summary = cls(
            id=text(value["id"]),
            project_dir=optional_text(value["project_dir"]),
            cwd=optional_text(value["cwd"]),
            first_activity=optional_text(value["first_activity"]),
            last_activity=optional_text(value["last_activity"]),
            models=tuple(text(model) for model in value["models"]),
            calls=count(value["calls"]),
            bodies=count(value["bodies"]),
            transcript_lines=count(value["transcript_lines"]),
            landed_bytes=count(value["landed_bytes"]),
        )
        if len(value) != len(fields(cls)):
            raise KeyError("a summary with other fields")
        return summary


def summarize(session: SessionFiles, landed: list[LandedName] | None = None) -> SessionSummary:
    """The session's summary, from its cache while the landed files are the ones it was made
    from, else made from the files and kept (where the root can be written). ``landed``: the
    session's landed files as the caller listed them just now, so that a summary kept for
    them is taken without listing them again; one is made from a listing of its own, so that
    a read retried when a repack moved the session (``retried_when_moved``) lists afresh."""
    if landed is not None and session.trusts_derived:
        kept = _cached(session, session.landed_mark(landed))
        if kept is not None:
            return kept
    landed = session.landed()
    mark = session.landed_mark(landed)
    cached = _cached(session, mark) if session.trusts_derived else None
    if cached is not None:
        return cached
    problems = len(session.problems)
    made = _make(session, landed)
    if len(session.problems) == problems and landed:
        SUMMARY.keep(session, mark, made.as_dict())
    return made


def _cached(session: SessionFiles, mark: str) -> SessionSummary | None:
    try:
        summary = SessionSummary.from_dict(SUMMARY.held(session, mark))
    except (TypeError, KeyError):
        return None
    return summary if summary.id == session.id else None


def _make(session: SessionFiles, landed: list[LandedName]) -> SessionSummary:
    facts = load_facts(session)
    manifests = session.manifests()
    models = facts.models | {model for m in manifests.values() if (model := m.keys.model)}
    return SessionSummary(
        id=session.id,
        project_dir=facts.primary_dir,
        cwd=facts.first_cwd,
        first_activity=facts.first_activity,
        last_activity=facts.last_activity,
        models=tuple(sorted(models)),
        calls=len(facts.calls),
        bodies=len(manifests),
        transcript_lines=facts.lines,
        landed_bytes=sum(session.size(name) for name in landed),
    )
