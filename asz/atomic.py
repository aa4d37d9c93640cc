"""Private, crash-safe file creation: the only way anything is written under the storage root.

A landed file must never be seen half-written and must never replace another file, so it is
written to a temporary name in the same directory, made durable, published under its final
name with a hard link (which fails instead of overwriting), and the directory is made durable
too, at once or, for a pass landing many files, once per directory (:class:`DirSyncs`). Many
files written together are published together after one filesystem sync
(:func:`publish_temps`), which costs the disk one flush instead of one per file. Derived
state, which is rebuilt from the landed files, is replaced atomically but not flushed. Everything is
created private to the user whatever the umask: files 0600, directories 0700.

``ASZ_FAULT=enospc:<n>`` or ``eio:<n>`` makes the ``n``-th file this process writes fail the
way a full disk (part of the bytes written, then ENOSPC, and so on for every later file) or a
failing disk (EIO when the file is flushed, that file only) does, so the handling of both can
be proven on any filesystem.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import itertools
import os
import secrets
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "DIR_MODE",
    "FILE_MODE",
    "SYNCFS_MIN_PATHS",
    "TEMP_PREFIX",
    "AlreadyExists",
    "DirSyncs",
    "LocalTemp",
    "fsync_dir",
    "private_dir",
    "publish_new",
    "publish_temps",
    "remove_stale_temps",
    "remove_temp",
    "replace_derived",
    "replace_durable",
    "write_temp",
]

FILE_MODE = 0o600
DIR_MODE = 0o700
TEMP_PREFIX = ".tmp-"
SYNCFS_MIN_PATHS = 16
"""From this many files or directories to flush, one sync of their filesystem is cheaper."""


class AlreadyExists(FileExistsError):
    """Publishing would have replaced an existing file."""


def private_dir(path: Path) -> Path:
    """Creates ``path`` and its missing parents as 0700 directories; returns it."""
    _make_dirs(path)
    return path


def _make_dirs(path: Path) -> list[Path]:
    """Creates ``path`` and its missing parents as 0700 directories; the ones it created."""
    missing: list[Path] = []
    probe = path
    while not probe.exists():
        missing.append(probe)
        probe = probe.parent
    missing.reverse()
    for directory in missing:
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=DIR_MODE)
        os.chmod(directory, DIR_MODE)
    return missing


def fsync_dir(path: Path) -> None:
    """Makes a rename or link in ``path`` durable (best effort where directories cannot sync)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _load_syncfs() -> Callable[[int], int] | None:
    """``syncfs(2)`` from the C library where there is one (Linux), else None."""
    try:
        function = ctypes.CDLL(None, use_errno=True).syncfs
    except (OSError, AttributeError):
        return None
    function.argtypes = [ctypes.c_int]
    function.restype = ctypes.c_int
    return function


_syncfs = _load_syncfs()


def _sync_filesystem_of(path: Path) -> None:
    """Flushes every dirty byte and entry of the filesystem holding ``path``; raises on error
    (Linux reports a writeback error of any file there since the last such sync)."""
    assert _syncfs is not None
    fd = os.open(path, os.O_RDONLY)
    try:
        if _syncfs(fd) != 0:
            code = ctypes.get_errno()
            raise OSError(code, os.strerror(code), str(path))
    finally:
        os.close(fd)


def _flush(paths: Iterable[Path], *, directories: bool) -> None:
    """Makes ``paths`` durable: a sync each for a few, one sync per filesystem for many.

    Each ``fsync`` of a new file waits for a journal commit, so a pass landing thousands of
    files spends most of its time there; one ``syncfs`` commits them all at once. It also
    flushes what other programs wrote to that filesystem, which is why a few files are still
    flushed one by one.
    """
    paths = list(paths)
    if _syncfs is None or len(paths) < SYNCFS_MIN_PATHS:
        for path in paths:
            if directories:
                fsync_dir(path)
            else:
                _fsync_file(path)
        return
    by_device: dict[int, Path] = {}
    for path in paths:
        by_device.setdefault(os.stat(path).st_dev, path)
    for path in by_device.values():
        _sync_filesystem_of(path)


_FAULT_ENV = "ASZ_FAULT"
_writes = itertools.count(1)


def _injected_fault() -> int | None:
    """The errno the file being written must fail with, when ``ASZ_FAULT`` says so."""
    wanted = os.environ.get(_FAULT_ENV)
    if not wanted:
        return None
    write = next(_writes)
    kind, _, nth = wanted.partition(":")
    first = int(nth or 1)
    if kind == "enospc" and write >= first:
        return errno.ENOSPC
    if kind == "eio" and write == first:
        return errno.EIO
    return None


class DirSyncs:
    """Directories whose new entries are made durable together, each synced once.

    Syncing a directory right after each file published in it waits for the disk once per
    file; a pass landing many files records the directories instead and syncs each once
    before it reports anything as landed. Until then a power cut may lose a published file,
    exactly as it may lose one not yet published: its source is landed again from the cursor,
    which is derived and rebuilt whenever it does not match the landed files. The parents of
    directories created on the way are recorded too, so a new directory's entry is durable.
    Several threads of one pass may record into the same instance.
    """

    def __init__(self) -> None:
        self._pending: set[Path] = set()
        self._lock = threading.Lock()

    def add(self, directory: Path, created: list[Path]) -> None:
        """Records ``directory`` and the parent of each directory in ``created``."""
        with self._lock:
            self._pending.add(directory)
            self._pending.update(made.parent for made in created)

    def take(self) -> list[Path]:
        """The directories recorded since the last take, each once."""
        with self._lock:
            pending, self._pending = self._pending, set()
        return sorted(pending)

    def flush(self) -> None:
        """Makes the entries of every directory recorded since the last take durable (best
        effort: a directory that cannot be synced is skipped, as :func:`fsync_dir` does)."""
        directories = self.take()
        try:
            _flush(directories, directories=True)
        except OSError:
            for directory in directories:
                fsync_dir(directory)


def _write_temp(directory: Path, data: bytes) -> Path:
    """Writes ``data`` to a new private temporary file in ``directory``, without flushing it."""
    temp = directory / f"{TEMP_PREFIX}{secrets.token_hex(8)}"
    fault = _injected_fault()
    fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
    try:
        os.fchmod(fd, FILE_MODE)
        view = memoryview(data)
        if fault == errno.ENOSPC:
            os.write(fd, view[: len(view) // 2])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(temp))
        while view:
            written = os.write(fd, view)
            view = view[written:]
        if fault == errno.EIO:
            raise OSError(errno.EIO, os.strerror(errno.EIO), str(temp))
    except BaseException:
        os.close(fd)
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    os.close(fd)
    return temp


@dataclass(slots=True)
class LocalTemp:
    """A file written under a temporary name, to be published at ``final``."""

    path: str
    """Where it is published, relative to whatever the caller counts paths from."""
    temp: Path
    final: Path
    created: list[Path]
    """The directories made on the way to ``final``'s parent."""


def write_temp(final: Path, data: bytes, path: str = "") -> LocalTemp:
    """Writes ``data`` under a temporary name beside ``final`` (its missing parent directories
    made private), without flushing it."""
    created = _make_dirs(final.parent)
    return LocalTemp(path or str(final), _write_temp(final.parent, data), final, created)


def publish_temps(
    temps: Sequence[LocalTemp],
    syncs: DirSyncs | None = None,
    published: Callable[[int], None] | None = None,
) -> None:
    """Makes ``temps`` durable (one flush for all), then publishes each under its final name,
    in order, never replacing a file (``published(i)`` runs after the ``i``-th). Their
    directories are synced at the end, or recorded in ``syncs`` for the caller to sync later.
    Raises, publishing nothing more, when a file cannot be flushed or published; the caller
    removes the temporary files either way."""
    directories = DirSyncs() if syncs is None else syncs
    _flush((item.temp for item in temps), directories=False)
    for i, item in enumerate(temps):
        _link_no_replace(item.temp, item.final)
        directories.add(item.final.parent, item.created)
        if published is not None:
            published(i)
    if syncs is None:
        directories.flush()


def remove_temp(temp: LocalTemp) -> None:
    with contextlib.suppress(FileNotFoundError):
        temp.temp.unlink()


def publish_new(
    path: Path,
    data: bytes,
    check: Callable[[Path], None] | None = None,
    syncs: DirSyncs | None = None,
) -> None:
    """Writes ``data`` as a new file at ``path``, atomically; refuses to replace anything.

    ``check`` reads the written temporary file back before it is published; if it raises,
    nothing is published. The file's bytes are durable before it is published; its directory
    is synced at once, or recorded in ``syncs`` for the caller to sync later.
    """
    temp = write_temp(path, data)
    try:
        if check is not None:
            check(temp.temp)
        publish_temps([temp], syncs)
    finally:
        remove_temp(temp)


def _link_no_replace(temp: Path, path: Path) -> None:
    try:
        os.link(temp, path)
    except FileExistsError:
        raise AlreadyExists(errno.EEXIST, "refusing to replace a landed file", str(path)) from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
            raise
        # Filesystems without hard links: the caller holds the root lock, so check-then-rename
        # cannot race another asz writer.
        if path.exists():
            raise AlreadyExists(
                errno.EEXIST, "refusing to replace a landed file", str(path)
            ) from None
        os.rename(temp, path)


def replace_derived(path: Path, data: bytes) -> None:
    """Atomically replaces a file of derived state (a cursor, a cache), without a disk sync.

    Running processes see the old or the new file, whole. After a power cut it may be the old
    one, an empty one or a torn one: derived state is checked against the landed files and
    rebuilt from them whenever it is unreadable or does not match, so that costs a rebuild,
    never data, while syncing it would double the disk waits of every landing.
    """
    directory = private_dir(path.parent)
    temp = _write_temp(directory, data)
    try:
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise


def replace_durable(path: Path, data: bytes) -> None:
    """Atomically replaces a file, durably: for a record whose loss would cost more than a
    rebuild (what a writer already sent elsewhere). After a power cut it is the old file or
    the new one, whole."""
    directory = private_dir(path.parent)
    temp = _write_temp(directory, data)
    try:
        _fsync_file(temp)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
    fsync_dir(directory)


def remove_stale_temps(directory: Path, skip: Path | None = None) -> int:
    """Removes the temporary files that killed writers left anywhere below ``directory``,
    except below ``skip`` (a directory another lock's holder writes).

    They were never published, so nothing refers to them. Only the holder of the root's lock
    may call this: a live writer's temporary file looks just like a dead one's.
    """
    removed = 0
    for parent, dirs, files in os.walk(directory):
        if skip is not None:
            dirs[:] = [name for name in dirs if Path(parent, name) != skip]
        for name in files:
            if name.startswith(TEMP_PREFIX):
                with contextlib.suppress(FileNotFoundError):
                    os.unlink(os.path.join(parent, name))
                    removed += 1
    return removed
