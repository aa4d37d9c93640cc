"""An archive read as a root: the store's ``Backend`` over a bucket, read-only.

Every reading command goes through the store (``asz.store``) as it does for a directory; this
backend answers its calls from the bucket with as few requests as the layout allows. A
directory is one delimited listing, kept for the life of the process (landed files are only
ever added), which also gives every object's size and ETag; a landed file is read once, whole,
into the local cache (``asz.archive.cache``) under its ETag, and a range of one not cached is
a ranged GET. Derived state is never read from or written to the bucket: it lives in the
local cache, so readers never write to the bucket.
"""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Callable, Sequence
from functools import partial
from typing import NoReturn, TypeVar

from asz.archive.ahead import AHEAD, ReadAhead
from asz.archive.bucket import Bucket, Meta
from asz.archive.cache import LocalCache
from asz.archive.failure import understand
from asz.archive.retry import Halted
from asz.atomic import DirSyncs
from asz.bodykeys import is_session_id
from asz.locations import ArchiveUrl
from asz.store import (
    SEQ_FILE,
    Entry,
    StorageUnavailable,
    TempFile,
    parse_extent,
    parse_generation_dir,
    parse_generation_file,
    parse_landed,
)

__all__ = ["ArchiveBackend", "Names", "Numbered", "reading"]

T = TypeVar("T")
_TWO_ROOTS = "the session's sequence holds files from two roots"
Names = list[str]
Numbered = dict[int, Names]
"""A session's landed files in the bucket by sequence number."""


def _landed(path: str) -> bool:
    """Whether ``path`` is an object a push put in the bucket and never replaces: a landed
    file, or a generation's manifest (``asz.store._generation``); anything else a reader
    derives, and keeps in the local cache."""
    directory, _, name = path.rpartition("/")
    return parse_landed(directory, name) is not None or parse_generation_file(name) is not None


def _family(path: str) -> str:
    """The generation directory a landed file is in (``<session>/g-<seq>``), or its session
    for an ordinary one: numbers repeat from one family to the next, never within one."""
    parts = path.split("/", 2)
    if len(parts) == 3 and parse_generation_dir(parts[1]) is not None:
        return f"{parts[0]}/{parts[1]}"
    return parts[0]


class ArchiveBackend:
    """A root that is a prefix of a bucket; ``asz push`` is the only way anything gets in."""

    derived_apart = True
    """Derived state written here goes to this machine's cache, never to the bucket, and
    races no collector: a reader that may not write into a root (the web server) keeps what
    it derives here, so its next start reads it rather than deriving it all again."""

    def __init__(self, url: ArchiveUrl, bucket: Bucket, cache: LocalCache) -> None:
        self.url = url
        self.bucket = bucket
        self.cache = cache
        self._listed: dict[str, list[Entry]] = {}
        self._meta: dict[str, Meta] = {}
        self._sessions_listed: set[str] = set()
        self._numbers: dict[str, Numbered] = {}
        """By family (:func:`_family`): a session's ordinary files, or one generation's."""
        self._lists: ReadAhead[str, list[Meta]] = ReadAhead()
        self._gets: ReadAhead[str, tuple[bytes, str]] = ReadAhead()

    @property
    def location(self) -> str:
        return str(self.url)

    def describe(self, path: str) -> str:
        return f"{self.url}/{path}" if path else str(self.url)

    def list(self, directory: str) -> list[Entry]:
        found = self._listed.get(directory)
        session = directory.split("/", 1)[0]
        if found is None and is_session_id(session) and session not in self._sessions_listed:
            self._list_session(session)
        if found is None and session in self._sessions_listed:
            found = self._listed.get(directory, [])  # nothing is under it
        if found is None:
            dirs, objects = reading(directory, lambda: self.bucket.list_dir(directory))
            found = [Entry(name, True) for name in dirs]
            for meta in objects:
                self._meta[meta.path] = meta
                found.append(Entry(meta.path.rsplit("/", 1)[-1], False))
            self._listed[directory] = found
        return list(found)

    def _list_session(self, session: str) -> None:
        """Every directory under ``session``, from one listing of all its objects: a reader
        of a session lists its directories one after another, each a request otherwise."""
        if not self._lists.started(session):
            for ahead in self._sessions_from(session):
                self._lists.start(ahead, partial(self.bucket.list_all, ahead + "/"))
        listing = partial(self.bucket.list_all, session + "/")
        objects = reading(session, partial(self._lists.take, session, listing))
        listed: dict[str, dict[str, Entry]] = {}
        for meta in objects:
            self._meta[meta.path] = meta
            parts = meta.path.split("/")
            for depth in range(1, len(parts)):
                directory, name = "/".join(parts[:depth]), parts[depth]
                is_dir = depth < len(parts) - 1
                listed.setdefault(directory, {}).setdefault(name, Entry(name, is_dir))
        for directory, entries in listed.items():
            self._listed[directory] = list(entries.values())
        self._sessions_listed.add(session)

    def _sessions_from(self, session: str) -> Names:
        """``session`` and the next few of the root's sessions not listed yet: a reader of
        many sessions reads them one after another."""
        entries = self._listed.get("", [])
        root = sorted(e.name for e in entries if e.is_dir and is_session_id(e.name))
        after = root[root.index(session) :] if session in root else [session]
        fresh = [s for s in after if s not in self._sessions_listed and not self._lists.started(s)]
        return fresh[:AHEAD]

    def _fetch_from(self, path: str) -> None:
        """Starts reading ``path`` and the next few landed files of its session that are
        not cached: a reader of a session reads its files one after another."""
        seq, numbers = self._numbered(path)
        later = [key for number in sorted(numbers) if number >= seq for key in numbers[number]]
        fetching = [
            key
            for key in later[: AHEAD * 2]
            if key == path or not self.cache.holds(key, self._meta[key].etag)
        ]
        for key in fetching[:AHEAD]:
            self._gets.start(key, partial(self.bucket.get_noted, key))

    def _meta_of(self, path: str) -> Meta:
        meta = self._meta.get(path)
        if meta is None:
            meta = reading(path, lambda: self.bucket.head(path))
            if meta is None:
                raise FileNotFoundError(errno.ENOENT, "no such object", self.describe(path))
            self._meta[path] = meta
        return meta

    def read(self, path: str, limit: int) -> bytes:
        if not _landed(path):
            session, _, name = path.partition("/")
            if name == SEQ_FILE and is_session_id(session):
                return self._extent(session)
            return self.cache.derived(path)
        meta = self._meta_of(path)
        if meta.size > limit:
            raise OSError(errno.EFBIG, f"is {meta.size} bytes, more than a landed file may be")
        self._one_root(path)
        data = self.cache.landed(path, meta.etag, meta.size)
        if data is None:
            if not self._gets.started(path):
                self._fetch_from(path)
            fetch = partial(self._gets.take, path, partial(self.bucket.get_noted, path))
            data, follows = reading(path, fetch)
            self._follows(path, follows)
            self.cache.keep_landed(path, meta.etag, data)  # checked: not checked again
        return data

    def _extent(self, session: str) -> bytes:
        """What a session's ``seq`` file is to a reader of a bucket: the highest number a
        push said it was sending (``extent-<n>``, created before the files), so that a
        session whose newest files are not there reads as incomplete (``Session.gaps``)."""
        promised = [parse_extent(entry.name) for entry in self.list(session) if not entry.is_dir]
        return str(max((n for n in promised if n is not None), default=0)).encode()

    def _numbered(self, path: str) -> tuple[int, Numbered]:
        """The sequence number of ``path``, and every landed file of its family (the
        session's ordinary files, or one generation's) by number."""
        session = path.split("/", 1)[0]
        if session not in self._sessions_listed:
            self.list(session)
        if session not in self._numbers:
            for key in sorted(self._meta):
                found = parse_landed(*key.rsplit("/", 1)) if key.startswith(session + "/") else None
                if found is not None:
                    family = self._numbers.setdefault(_family(key), {})
                    family.setdefault(found.seq, []).append(key)
            self._numbers.setdefault(session, {})
        name = parse_landed(*path.rsplit("/", 1))
        return (name.seq if name else -1), self._numbers.get(_family(path), {})

    def _one_root(self, path: str) -> None:
        """A root numbers its session's files once each: two files with one number in the
        bucket are two roots' (a copy of the root that diverged), and neither rebuilds."""
        seq, numbers = self._numbered(path)
        if len(numbers.get(seq, [])) > 1:
            both = " and ".join(self.describe(key) for key in numbers[seq])
            raise OSError(errno.EIO, f"{_TWO_ROOTS}: {both} are both number {seq}")

    def _follows(self, path: str, follows: str) -> None:
        """The file before ``path`` in its session, as its push noted it (``FOLLOWS``), must
        be the one the bucket holds at that number: else the session continues one root's
        files with another's."""
        number, _, digest = follows.partition(":")
        if not number.isdigit():
            return  # pushed without the note: nothing to compare
        self._numbered(path)
        # The file before it may be of a generation (the first file landed after a repack
        # follows the generation's last), so the note holds when any file of that number
        # in the session's families is the one it names.
        session = path.split("/", 1)[0]
        own = _family(path)
        families = sorted(
            (f for f in self._numbers if f.split("/", 1)[0] == session), key=lambda f: f != own
        )
        earlier = [key for f in families for key in self._numbers[f].get(int(number), [])]
        for key in earlier:
            known = self._meta_of(key)
            data = self.cache.landed(key, known.etag, known.size)
            if data is None:
                data = reading(key, partial(self.bucket.get, key))
            if hashlib.sha256(data).hexdigest() == digest:
                return
        if earlier:
            said = f"{_TWO_ROOTS}: it was pushed after another number {number} than"
            raise OSError(errno.EIO, f"{said} {self.describe(earlier[0])}")

    def read_range(self, path: str, start: int, length: int) -> bytes:
        meta = self._meta_of(path)
        data = self.cache.landed(path, meta.etag, meta.size)
        if data is not None:
            return data[start : start + length]
        length = min(length, meta.size - start)
        return reading(path, lambda: self.bucket.get_range(path, start, length))

    def exists(self, path: str) -> bool:
        if not _landed(path):
            try:
                self.cache.derived(path)
            except OSError:
                return False
            return True
        try:
            self._meta_of(path)
        except OSError:
            return False
        return True

    def size(self, path: str) -> int:
        return self._meta_of(path).size

    def stamp(self, path: str) -> str:
        # An object put again gets a new ETag, whatever its size.
        meta = self._meta_of(path)
        return f"{meta.size}:{meta.etag}"

    def write_temp(self, path: str, data: bytes) -> TempFile:
        _read_only()

    def read_temp(self, temp: TempFile) -> bytes:
        _read_only()

    def publish(
        self,
        temps: Sequence[TempFile],
        defer: DirSyncs | None,
        published: Callable[[int], None],
    ) -> None:
        _read_only()

    def remove_temp(self, temp: TempFile) -> None:
        _read_only()

    def replace_derived(self, path: str, data: bytes) -> None:
        self.cache.keep_derived(path, data)

    def remove(self, path: str) -> None:
        _read_only()


def _read_only() -> NoReturn:
    raise OSError(errno.EROFS, "an archive is read-only; asz push is what writes to it")


def reading(path: str, call: Callable[[], T]) -> T:
    """``call()``, with a failure the retries did not mend said as the OSError every reader of
    a root handles (the object named): for any request to a bucket, a read or a write."""
    try:
        return call()
    except OSError:
        raise
    except Halted as err:  # the bucket, the credentials or the network: no read will do
        raise StorageUnavailable(errno.EIO, err.said, path) from None
    except Exception as err:
        said = f"the bucket did not answer: {understand(err).said}"
        raise StorageUnavailable(errno.EIO, said, path) from None
