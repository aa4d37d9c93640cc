"""The files of a push (``asz.archive.push``), each by a create-only put
(``asz.archive.bucket``) under the root's own relative path.

Uploads run in a bounded set of threads (``asz.archive.workers``; the client releases the GIL
while it waits); each reads its file when it starts, so memory holds at most one file per
worker. A session's files go in sequence order until the first one this push creates (a copy
of the root that diverged stops at its conflict), then together. With a redacted root, what
goes is each file's redacted counterpart, its redaction record before it.
"""

from __future__ import annotations

import hashlib
from collections import deque
from functools import partial
from typing import Any

from asz.archive.bucket import Created, Known, Meta
from asz.archive.push_parts import GRACE, PushParts, Todo
from asz.archive.push_tally import PushTally
from asz.archive.record import PushRecord
from asz.archive.redacted import bucket_record
from asz.archive.relisted import went_under
from asz.archive.workers import Workers
from asz.store import MAX_CONTENT_BYTES, LandedName

__all__ = ["Sending"]


class Sending(PushParts):
    """The part of a push that sends each session's files."""

    def _files(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[Todo],
        known: dict[str, Known],
        tally: PushTally,
        *,
        extended: dict[str, str],
        moved: set[str] | None = None,
    ) -> None:
        """Each session's files in sequence order, one at a time until the first one this
        push creates, then all at once. A copy of the root that diverged from the one that
        pushed (the same session, other files from some sequence number on) meets its first
        file of another root's there as a conflict, and sends nothing after it: a session
        in the bucket never continues one root's sequence with another's files, and the
        extent this push created for it (``extended``) is taken back. So is a session whose
        file this root pushed before under another redaction policy meets a push that rebuilt
        its record (``asz.archive.relisted``): the record then says which policy each of its
        files there went under, and the session is held as it would have been. A session a
        repack moved meanwhile (a file gone that it no longer counts) sends nothing more and
        is put in ``moved``, when given, rather than failed."""
        left = {item.session: deque(item.names) for item in todo}
        before = {path: name for item in todo for path, name in item.before.items()}
        serial = set(left)

        def send(session: str) -> None:
            path = left[session].popleft().path
            job = partial(self._file_one, path, known[path], record, before.get(path))
            workers.submit((session, path), job)

        for session in left:
            send(session)
        for (session, path), outcome in workers.finished(GRACE):
            if moved is not None and self._retired(session, path, outcome):
                moved.add(session)
                left[session].clear()
                continue
            if isinstance(outcome, BaseException):
                self._failed(tally, self.url.key(path), outcome)
                if session in serial:
                    left[session].clear()  # what is at this number is not known: no further
                continue
            result, size, went = outcome
            if result is Created.OTHER:
                if went is None:
                    tally.conflicts.append(self.url.key(path))
                else:
                    self._went_before(record, path, size, went, tally)
                    for later in left[session]:
                        if isinstance(known.get(later.path), Meta):
                            workers.submit((session, later.path), partial(self._found, later.path))
                left[session].clear()
                if session in serial and session in extended:
                    self._take_back(record, extended.pop(session), tally)
                continue
            record.pushed(path, size, tally.policy)
            if self.progress is not None:
                self.progress.pushed(size, result is Created.CREATED)
            if result is Created.CREATED:
                tally.files += 1
                tally.bytes += size
            else:
                tally.already_there += 1
            if session in serial and result is Created.CREATED:
                serial.discard(session)
                while left[session]:
                    send(session)
            elif left[session]:
                send(session)

    def _retired(self, session: str, path: str, outcome: object) -> bool:
        """Whether a file's send failed because a repack retired the file (or the one
        before it) since the push listed it: the session no longer counts it."""
        if not isinstance(outcome, FileNotFoundError):
            return False
        counted = {name.path for name in self.store.open_session(session).landed()}
        return path not in counted

    def _file_one(
        self, path: str, known: Known, record: PushRecord, before: LandedName | None
    ) -> tuple[Created, int, str | None]:
        """Sends the file at ``path``: how it went, its size, and, for an object in the way
        that this root pushed under another policy, that policy (``_found``)."""
        data = self._read(path)
        # Listed by a push that rebuilt its record: the object is there, only compared.
        listed = isinstance(known, Meta)
        if self.redacted is not None and not listed:
            # The record goes first: a redacted file in the archive always has its record.
            self.bucket.create(bucket_record(path), self.redacted.record(path), known=None)
        follows = ""
        if before is not None:
            earlier = self._read(before.path)
            follows = f"{before.seq}:{hashlib.sha256(earlier).hexdigest()}"
        created = self.bucket.create(path, data, known, sending=record.sending, follows=follows)
        if self.redacted is not None and listed:
            if created is Created.OTHER:
                return self._found(path)  # what went before under another policy, perhaps
            self.bucket.create(bucket_record(path), self.redacted.record(path), known=None)
        return created, len(data), None

    def _found(self, path: str) -> tuple[Created, int, str | None]:
        """The object at ``path``, which holds other bytes than this push sends: its size, and
        the redaction policy it went under when it is this root's file there (None: it is
        another root's, a conflict)."""
        found = self.bucket.get(path)
        backend = self.store.backend
        if not backend.exists(path):  # a file of a re-redacted generation: no landed file
            return Created.OTHER, len(found), None
        landed = backend.read(path, MAX_CONTENT_BYTES)
        return Created.OTHER, len(found), went_under(found, path, landed)

    def _went_before(
        self, record: PushRecord, path: str, size: int, policy: str, tally: PushTally
    ) -> None:
        """The object at ``path`` is this root's file under ``policy``: recorded so, and said
        as a file under another policy (``other_policy``), never as a conflict."""
        assert self.redacted is not None
        record.pushed(path, size, policy)
        tally.other_policy.append(path)
        if self.redacted.differs(path, policy):
            tally.would_differ.append(path)

    def _take_back(self, record: PushRecord, path: str, tally: PushTally) -> None:
        """Removes the extent this push created for a session whose first file to go met
        another root's there (a diverged copy): nothing of this root's follows it, and its
        promise would have readers wait for files this root will never send."""
        try:
            self.bucket.delete(path)
        except Exception as err:
            self._failed(tally, self.url.key(path), err)
            return
        record.unextended(path)

    def _read(self, path: str) -> bytes:
        """The bytes that go for the landed file at ``path``: its redacted counterpart's,
        or its own when files go raw."""
        if self.redacted is not None:
            return self.redacted.read(path)
        return self.store.backend.read(path, MAX_CONTENT_BYTES)
