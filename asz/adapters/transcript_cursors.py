"""Where each transcript source was last landed up to: the local adapter's own tracking state.

Each landed stream has a cursor (``cursor.json`` in its stream directory) saying where the
source's next window starts, what the source's bytes before that looked like, and the stat
the source was last seen at. The cursor is derived, and kept as every derived file of the
root is (``asz.store.DerivedFile``: whole as written, made at a mark): a window lands before
the cursor moves, so a crash in between leaves a cursor behind the landed files; the cursor
remembers the sequence number of the last window it covers, and its mark is that landed
file's stamp. A cursor whose file is gone or changed, that is behind the landed files, or that
is missing, torn or of an older schema is rebuilt from them. That check is also why the cursor
is written without a disk sync: after a power cut, a cursor naming a landed file the disk lost
no longer matches, so the source lands again from what the disk kept.

A source whose bytes before the cursor changed (it shrank below the offset, or the digest of
the ``CURSOR_TAIL_BYTES`` before the offset no longer matches) is a conflict: nothing more
lands from it and it is counted on every pass while it stays so. Putting the landed bytes
back, or removing the source, ends it. A source that disappears keeps everything landed
(``source_gone``) and resumes if it comes back holding the same bytes.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, fields

from asz.adapters.source_files import FileStat
from asz.store import (
    APPEND,
    CURSOR_FILE,
    TRANSCRIPT_KIND,
    DerivedFile,
    LandedFileError,
    LandedName,
    Problem,
    Session,
)

__all__ = [
    "ACTIVE",
    "CONFLICT",
    "CURSOR_TAIL_BYTES",
    "SOURCE_GONE",
    "Cursor",
    "Tail",
    "cursor_path",
    "load_cursor",
    "mark_gone",
    "rebuild_cursor",
    "renumber_cursors",
    "save_cursor",
]

ACTIVE = "active"
SOURCE_GONE = "source_gone"
CONFLICT = "conflict"
CURSOR_TAIL_BYTES = 1 << 20
"""Bytes before a cursor's offset whose digest proves the source was only appended to."""

_CURSOR_SCHEMA = 2
"""2: a derived file, its mark the stamp of the last landed file it covers (1: bare JSON)."""
_MAX_CURSOR_BYTES = 1 << 20
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


@dataclass(slots=True)
class Cursor:
    """Where a source's next window starts, and what its bytes before that looked like.

    ``tail_sha256`` digests the (up to) ``CURSOR_TAIL_BYTES`` before ``offset``; for a
    snapshot source it digests the whole last landed copy, whose length is ``offset``.
    """

    source: str
    shape: str = APPEND
    offset: int = 0
    line: int = 1
    tail_sha256: str = _EMPTY_SHA256
    last_seq: int = 0
    dev: int | None = None
    ino: int | None = None
    size: int | None = None
    mtime_ns: int | None = None
    state: str = ACTIVE
    reason: str = ""

    def seen_as(self, seen: FileStat | None) -> bool:
        """Whether the source is exactly as the cursor last saw it (so nothing can be new)."""
        return seen is not None and (self.dev, self.ino, self.size, self.mtime_ns) == (
            seen.dev,
            seen.ino,
            seen.size,
            seen.mtime_ns,
        )

    def owes_empty_window(self) -> bool:
        """Whether the source was last seen empty and nothing of it landed: the empty window
        it is owed must land even though the source did not change (asz 0.1.0 saved such
        cursors and landed nothing)."""
        return self.last_seq == 0 and self.size == 0

    def saw(self, seen: FileStat) -> None:
        self.dev, self.ino, self.size, self.mtime_ns = seen.dev, seen.ino, seen.size, seen.mtime_ns

    def to_bytes(self, session: Session, stream_dir: str) -> bytes:
        """The cursor's file, made at the mark of what it covers."""
        values = {name: getattr(self, name) for name in _CURSOR_FIELDS}
        return _cursor_file(stream_dir).encode(session, _covered(session, stream_dir, self), values)


_CURSOR_FIELDS = tuple(field.name for field in fields(Cursor))


def cursor_path(stream_dir: str) -> str:
    return f"{stream_dir}/{CURSOR_FILE}"


def _cursor_file(stream_dir: str) -> DerivedFile:
    return DerivedFile(lambda _session: cursor_path(stream_dir), _CURSOR_SCHEMA, _MAX_CURSOR_BYTES)


def _covered(session: Session, stream_dir: str, cursor: Cursor) -> str:
    """The mark of the landed file the cursor says it covers up to (of nothing, before any).

    A cursor is written without a disk sync and the directory of a landed file is synced only
    at the end of a pass, so a power cut can keep a cursor that saw the source as it is now
    and lose the file it names: such a source must not be skipped, or that window would land
    again only once the source grows. One look at that file per unchanged source tells.
    """
    if cursor.last_seq == 0:
        return session.landed_mark([])
    return session.landed_mark([session.landed_at(stream_dir, TRANSCRIPT_KIND, cursor.last_seq)])


def load_cursor(session: Session, stream_dir: str) -> Cursor | None:
    """The cursor of a stream dir, or None when it is missing, not whole, of an older schema
    or made at another mark than what it covers now (then rebuilt)."""
    stored = _stored(session, stream_dir)
    if stored is None or stored[1] != _covered(session, stream_dir, stored[0]):
        return None
    return stored[0]


def _stored(session: Session, stream_dir: str) -> tuple[Cursor, str] | None:
    """The cursor as kept, and the mark it was made at; None when there is none whole."""
    kept = _cursor_file(stream_dir).read(session)
    if kept is None or not isinstance(kept.value, dict):
        return None
    try:
        cursor = Cursor(**kept.value)
    except TypeError:
        return None
    typed = ((cursor.source, str), (cursor.offset, int), (cursor.last_seq, int))
    if not all(isinstance(value, kind) for value, kind in typed):
        return None
    return cursor, kept.mark


def save_cursor(session: Session, stream_dir: str, data: bytes) -> None:
    """Replaces the stream's cursor with ``data`` (``Cursor.to_bytes``)."""
    session.backend.replace_derived(cursor_path(stream_dir), data)


class Tail:
    """The last ``CURSOR_TAIL_BYTES`` of a stream, kept as pieces and joined only for its
    digest."""

    def __init__(self, start: bytes = b"") -> None:
        self.parts = [start]
        self.size = len(start)

    def add(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        while len(self.parts) > 1 and self.size - len(self.parts[0]) >= CURSOR_TAIL_BYTES:
            self.size -= len(self.parts.pop(0))

    def sha256(self) -> str:
        joined = memoryview(b"".join(self.parts))
        return hashlib.sha256(joined[-CURSOR_TAIL_BYTES:]).hexdigest()


def rebuild_cursor(session: Session, files: list[LandedName], relpath: str, shape: str) -> Cursor:
    """A stream's cursor derived from its landed files alone; LandedFileError when they do not
    give the source's bytes back whole (a cursor is never rebuilt past a gap)."""
    cursor = Cursor(source=relpath, shape=shape)
    end, line = 0, 1
    tail = Tail()
    problems: list[Problem] = []
    for name, window, fresh in session.stream(files, problems):
        where = session.backend.describe(name.path)
        if window.source != relpath:
            raise LandedFileError(where, f"holds {window.source}, not {relpath}")
        if fresh is None:
            cursor.offset, cursor.line = len(window.payload), 1 + window.lines
            cursor.tail_sha256 = hashlib.sha256(window.payload).hexdigest()
            continue
        if fresh.misfit:
            raise LandedFileError(where, fresh.misfit)
        tail.add(fresh.data)
        end, line = fresh.offset + len(fresh.data), fresh.line + fresh.data.count(b"\n")
    if problems:
        raise LandedFileError(problems[0].file, problems[0].why, problems[0].row)
    if files:
        cursor.last_seq = files[-1].seq
    if shape == APPEND:
        cursor.offset, cursor.line = end, line
        cursor.tail_sha256 = tail.sha256()
    return cursor


def mark_gone(session: Session, stream_dir: str) -> None:
    """Records that a stream's source is gone; what landed stays, and it resumes if it returns."""
    cursor = load_cursor(session, stream_dir)
    if cursor is None or cursor.state == SOURCE_GONE:
        return
    cursor.state, cursor.reason = SOURCE_GONE, ""
    cursor.dev = cursor.ino = cursor.size = cursor.mtime_ns = None
    save_cursor(session, stream_dir, cursor.to_bytes(session, stream_dir))


def renumber_cursors(session: Session) -> None:
    """Moves each cursor of a session given a new generation (``asz repack``) to the numbers
    of its stream's files now, where it covered what they hold, so the next pass does not
    read the source again for it; one that did not is rebuilt, and the source is read."""
    for directory in session.stream_dirs():
        files = session.landed_in(directory)
        stored = _stored(session, directory)
        if stored is None or not files or stored[1] == _covered(session, directory, stored[0]):
            continue
        cursor = stored[0]
        try:
            rebuilt = rebuild_cursor(session, files, cursor.source, cursor.shape)
        except LandedFileError:
            continue  # the next pass says so
        if (rebuilt.offset, rebuilt.line, rebuilt.tail_sha256) == (
            cursor.offset,
            cursor.line,
            cursor.tail_sha256,
        ):
            cursor.last_seq = rebuilt.last_seq
            rebuilt = cursor
        save_cursor(session, directory, rebuilt.to_bytes(session, directory))
