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
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from asz.atomic import AlreadyExists, private_dir, publish_new
from asz.progress import Progress
from asz.store import TRANSCRIPT_KIND, DamagedTranscript, Session, TranscriptNotFound

__all__ = ["RestoreRefused", "Restored", "restore_session", "safe_relpath"]


@dataclass(slots=True)
class Restored:
    """The files a restore left in place, split by whether it wrote them: a file already
    holding the landed bytes counts as restored, but a person told that files were written
    when none were would look for a change that is not there."""

    written: list[Path] = field(default_factory=list)
    """Files this restore wrote."""
    present: list[Path] = field(default_factory=list)
    """Files that already held the bytes that landed, left as they were."""

    @property
    def files(self) -> list[Path]:
        """Every file now holding its source's landed bytes."""
        return [*self.written, *self.present]


@dataclass(slots=True)
class RestoreRefused(Exception):
    """Some sources could not be restored; the others were."""

    refused: list[str] = field(default_factory=list)
    restored: Restored = field(default_factory=Restored)

    def __str__(self) -> str:
        return "; ".join(self.refused)


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


def restore_session(session: Session, to_dir: Path, progress: Progress | None = None) -> Restored:
    """Writes the session's landed transcripts under ``to_dir``; returns the files now there.

    A file that already holds the same bytes counts as restored, and is not written again.
    Raises RestoreRefused after restoring everything it could when some source was refused.
    ``progress`` is told of each landed transcript file read.
    """
    restored = Restored()
    refused: list[str] = []
    base = private_dir(to_dir)
    sources = session.transcript_paths()
    if progress is not None:
        kind = TRANSCRIPT_KIND
        progress.grow(len(session.landed(kind)), session.landed_bytes(kind))
        session.progress = progress
    for source in sources:
        relpath = safe_relpath(source)
        if relpath is None:
            refused.append(f"{source}: refused, it would land outside {to_dir}")
            continue
        try:
            data = session.transcript(source)
        except (DamagedTranscript, TranscriptNotFound) as err:
            refused.append(f"{source}: {err}")
            continue
        target = base.joinpath(*relpath.parts)
        if not _no_links(base, relpath):
            refused.append(f"{source}: refused, a link or file is in the way")
            continue
        try:
            publish_new(target, data)
        except AlreadyExists:
            if not _holds(target, data):
                refused.append(f"{target}: exists with other bytes, left as it is")
            else:
                restored.present.append(target)
            continue
        restored.written.append(target)
    if refused:
        raise RestoreRefused(refused, restored)
    return restored


def _holds(path: Path, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    with os.fdopen(fd, "rb") as handle:
        return stat.S_ISREG(os.fstat(fd).st_mode) and handle.read(len(data) + 1) == data
