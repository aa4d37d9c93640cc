"""Rebuilding landed bodies on demand, loading a session's files at most once.

A body may copy from bodies and pieces in earlier files of its session, so rebuilding one
means holding every file up to the one that has it. The reader loads files in sequence order
only as far as it must and keeps what it loaded, so asking for many bodies of one session
reads each file once.
"""

from __future__ import annotations

from dataclasses import dataclass

from asz.store.codec import CodecError, Record, Repeat, SessionBodies
from asz.store.framing import LandedFileError, read_file
from asz.store.root import Root


class BodyNotFound(LookupError):
    """The session holds no body under that record id."""


@dataclass(frozen=True, slots=True)
class BodyRef:
    """Where a body was landed: the file's sequence number and the record's row in it."""

    seq: int
    row: int
    file: str


class SessionReader:
    def __init__(self, root: Root, session: str) -> None:
        self.session = session
        self._files = root.landed(root.bodies_dir(session))
        self._next = 0
        self._held = SessionBodies()
        self.refs: dict[str, BodyRef] = {}
        self.problems: list[str] = []

    def _load_next(self) -> bool:
        if self._next >= len(self._files):
            return False
        item = self._files[self._next]
        self._next += 1
        try:
            landed = read_file(item.path)
        except LandedFileError as err:
            self.problems.append(str(err))
            return True
        for record in landed.records:
            try:
                self._held.add(Record(meta=record.meta, payload=record.payload))
            except Repeat:
                continue
            except CodecError as err:
                self.problems.append(f"{item.path}: row {record.row}: {err}")
                continue
            record_id = str(record.meta.get("id"))
            self.refs.setdefault(record_id, BodyRef(item.seq, record.row, item.path.name))
        return True

    def load_all(self) -> None:
        while self._load_next():
            pass

    def body(self, record_id: str) -> bytes:
        """The exact bytes of a landed body; raises BodyNotFound or CodecError."""
        while not self._held.holds(record_id):
            if not self._load_next():
                detail = f" ({'; '.join(self.problems)})" if self.problems else ""
                raise BodyNotFound(f"session {self.session} holds no body {record_id}{detail}")
        return self._held.rebuild(record_id)

    def meta(self, record_id: str) -> dict:
        self.body(record_id)
        return self._held.meta(record_id)
