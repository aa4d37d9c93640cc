"""A bounded local cache of what was read from an archive, private to the user.

Landed files never change, so a copy read once serves every later command; it is kept under
the object's path and ETag, so an object changed in the bucket (a new ETag in the listing) is
read afresh and never answered from an old copy: ``verify`` sees what the bucket holds. A copy
is kept with the SHA-256 of its bytes and used only while it has the size the bucket lists and
that digest: a copy damaged on this disk is dropped and read again from the bucket, never
blamed on the object. The copies are bounded (``[archive] cache_bytes``): past the bound the
least recently used go.

Derived state (summaries, facts, kept cache reports) is never written to the bucket: a reader
must not write there, and another root's reader would not trust it anyway. It is kept here
instead, checked against the landed files like any derived file, so a second ``asz sessions``
over the bucket does not read every file again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
from pathlib import Path

__all__ = ["LocalCache", "default_cache_dir"]

_DIGEST = 32
"""Bytes of the SHA-256 kept after each copy."""
_DIR_MODE = 0o700
_FILE_MODE = 0o600


def default_cache_dir(env: dict[str, str] | os._Environ[str] | None = None) -> Path:
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "asz" / "archive"


class LocalCache:
    """One archive's cache directory: ``landed/`` copies, ``derived/`` state."""

    def __init__(self, base: Path, archive: str, limit: int) -> None:
        self.dir = base / hashlib.sha256(archive.encode()).hexdigest()[:16]
        self.limit = limit
        self._landed = self.dir / "landed"
        self._derived = self.dir / "derived"
        self._total: int | None = None

    def _name(self, path: str, etag: str) -> Path:
        return self._landed / hashlib.sha256(f"{path}\0{etag}".encode()).hexdigest()

    def holds(self, path: str, etag: str) -> bool:
        """Whether a copy of ``path`` under ``etag`` is kept (not whether it is whole)."""
        return bool(etag) and self._name(path, etag).is_file()

    def landed(self, path: str, etag: str, size: int) -> bytes | None:
        """The copy of ``path`` as it was under ``etag``, when it is whole: ``size`` bytes
        with the digest kept beside them; a copy that is not is dropped. Else None."""
        if not etag:
            return None
        name = self._name(path, etag)
        try:
            kept = name.read_bytes()
        except OSError:
            return None
        data, digest = kept[:-_DIGEST], kept[-_DIGEST:]
        if len(data) != size or hashlib.sha256(data).digest() != digest:
            with contextlib.suppress(OSError):
                os.unlink(name)  # damaged here, not in the bucket: read it again
            return None
        with contextlib.suppress(OSError):
            os.utime(name)  # recently used: evicted last
        return data

    def keep_landed(self, path: str, etag: str, data: bytes) -> None:
        """Keeps a copy when it fits the bound, evicting the least recently used."""
        if not etag or len(data) > self.limit:
            return
        with contextlib.suppress(OSError):
            _write(self._name(path, etag), data + hashlib.sha256(data).digest())
            if self._total is None:
                self._total = self._size()  # counted once, the new copy included
            else:
                self._total += len(data)
            if self._total > self.limit:
                self._evict()

    def _size(self) -> int:
        try:
            return sum(entry.stat().st_size for entry in os.scandir(self._landed))
        except OSError:
            return 0

    def _evict(self) -> None:
        entries = sorted(os.scandir(self._landed), key=lambda entry: entry.stat().st_mtime_ns)
        total = sum(entry.stat().st_size for entry in entries)
        keep = self.limit * 3 // 4
        for entry in entries:
            if total <= keep:
                break
            size = entry.stat().st_size
            with contextlib.suppress(OSError):
                os.unlink(entry.path)
                total -= size
        self._total = total

    def derived(self, path: str) -> bytes:
        """A derived file kept for the archive; OSError when there is none."""
        return (self._derived / path).read_bytes()

    def keep_derived(self, path: str, data: bytes) -> None:
        """Replaces a derived file whole; a cache that cannot be written costs only work."""
        with contextlib.suppress(OSError):
            _write(self._derived / path, data)


def _private_dirs(directory: Path) -> None:
    """Makes ``directory`` and each missing parent 0700 (``mkdir`` gives a parent the umask's
    mode), so the copies' names are as private as their bytes."""
    missing = []
    while not directory.is_dir():
        missing.append(directory)
        directory = directory.parent
    for made in reversed(missing):
        made.mkdir(mode=_DIR_MODE, exist_ok=True)
        os.chmod(made, _DIR_MODE)


def _write(target: Path, data: bytes) -> None:
    _private_dirs(target.parent)
    temp = target.with_name(f".tmp-{os.getpid()}-{target.name}")
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, _FILE_MODE)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.replace(temp, target)
