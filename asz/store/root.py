"""The storage root's layout: which directory holds what, and the order of landed files.

::

    <root>/_lock                               one collector at a time (flock)
    <root>/_state/                             derived ledgers and cursors (rebuildable)
    <root>/<session>/provider_body/provider_body-<seq>.asz
    <root>/<session>/transcripts/<stream>/transcript-<seq>.asz

Only a UUID-form session id ever names a directory, and names starting with ``_`` are never
sessions. Sequence numbers are per session, shared by every kind, and never go back: the
next one is above the highest found on disk and above the one remembered in the session's
``seq`` file, so removing the newest file cannot make a number be used twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import secrets
import stat
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from asz.bodykeys import is_session_id
from asz.store.atomic import DIR_MODE, private_dir, remove_stale_temps, replace_derived

LANDED_SUFFIX = ".asz"
PROVIDER_BODY = "provider_body"
TRANSCRIPT = "transcript"
_LANDED_NAME = re.compile(r"^([a-z_]+)-(\d{8,})\.asz$")
_SEQ_FILE = "seq"
STATE_DIR = "_state"


class NotASession(ValueError):
    """A session id that is not in Claude Code's UUID form; it never names a directory."""


class Busy(Exception):
    """Another collector holds the root."""


@dataclass(frozen=True, slots=True)
class LandedPath:
    seq: int
    kind: str
    path: Path


class Root:
    """Paths and numbering inside one storage root."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def state_dir(self) -> Path:
        return self.path / STATE_DIR

    def ensure(self) -> None:
        private_dir(self.path)
        private_dir(self.state_dir)
        spread_sessions(self.path)

    def session_dir(self, session: str) -> Path:
        if not is_session_id(session):
            raise NotASession(f"{session!r} is not a Claude Code session id")
        return self.path / session

    def bodies_dir(self, session: str) -> Path:
        return self.session_dir(session) / PROVIDER_BODY

    def transcripts_dir(self, session: str) -> Path:
        return self.session_dir(session) / "transcripts"

    def sessions(self) -> list[str]:
        """Every session directory of the root, sorted; anything else is not a session."""
        try:
            entries = list(os.scandir(self.path))
        except FileNotFoundError:
            return []
        return sorted(
            entry.name
            for entry in entries
            if is_session_id(entry.name) and entry.is_dir(follow_symlinks=False)
        )

    def landed(self, directory: Path) -> list[LandedPath]:
        """The landed files directly in ``directory``, in sequence order."""
        try:
            entries = list(os.scandir(directory))
        except (FileNotFoundError, NotADirectoryError):
            return []
        found = []
        for entry in entries:
            match = _LANDED_NAME.match(entry.name)
            if match and entry.is_file(follow_symlinks=False):
                found.append(LandedPath(int(match.group(2)), match.group(1), Path(entry.path)))
        return sorted(found, key=lambda landed: landed.seq)

    def all_landed(self, session: str) -> Iterator[LandedPath]:
        """Every landed file of a session, of every kind (not ordered)."""
        base = self.session_dir(session)
        for directory, _dirs, files in os.walk(base):
            for name in files:
                match = _LANDED_NAME.match(name)
                if match:
                    yield LandedPath(int(match.group(2)), match.group(1), Path(directory, name))

    def next_seq(self, session: str) -> int:
        """The sequence number the session's next landed file takes."""
        highest = max((landed.seq for landed in self.all_landed(session)), default=0)
        try:
            remembered = int((self.session_dir(session) / _SEQ_FILE).read_text())
        except (FileNotFoundError, ValueError):
            remembered = 0
        return max(highest, remembered) + 1

    def has_landed(self, session: str) -> bool:
        """Whether the session has landed anything, by one stat: the sequence file is written
        after a session's first landed file is published (a session directory alone may hold
        only what a killed collector never published)."""
        return (self.session_dir(session) / _SEQ_FILE).exists()

    def remember_seq(self, session: str, seq: int) -> None:
        """Records that ``seq`` was used, so it is never handed out again.

        The file is derived and written without a disk sync: after a power cut it may be
        behind, empty or torn, and then the landed files, which are durable, still bound the
        next number from below.
        """
        replace_derived(self.session_dir(session) / _SEQ_FILE, f"{seq}\n".encode())

    @staticmethod
    def landed_name(kind: str, seq: int) -> str:
        return f"{kind}-{seq:08d}{LANDED_SUFFIX}"


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
    fd = os.open(root.path / "_lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | (0 if wait else fcntl.LOCK_NB))
        except BlockingIOError:
            raise Busy(f"another collector holds {root.path}") from None
        check_private(root)
        root.ensure()
        _remove_temps_of_others(root, fd)
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
        remove_stale_temps(root.path)
    token = secrets.token_bytes(_TOKEN_BYTES)
    os.pwrite(fd, token, 0)
    os.ftruncate(fd, _TOKEN_BYTES)
    _tokens[key] = token
