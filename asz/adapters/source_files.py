"""Opening a file Claude Code wrote, safely: a regular file only, never through a link, never
blocking on a FIFO; and what one ``stat`` says about whether it may have changed."""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

__all__ = ["FileStat", "NotReadable", "open_regular"]

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


@dataclass(frozen=True, slots=True)
class FileStat:
    """What decides whether a source may have changed without reading it."""

    dev: int
    ino: int
    size: int
    mtime_ns: int

    @classmethod
    def of(cls, result: os.stat_result) -> FileStat:
        return cls(result.st_dev, result.st_ino, result.st_size, result.st_mtime_ns)


class NotReadable(OSError):
    """The file could not be read this time; ``why`` says what happened.

    ``kind`` tells the caller what to make of it: ``gone`` (deleted since it was listed),
    ``not_regular`` (something other than a regular file was swapped in), ``changing`` (it
    changed size while read, so it is still being written) or ``failed`` (any other error).
    """

    def __init__(self, why: str, kind: str) -> None:
        super().__init__(why)
        self.why = why
        self.strerror = why
        self.kind = kind


def open_regular(path: Path | str) -> tuple[int, os.stat_result]:
    """An open descriptor of ``path`` and its ``fstat``, only if it is a regular file.

    Opened without following a symlink and without blocking on a FIFO; the ``fstat`` then
    proves what was opened, whatever was swapped in after the directory was listed.
    Raises NotReadable.
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except FileNotFoundError:
        raise NotReadable("is gone", "gone") from None
    except OSError as err:
        if err.errno == errno.ELOOP:
            raise NotReadable("is a symbolic link", "not_regular") from None
        raise NotReadable(f"cannot be opened: {err.strerror}", "failed") from None
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise NotReadable("is not a regular file", "not_regular")
    return fd, info
