"""How the store reaches its files: one small interface, and a local directory behind it.

Everything that reads or writes landed files goes through :class:`Backend`, with paths
relative to the root (``asz.store._layout``), so that a root held elsewhere (a bucket) is one
new implementation of these few calls: list, read, read a range, write a temporary file that
can only be created, publish temporaries under their final names without replacing anything,
remove a temporary, replace a file of derived state whole, remove what no reader counts any
more (and three looks: whether a file is there, its size, and its stamp).
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn, Protocol

from asz.atomic import (
    DirSyncs,
    LocalTemp,
    publish_temps,
    remove_temp,
    replace_derived,
    write_temp,
)

__all__ = ["Backend", "Entry", "LocalBackend", "RefusesLanding", "TempFile", "size_of"]

_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class Entry:
    """A name directly in a directory: a regular file, or a directory (``is_dir``)."""

    name: str
    is_dir: bool


class TempFile(Protocol):
    """A file written but not published; ``path`` is where it is to be published."""

    @property
    def path(self) -> str: ...


class Backend(Protocol):
    """What the store needs of whatever holds a root. Paths are relative to the root."""

    derived_apart: bool
    """Whether derived state written here lands apart from the root (an archive's local
    cache), where a reader that may not write into the root may keep what it derives."""

    @property
    def location(self) -> str:
        """The root as a person names it (a directory, a URL)."""
        ...

    def describe(self, path: str) -> str:
        """How ``path`` is named in problems and errors."""
        ...

    def list(self, directory: str) -> list[Entry]:
        """The regular files and directories directly in ``directory`` (never through a
        link), unsorted; empty when it does not exist."""
        ...

    def read(self, path: str, limit: int) -> bytes:
        """The whole file; OSError when it cannot be read or is larger than ``limit``
        (``errno.EFBIG``), before anything is allocated for it."""
        ...

    def read_range(self, path: str, start: int, length: int) -> bytes:
        """At most ``length`` bytes from ``start`` (fewer at the end of the file)."""
        ...

    def exists(self, path: str) -> bool:
        """Whether a regular file is at ``path``."""
        ...

    def size(self, path: str) -> int:
        """The length of the file at ``path``; OSError when there is none."""
        ...

    def stamp(self, path: str) -> str:
        """What tells the file at ``path`` apart from any other version of it without reading
        it (on a disk: its size, times and inode; in a bucket: its size and ETag); OSError when
        there is none. A landed file never changes once published, so a stamp that changed is
        a file rewritten, and what was derived from it is made again (``asz.store._derived``)."""
        ...

    def write_temp(self, path: str, data: bytes) -> TempFile:
        """Writes ``data`` to be published at ``path`` later, private to the user."""
        ...

    def read_temp(self, temp: TempFile) -> bytes:
        """What was written for ``temp``, read back from where it was written."""
        ...

    def publish(
        self,
        temps: Sequence[TempFile],
        defer: DirSyncs | None,
        published: Callable[[int], None],
    ) -> None:
        """Makes ``temps`` durable, then publishes each in order (``published(i)`` after
        the ``i``-th), refusing to replace any file (``AlreadyExists``). With ``defer``,
        what must still be flushed for the names to be durable is recorded there."""
        ...

    def remove_temp(self, temp: TempFile) -> None:
        """Removes a temporary file whether or not it was published."""
        ...

    def replace_derived(self, path: str, data: bytes) -> None:
        """Replaces a file of derived state whole, without waiting for the disk (derived
        state is checked against the landed files and rebuilt, so a lost one costs work)."""
        ...

    def remove(self, path: str) -> None:
        """Removes a file, or an empty directory, that no reader counts any more: a landed
        file a generation replaced (``asz.store._generation``), or one never published. Gone
        already is no error."""
        ...


def size_of(backend: Backend, path: str) -> int:
    """The size of a landed file; 0 when it is gone since it was listed (reading it is what
    says so)."""
    try:
        return backend.size(path)
    except OSError:
        return 0


class LocalBackend:
    """A root that is a directory on this machine."""

    derived_apart = False

    def __init__(self, path: Path) -> None:
        self.path = path
        self._base = str(path)

    @property
    def location(self) -> str:
        return self._base

    def _at(self, path: str) -> Path:
        return self.path / path if path else self.path

    def _os_path(self, path: str) -> str:
        """``path`` under the root as a string: what the reads hand to ``os``, which a
        ``Path`` joined per call would cost several times over on every listing and stamp."""
        return f"{self._base}/{path}" if path else self._base

    def describe(self, path: str) -> str:
        return self._os_path(path)

    def list(self, directory: str) -> list[Entry]:
        try:
            with os.scandir(self._os_path(directory)) as entries:
                found = []
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        found.append(Entry(entry.name, True))
                    elif entry.is_file(follow_symlinks=False):
                        found.append(Entry(entry.name, False))
                return found
        except (FileNotFoundError, NotADirectoryError):
            return []

    def read(self, path: str, limit: int) -> bytes:
        fd = os.open(self._os_path(path), _READ_FLAGS)
        with os.fdopen(fd, "rb") as handle:
            size = os.fstat(fd).st_size
            if size > limit:
                raise OSError(errno.EFBIG, f"is {size} bytes, more than a landed file may be", path)
            return handle.read()

    def read_range(self, path: str, start: int, length: int) -> bytes:
        fd = os.open(self._os_path(path), _READ_FLAGS)
        try:
            return os.pread(fd, length, start)
        finally:
            os.close(fd)

    def exists(self, path: str) -> bool:
        try:
            return stat.S_ISREG(os.lstat(self._os_path(path)).st_mode)
        except OSError:
            return False

    def size(self, path: str) -> int:
        return os.lstat(self._os_path(path)).st_size

    def stamp(self, path: str) -> str:
        # The ctime and inode move with any rewrite, even one that puts the mtime back.
        info = os.lstat(self._os_path(path))
        return f"{info.st_size}:{info.st_mtime_ns}:{info.st_ctime_ns}:{info.st_ino}"

    def write_temp(self, path: str, data: bytes) -> LocalTemp:
        return write_temp(self._at(path), data, path)

    def read_temp(self, temp: TempFile) -> bytes:
        assert isinstance(temp, LocalTemp)
        return temp.temp.read_bytes()

    def publish(
        self,
        temps: Sequence[TempFile],
        defer: DirSyncs | None,
        published: Callable[[int], None],
    ) -> None:
        local = [temp for temp in temps if isinstance(temp, LocalTemp)]
        assert len(local) == len(temps)
        publish_temps(local, defer, published)

    def remove_temp(self, temp: TempFile) -> None:
        assert isinstance(temp, LocalTemp)
        remove_temp(temp)

    def replace_derived(self, path: str, data: bytes) -> None:
        replace_derived(self._at(path), data)

    def remove(self, path: str) -> None:
        target = self._at(path)
        try:
            if stat.S_ISDIR(os.lstat(target).st_mode):
                target.rmdir()
            else:
                target.unlink()
        except FileNotFoundError:
            return


class RefusesLanding:
    """The landing half of ``Backend`` for a view of a root that is never written through (the
    web server's, a redacted one): each call refuses, ``EROFS``, saying ``REFUSAL``."""

    REFUSAL = "this view never writes to the root"

    def write_temp(self, path: str, data: bytes) -> NoReturn:
        self._refuse(path)

    def publish(
        self,
        temps: Sequence[TempFile],
        defer: DirSyncs | None,
        published: Callable[[int], None],
    ) -> NoReturn:
        self._refuse(temps[0].path if temps else "")

    def remove_temp(self, temp: TempFile) -> NoReturn:
        self._refuse(temp.path)

    def remove(self, path: str) -> NoReturn:
        self._refuse(path)

    def _refuse(self, path: str) -> NoReturn:
        raise PermissionError(errno.EROFS, self.REFUSAL, path)
