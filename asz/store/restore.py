"""``asz restore``: a session's landed transcripts written back as Claude Code had them.

Each source comes back under the directory given, at the path it had under the projects
directory, holding exactly the bytes that landed: every line up to the last one landed, or the
last copy of a sidecar. Pointing Claude Code's ``projects`` at that directory (or copying the
files back) makes a pruned session resumable again.

Restoring never destroys anything: an existing file holding other bytes is left as it is and
reported, a path in a landed header that is absolute or climbs with ``..`` is refused, and no
file is written through a link.
"""

from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from asz.config import Config
from asz.store.atomic import AlreadyExists, private_dir, publish_new
from asz.store.framing import LandedFileError
from asz.store.root import Root
from asz.store.transcripts import Reach, read_windows, stream_dirs


@dataclass(slots=True)
class RestoreRefused(Exception):
    """Some sources could not be restored; the others were."""

    refused: list[str] = field(default_factory=list)
    written: list[Path] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(self.refused)


@dataclass(slots=True)
class _Restorable:
    source: str
    data: bytes
    problem: str | None = None


def _stream_bytes(root: Root, session: str, directory: Path) -> _Restorable | None:
    """The bytes a stream dir gives back, or None when nothing of it landed."""
    reach = Reach()
    parts: list[bytes] = []
    source: str | None = None
    snapshot: bytes | None = None
    problem: str | None = None
    for item in root.landed(directory):
        try:
            windows = read_windows(item.path, session)
        except LandedFileError as err:
            problem = problem or str(err)
            continue
        for window in windows:
            source = source or window.source
            if window.source != source:
                problem = problem or f"{item.path}: holds {window.source}, not {source}"
            elif window.snapshot:
                snapshot = window.payload
            elif window.off > reach.end:
                problem = problem or f"{item.path}: bytes {reach.end}-{window.off} never landed"
            else:
                parts.append(reach.take(window)[2])
    if source is None:
        return None
    data = snapshot if snapshot is not None else b"".join(parts)
    return _Restorable(source, data, problem)


def safe_relpath(source: str) -> PurePosixPath | None:
    """The source path when it stays inside the target directory, else None."""
    path = PurePosixPath(source)
    if path.is_absolute() or "\\" in source or not path.parts:
        return None
    if any(part in ("", ".", "..") for part in source.split("/")):
        return None
    return path


def _no_links(base: Path, relpath: PurePosixPath) -> bool:
    """Whether every existing directory between ``base`` and the file is a real directory."""
    probe = base
    for part in relpath.parts[:-1]:
        probe = probe / part
        try:
            mode = os.lstat(probe).st_mode
        except FileNotFoundError:
            return True
        if not stat.S_ISDIR(mode):
            return False
    return True


def restore_session(root: Root, session: str, to_dir: Path) -> list[Path]:
    """Writes the session's landed transcripts under ``to_dir``; returns the files now there.

    A file that already holds the same bytes counts as restored. Raises RestoreRefused after
    restoring everything it could when some source was refused.
    """
    written: list[Path] = []
    refused: list[str] = []
    base = private_dir(to_dir)
    for directory in stream_dirs(root, session):
        restorable = _stream_bytes(root, session, directory)
        if restorable is None:
            continue
        relpath = safe_relpath(restorable.source)
        if relpath is None:
            refused.append(f"{restorable.source}: refused, it would land outside {to_dir}")
            continue
        if restorable.problem:
            refused.append(f"{restorable.source}: {restorable.problem}")
            continue
        target = base.joinpath(*relpath.parts)
        if not _no_links(base, relpath):
            refused.append(f"{restorable.source}: refused, a link or file is in the way")
            continue
        try:
            publish_new(target, restorable.data)
        except AlreadyExists:
            if not _holds(target, restorable.data):
                refused.append(f"{target}: exists with other bytes, left as it is")
                continue
        written.append(target)
    if refused:
        raise RestoreRefused(refused, written)
    return written


def _holds(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return stat.S_ISREG(os.fstat(fd).st_mode) and handle.read(len(data) + 1) == data


def restore_command(config: Config, session: str, to_dir: Path) -> int:
    """The command: 0 when every landed source is back, 1 otherwise."""
    root = Root(config.root)
    try:
        written = restore_session(root, session, to_dir)
    except RestoreRefused as err:
        for problem in err.refused:
            print(f"  refused: {problem}", file=sys.stderr)
        print(f"restored {len(err.written)} file(s) under {to_dir}")
        return 1
    if not written:
        print(f"asz: no landed transcripts of {session} under {root.path}", file=sys.stderr)
        return 1
    print(f"restored {len(written)} file(s) under {to_dir}")
    return 0
