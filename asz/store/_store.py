"""A storage root opened for reading and landing: its sessions, its writers, its verification."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from asz.atomic import DirSyncs
from asz.bodykeys import is_session_id
from asz.locations import is_archive
from asz.progress import Progress
from asz.store._backend import Backend, LocalBackend, size_of
from asz.store._errors import StoreError, UnknownSession
from asz.store._layout import SEQ_FILE, session_dir
from asz.store._resolve import only, session_text, sessions_starting
from asz.store._session import Session
from asz.store._verify import VerifyReport, verify_session
from asz.store._writer import Batch, SessionWriter, read_seq_file

__all__ = ["Store", "open_store"]


class Store:
    """One root, through one backend; ``compression`` is what files landed from here use."""

    def __init__(self, backend: Backend, compression: str = "zstd") -> None:
        self.backend = backend
        self.compression = compression

    @property
    def location(self) -> str:
        return self.backend.location

    def sessions(self) -> list[str]:
        """Every landed session's id, sorted; nothing else at the root is a session."""
        return sorted(
            entry.name
            for entry in self.backend.list("")
            if entry.is_dir and is_session_id(entry.name)
        )

    def session(self, session_id: str) -> Session:
        """A landed session; NotASession for an id not in Claude Code's form, UnknownSession
        when the root holds none under it."""
        if not self.backend.list(session_dir(session_id)):
            raise UnknownSession(f"no session {session_id} under {self.location}")
        return Session(self.backend, session_id)

    def find_session(self, text: str) -> Session:
        """The landed session ``text`` names as a person pastes it: its id in any case, or a
        prefix of it (``asz.store._resolve``). NotASession when it cannot start an id,
        UnknownSession when no landed session matches, AmbiguousId when several do."""
        wanted = session_text(text)
        if is_session_id(wanted) and self.backend.list(session_dir(wanted)):
            return Session(self.backend, wanted)
        found = [s for s in sessions_starting(wanted, self.sessions()) if self.backend.list(s)]
        missing = UnknownSession(f"no session {wanted} under {self.location}")
        return Session(self.backend, only(text, "sessions", found, missing))

    def open_session(self, session_id: str) -> Session:
        """A session whether or not anything of it landed yet (for landing into it)."""
        session_dir(session_id)
        return Session(self.backend, session_id)

    def verify(
        self, sessions: Iterable[str] | None = None, progress: Progress | None = None
    ) -> VerifyReport:
        """Checks every kind of landed file of the named sessions (every session when None):
        each file whole, every body rebuilding to its digest, every transcript stream and
        index line holding. ``progress`` is told of every file, once they are all counted."""
        report = VerifyReport()
        checked = [
            self.open_session(s) for s in (self.sessions() if sessions is None else sessions)
        ]
        for session in checked:
            if progress is not None:
                names = session.landed()
                progress.grow(len(names), sum(size_of(self.backend, name.path) for name in names))
                session.progress = progress
        for session in checked:
            verify_session(session, report)
        return report

    def size_of(self, path: str) -> int:
        """The size of a landed file; 0 when it is gone since it was listed."""
        return size_of(self.backend, path)

    # -- landing ---------------------------------------------------------------------------

    def has_landed(self, session_id: str) -> bool:
        """Whether the session has landed anything, by one look: its ``seq`` file is written
        once its first landed file is published (a session directory alone may hold only what
        a killed collector never published)."""
        return self.backend.exists(f"{session_dir(session_id)}/{SEQ_FILE}")

    def numbered(self, session_id: str) -> tuple[int, int]:
        """The highest number of the session's landed files, and the highest its ``seq``
        file remembers: the session's next landed file takes the number above both (so
        removing the newest file cannot make a number be used twice; a generation counts as the
        numbers it replaces), and a remembered number
        above every landed file is a file lost (``SessionWriter`` says so in the next)."""
        session = self.open_session(session_id)
        landed = session.landed(checked=False)
        generation = session.generation()
        highest = max(landed[-1].seq if landed else 0, generation.replaces if generation else 0)
        return highest, read_seq_file(self.backend, session_id)

    def batch(self, defer: DirSyncs | None = None) -> Batch:
        return Batch(self.backend, defer)

    def writer(self, session_id: str, batch: Batch) -> SessionWriter:
        """The writer every landing into the session goes through (``asz.store._writer``)."""
        session_dir(session_id)
        return SessionWriter(
            self.backend,
            session_id,
            batch,
            compression=self.compression,
            numbered=lambda: self.numbered(session_id),
        )


def open_store(location: str | os.PathLike[str] | Backend, *, compression: str = "zstd") -> Store:
    """The root at ``location``: a directory, or a backend already opened (a team archive's
    is ``asz.archive.open_archive``; ``asz.archive.open_root`` takes either form of name).
    Opening reads nothing; a missing directory is an empty root."""
    if not isinstance(location, str | os.PathLike):
        return Store(location, compression)
    text = os.fspath(location)
    if is_archive(text):
        raise StoreError(f"{text}: an archive is opened by asz.archive.open_root")
    if "://" in text:
        raise StoreError(f"{text}: a root is a directory or an s3://bucket/prefix archive")
    return Store(LocalBackend(Path(text)), compression)
