"""The local storage root as a directory: its lock, its privacy, where derived state goes.

The layout of a root is described in :mod:`asz.store` and ``docs/format.md``; this module
holds what only a root on this machine has: the collector lock (one collector at a time), the
checks that make it safe to write into, and the place of the adapters' derived state.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import stat
import struct
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

from asz.atomic import DIR_MODE, private_dir, remove_stale_temps
from asz.bodykeys import is_session_id
from asz.store._layout import LANDING_LOCK_FILE, LOCK_FILE, REDACTED_DIR, STATE_DIR, session_dir

__all__ = [
    "Busy",
    "Root",
    "UnsafeRoot",
    "check_private",
    "collector_lock",
    "landing_lock",
    "spread_sessions",
    "state_lock",
]


class Busy(Exception):
    """Another collector holds the root."""


class Root:
    """A storage root that is a directory on this machine."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def state_dir(self) -> Path:
        """Where the adapters keep their derived state."""
        return self.path / STATE_DIR

    def ensure(self) -> None:
        private_dir(self.path)
        private_dir(self.state_dir)
        spread_sessions(self.path)

    def session_dir(self, session: str) -> Path:
        """The session's directory; NotASession for an id not in Claude Code's form."""
        return self.path / session_dir(session)


_FS_TOPDIR_FL = 0x00020000
_LONG = struct.calcsize("l")
_FS_IOC_GETFLAGS = (2 << 30) | (_LONG << 16) | (ord("f") << 8) | 1
_FS_IOC_SETFLAGS = (1 << 30) | (_LONG << 16) | (ord("f") << 8) | 2


def spread_sessions(path: Path) -> None:
    """Marks the root as the top of unrelated directory trees (``chattr +T``), where the
    filesystem has the flag; elsewhere nothing changes.

    Each session directory is a tree of its own, and ext4 then places each one in a block
    group with inodes to spare instead of next to the root. Next to many recently deleted
    files (a busy ``/tmp``, a home directory with churn), ext4 without a journal skips each of
    them when it allocates an inode, and a landing pass, which creates several inodes per
    transcript, spent most of its time there.
    """
    if sys.platform != "linux":
        return
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except OSError:
        return
    try:
        (flags,) = struct.unpack("i", fcntl.ioctl(fd, _FS_IOC_GETFLAGS, bytes(4)))
        if not flags & _FS_TOPDIR_FL:
            fcntl.ioctl(fd, _FS_IOC_SETFLAGS, struct.pack("i", flags | _FS_TOPDIR_FL))
    except OSError:
        pass
    finally:
        os.close(fd)


class UnsafeRoot(Exception):
    """The root holds, where asz writes, a link or a directory of another user."""


def _check_owner(root: Root) -> os.stat_result:
    """Refuses a root directory of another user, before anything is created in it."""
    info = os.stat(root.path)
    if info.st_uid != os.geteuid():
        raise UnsafeRoot(f"{root.path} belongs to another user (uid {info.st_uid})")
    return info


def check_private(root: Root) -> None:
    """Makes the root private, and refuses one where asz would write through a link or into a
    directory another user owns.

    Anyone who could write into the root (a root made before asz took it, on a shared
    machine) could otherwise send its landing elsewhere with a link named like a session, or
    read along in a session directory of their own making.
    """
    me = os.geteuid()
    info = _check_owner(root)
    if stat.S_IMODE(info.st_mode) != DIR_MODE:
        os.chmod(root.path, DIR_MODE)
    with os.scandir(root.path) as entries:
        for entry in entries:
            if entry.name != STATE_DIR and not is_session_id(entry.name):
                continue
            held = entry.stat(follow_symlinks=False)
            if stat.S_ISLNK(held.st_mode):
                why = "is a symbolic link"
            elif not stat.S_ISDIR(held.st_mode):
                why = "is not a directory"
            elif held.st_uid != me:
                why = f"belongs to another user (uid {held.st_uid})"
            else:
                continue
            raise UnsafeRoot(f"{entry.path} {why}; asz writes only into directories of its own")


@contextlib.contextmanager
def collector_lock(root: Root, wait: bool = False) -> Iterator[None]:
    """Holds the root for one collector; raises Busy at once unless ``wait``, and UnsafeRoot
    when the root is not safe to write into (see :func:`check_private`).

    The kernel releases an flock when its process dies, so a crashed collector never leaves
    the root locked; what it was writing is left as temporary files, removed here once the
    lock is held (see :func:`_remove_temps_of_others`).
    """
    private_dir(root.path)
    _check_owner(root)
    fd = os.open(root.path / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise Busy(f"another collector holds {root.path}") from None
        check_private(root)
        root.ensure()
        _remove_temps_of_others(root, fd)
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def state_lock(root: Path, name: str, busy: Callable[[], Exception]) -> Iterator[None]:
    """Holds ``_state/<name>``, one holder at a time (a push, an export): raises ``busy()``
    at once when another holds it, and UnsafeRoot where ``_state`` would be reached through
    a link or another user's directory. Like the collector's, the lock goes with its process."""
    held = Root(root)
    check_private(held)
    private_dir(held.state_dir)
    fd = os.open(held.state_dir / name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy() from None
        yield
    finally:
        os.close(fd)


@contextlib.contextmanager
def landing_lock(root: Path) -> Iterator[None]:
    """Held by a landing pass while it lands, and by a new generation while it is published
    and what it replaced is retired (``asz.store._generation``): the service holds the
    collector lock for its whole life, so a repack beside it waits for this one instead, and a
    pass never reads a session whose files are being swapped. Each waits for the other. The
    caller has checked the root (``collector_lock``, ``state_lock``), so a pass pays only for
    the lock."""
    state = private_dir(root / STATE_DIR)
    fd = os.open(state / LANDING_LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


_TOKEN_BYTES = 16
_tokens: dict[Path, bytes] = {}
"""The token this process last wrote into each root's lock file."""


def _remove_temps_of_others(root: Root, fd: int) -> None:
    """Removes the temporary files killed collectors left, unless this process held the root
    last.

    Removing them walks the whole root, which grows with every session. Each holder writes a
    fresh token into the lock file, so finding the one this process wrote means no other
    process has held the root since; and this process's own writes remove their temporary
    files whatever fails, short of the process being killed.
    """
    key = root.path.absolute()
    found = os.pread(fd, _TOKEN_BYTES + 1, 0)
    if found != _tokens.get(key):
        # The redacted files a push makes are the push lock's, not this lock's.
        remove_stale_temps(root.path, skip=root.state_dir / REDACTED_DIR)
    token = secrets.token_bytes(_TOKEN_BYTES)
    os.pwrite(fd, token, 0)
    os.ftruncate(fd, _TOKEN_BYTES)
    _tokens[key] = token
