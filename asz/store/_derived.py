"""A file derived from a session's landed files, kept beside them: one shape for every such file.

A session's summary, its transcript facts, its manifest index and its kept cache report each
spare a reader a read of every landed file. Each is trusted only while two things hold, and
both are checked on every read:

- **it is whole as it was written.** Its first line names its schema, its session, the mark
  of the landed files it was made from and the SHA-256 of the rest of the file; a file cut,
  scribbled over or changed in any way does not match it and is not used;
- **the landed files are the ones it was made from.** The mark (:func:`landed_mark`) is of
  every such file's path and stamp (``Backend.stamp``: its size, times and inode on a disk,
  its size and ETag in a bucket), so a landed file rewritten in any way, at the same size or
  not, makes what rests on it be made again, and the reader meets the damage and says so.

A file that does not hold is made again from the landed files and kept where the root may be
written: a reader of a read-only root keeps nothing (its ``OSError`` is ignored) and still
gets its answer. Bit rot that changes nothing the file system reports is beyond any stamp:
``asz verify`` reads every landed file.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

import orjson

if TYPE_CHECKING:
    from asz.store._backend import Backend
    from asz.store._layout import LandedName

__all__ = ["DerivedFile", "Kept", "Owner", "landed_mark", "mark_of", "stamp_of"]


class Owner(Protocol):
    """The session a derived file belongs to, as far as the file needs it: taken as this shape
    rather than as the session's class, which is built on derived files. The push record's
    snapshot (``asz.archive.record``) is the one file of this shape owned by something else:
    an archive, its mark the marker the push keeps in the bucket rather than landed files'."""

    id: str
    backend: Backend
    trusts_derived: bool
    made: dict[str, Kept]


def landed_mark(backend: Backend, names: Iterable[LandedName]) -> str:
    """What the landed files ``names`` are: their count and a digest of every path and stamp,
    in the order given."""
    return mark_of((name.path, stamp_of(backend, name.path)) for name in names)


def stamp_of(backend: Backend, path: str) -> str:
    """The landed file's stamp; a file gone since it was listed marks a state that does not
    last."""
    try:
        return backend.stamp(path)
    except OSError:
        return "gone"


def mark_of(stamps: Iterable[tuple[str, str]]) -> str:
    """:func:`landed_mark` of files whose stamps were taken already: ``(path, stamp)``."""
    digest = hashlib.sha256()
    count = 0
    for path, stamp in stamps:
        count += 1
        digest.update(f"{path} {stamp}\n".encode())
    return f"{count}:{digest.hexdigest()}"


@dataclass(frozen=True, slots=True)
class Kept:
    """What a derived file held, once it proved whole: the mark it was made at, and its value
    (JSON, to be checked for its kind by its reader, ``asz.store._cached``)."""

    mark: str
    value: Any


@dataclass(frozen=True, slots=True)
class DerivedFile:
    """One kind of derived file: where it is in a session, its schema, and the most it may be."""

    path_of: Callable[[str], str]
    """The file's path relative to the root, from the session id (``asz.store._layout``)."""
    schema: int
    limit: int

    def read(self, session: Owner) -> Kept | None:
        """What the file holds, or None when it is missing, not whole, of another schema or
        of another session."""
        return self.opened(session)[0]

    def opened(self, session: Owner) -> tuple[Kept | None, str | None]:
        """What the file holds (as :meth:`read`), and why it is damaged when it is: not whole
        as written (a file of another schema, as an older asz wrote it, is not damaged)."""
        try:
            data = session.backend.read(self.path_of(session.id), self.limit)
        except FileNotFoundError:
            return None, None
        except OSError as err:
            return None, f"cannot be read: {err.strerror or err}"
        head, newline, body = data.partition(b"\n")
        try:
            header = orjson.loads(head)
        except orjson.JSONDecodeError:
            return None, "is not whole: its first line is not its header"
        if not isinstance(header, dict) or header.get("schema") != self.schema:
            return None, None
        if header.get("session") != session.id:
            return None, f"names session {header.get('session')!r}"
        mark = header.get("landed")
        if not newline or header.get("sha256") != hashlib.sha256(body).hexdigest():
            return None, "is not whole: it does not match its sha256"
        if not isinstance(mark, str):
            return None, "is not whole: its header has no mark"
        try:
            return Kept(mark, orjson.loads(body)), None
        except orjson.JSONDecodeError:
            return None, "is not whole: it is not JSON"

    def held(self, session: Owner, mark: str) -> Any:
        """The value kept while it was made at ``mark``, else None."""
        kept = self.read(session)
        return kept.value if kept is not None and kept.mark == mark else None

    def encode(self, session: Owner, mark: str, value: Any) -> bytes:
        """The file's bytes. On the session ``asz verify`` makes afresh (one that trusts no
        derived file), what they hold is also noted in ``session.made``, which verify
        compares with the file it found; no other reader pays for that copy."""
        body = orjson.dumps(value)
        if not session.trusts_derived:
            session.made[self.path_of(session.id)] = Kept(mark, orjson.loads(body))
        header = {
            "schema": self.schema,
            "session": session.id,
            "landed": mark,
            "sha256": hashlib.sha256(body).hexdigest(),
        }
        return orjson.dumps(header) + b"\n" + body

    def write(self, session: Owner, mark: str, value: Any) -> None:
        """Replaces the file whole (``Backend.replace_derived``: atomic and private); OSError
        when it cannot be written."""
        data = self.encode(session, mark, value)
        session.backend.replace_derived(self.path_of(session.id), data)

    def keep(self, session: Owner, mark: str, value: Any) -> None:
        """:meth:`write`, where the root may be written: a reader of a read-only root gets its
        answer all the same."""
        with contextlib.suppress(OSError):
            self.write(session, mark, value)
