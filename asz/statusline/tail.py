"""A session's transcripts read from where the last run stopped.

The session's sources are the main transcript Claude Code names and its subagents' files
beside it (``<session>/subagents/agent-<id>.jsonl``, and under ``workflows/<run>/``), each a
stream of its own, named as the collector takes them (:mod:`asz.adapters.agent_files`). Each is read
only past the end of the last complete line the last run folded; a line still being written
(no newline yet) waits for the next run. A source is read from its first line again when it
is no longer the file it was (another inode), is shorter than what was read, does not start
with the bytes it started with (its first line or so), or where it was read to is no longer
the end of a line: Claude Code appends, so any of these means the file was replaced or
rewritten. Files are opened as the collector opens them
(:func:`asz.adapters.source_files.open_regular`): regular files only, never through a link.
"""

from __future__ import annotations

import os
import zlib
from pathlib import Path
from typing import Any, NamedTuple

from asz.adapters.agent_files import AGENT_TRANSCRIPT
from asz.adapters.source_files import NotReadable, open_regular
from asz.view.growing import StreamFold
from asz.view.prices import PriceTable

__all__ = [
    "CHUNK",
    "HEAD",
    "LONGEST_LINE",
    "MAIN_STREAM",
    "MAX_SOURCES",
    "MIN_CHUNK",
    "Advanced",
    "Source",
    "advance",
    "session_sources",
]

MAIN_STREAM = "main"
MAX_SOURCES = 256
"""Subagent files read at most (the first by name); a session with more shows the rest's
calls missing rather than slowing every run."""
HEAD = 4096
"""The bytes of a source's start whose checksum tells a rewritten file from a grown one:
enough for the first line, which names the session and its first moment."""
CHUNK = 4 << 20
MIN_CHUNK = 4096
LONGEST_LINE = 64 << 20
"""A run goes past its budget to finish a line, but not past this: a file at the path with no
line end (not a transcript) must not be read whole into memory; it stays behind."""


class Source(NamedTuple):
    stream: str
    path: Path


def session_sources(transcript: Path) -> list[Source]:
    """The main transcript, then the subagents' files (by name) of the session it starts."""
    found = [Source(MAIN_STREAM, transcript)]
    subagents = transcript.with_suffix("") / "subagents"
    directories = [subagents, *sorted(_subdirectories(subagents / "workflows"))]
    for directory in directories:
        for name, agent in sorted(_agent_files(directory)):
            if len(found) > MAX_SOURCES:
                return found
            found.append(Source(agent, directory / name))
    return found


class Advanced(NamedTuple):
    kept: dict[str, Any] | None
    """What to keep of the source (None: it cannot be read now)."""
    fold: StreamFold | None
    read: int
    """Bytes read this time."""
    behind: bool
    """The budget ran out before the source's end."""


def advance(
    source: Source, kept: dict[str, Any] | None, prices: PriceTable, budget: int
) -> Advanced:
    """Folds the complete lines ``source`` gained since ``kept`` (what the last run kept of
    it), reading at most about ``budget`` bytes."""
    try:
        fd, info = open_regular(source.path)
    except NotReadable:
        return Advanced(None, None, 0, False)
    try:
        head = os.pread(fd, HEAD, 0)
        fold, offset = _resume(fd, source, kept, info, head)
        start = done = offset
        read = 0
        unended: list[bytes] = []  # joined once a line end comes: a long line is not copied
        # Past the budget only to finish a line: a run always gets on by one, of any length a
        # transcript line has.
        while offset < info.st_size and (read < budget or (done == start and read < LONGEST_LINE)):
            room = budget - read if read < budget else CHUNK
            chunk = os.pread(fd, min(CHUNK, info.st_size - offset, max(room, MIN_CHUNK)), offset)
            if not chunk:
                break
            offset += len(chunk)
            read += len(chunk)
            cut = chunk.rfind(b"\n")
            if cut < 0:
                unended.append(chunk)
                continue
            lines = b"".join([*unended, chunk[:cut]])
            for raw in lines.split(b"\n"):
                fold.line(raw, prices)
            done += len(lines) + 1
            unended = [chunk[cut + 1 :]]
    except OSError:
        return Advanced(None, None, 0, False)
    finally:
        os.close(fd)
    kept = {
        "path": str(source.path),
        "stream": source.stream,
        "dev": info.st_dev,
        "ino": info.st_ino,
        "offset": done,
        "head": _checksum(head[: min(HEAD, done)]),
        "fold": fold.state(),
    }
    return Advanced(kept, fold, read, offset < info.st_size)


def _resume(
    fd: int,
    source: Source,
    kept: dict[str, Any] | None,
    info: os.stat_result,
    head: bytes,
) -> tuple[StreamFold, int]:
    """The fold and offset to go on from: the kept ones while the file is the one they were
    taken of, else a new fold from the start."""
    if kept is None or (kept.get("dev"), kept.get("ino")) != (info.st_dev, info.st_ino):
        return StreamFold(source.stream), 0
    try:
        offset = int(kept["offset"])
        fold = StreamFold.of_state(source.stream, kept["fold"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return StreamFold(source.stream), 0
    same_start = kept.get("head") == _checksum(head[: min(HEAD, offset)])
    whole_line = offset == 0 or os.pread(fd, 1, offset - 1) == b"\n"
    if not 0 <= offset <= info.st_size or not same_start or not whole_line:
        return StreamFold(source.stream), 0
    return fold, offset


def _checksum(data: bytes) -> str:
    return f"{len(data)}:{zlib.crc32(data):08x}"


def _subdirectories(directory: Path) -> list[Path]:
    try:
        with os.scandir(directory) as entries:
            return [Path(e.path) for e in entries if e.is_dir(follow_symlinks=False)]
    except OSError:
        return []


def _agent_files(directory: Path) -> list[tuple[str, str]]:
    """(file name, agent id) of the subagent transcripts in ``directory``."""
    try:
        with os.scandir(directory) as entries:
            return [
                (entry.name, named.group(1))
                for entry in entries
                if (named := AGENT_TRANSCRIPT.fullmatch(entry.name))
                and entry.is_file(follow_symlinks=False)
            ]
    except OSError:
        return []
