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
from collections.abc import Callable, Sequence
from typing import NoReturn, TypeVar

from asz.archive.bucket import Bucket, Meta
from asz.archive.cache import LocalCache
from asz.archive.location import ArchiveUrl
from asz.bodykeys import is_session_id
from asz.store.atomic import DirSyncs
from asz.store.backend import Entry, TempFile
from asz.store.errors import StorageUnavailable
from asz.store.layout import parse_landed

T = TypeVar("T")


def _landed(path: str) -> bool:
    directory, _, name = path.rpartition("/")
    return parse_landed(directory, name) is not None


class ArchiveBackend:
    """A root that is a prefix of a bucket; ``asz push`` is the only way anything gets in."""

    def __init__(self, url: ArchiveUrl, bucket: Bucket, cache: LocalCache) -> None:
        self.url = url
        self.bucket = bucket
        self.cache = cache
        self._listed: dict[str, list[Entry]] = {}
        self._meta: dict[str, Meta] = {}
        self._sessions_listed: set[str] = set()

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
            dirs, objects = _reading(directory, lambda: self.bucket.list_dir(directory))
            found = [Entry(name, True) for name in dirs]
            for meta in objects:
                self._meta[meta.path] = meta
                found.append(Entry(meta.path.rsplit("/", 1)[-1], False))
            self._listed[directory] = found
        return list(found)

    def _list_session(self, session: str) -> None:
        """Every directory under ``session``, from one listing of all its objects: a reader
        of a session lists its directories one after another, each a request otherwise."""
        objects = _reading(session, lambda: self.bucket.list_all(session + "/"))
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

    def _meta_of(self, path: str) -> Meta:
        meta = self._meta.get(path)
        if meta is None:
            meta = _reading(path, lambda: self.bucket.head(path))
            if meta is None:
                raise FileNotFoundError(errno.ENOENT, "no such object", self.describe(path))
            self._meta[path] = meta
        return meta

    def read(self, path: str, limit: int) -> bytes:
        if not _landed(path):
            return self.cache.derived(path)
        meta = self._meta_of(path)
        if meta.size > limit:
            raise OSError(errno.EFBIG, f"is {meta.size} bytes, more than a landed file may be")
        data = self.cache.landed(path, meta.etag)
        if data is None:
            data = _reading(path, lambda: self.bucket.get(path))
            self.cache.keep_landed(path, meta.etag, data)
        return data

    def read_range(self, path: str, start: int, length: int) -> bytes:
        meta = self._meta_of(path)
        data = self.cache.landed(path, meta.etag)
        if data is not None:
            return data[start : start + length]
        length = min(length, meta.size - start)
        return _reading(path, lambda: self.bucket.get_range(path, start, length))

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


def _read_only() -> NoReturn:
    raise OSError(errno.EROFS, "an archive is read-only; asz push is what writes to it")


def _reading(path: str, call: Callable[[], T]) -> T:
    """``call()``, with a failure the retries did not mend said as the OSError every reader of
    a root handles (the object named)."""
    try:
        return call()
    except OSError:
        raise
    except Exception as err:
        said = (str(err).splitlines() or [type(err).__name__])[0]
        raise StorageUnavailable(errno.EIO, f"the bucket did not answer: {said}", path) from None
