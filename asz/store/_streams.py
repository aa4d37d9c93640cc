"""Landed transcript windows, and the one way a stream of them is read back.

A transcript source lands append-only, one window of complete lines per landed file, in its
own stream directory (see ``asz.store``); a ``.meta.json`` sidecar lands as whole snapshots
instead. Reading a stream back follows one rule, :class:`StreamReader`:

- windows are taken in landing (sequence) order;
- a window whose bytes were all read before (landed again after a crash, before its cursor
  moved) gives nothing, and one starting inside what was read gives only its bytes past it,
  so no byte is counted twice;
- a window that starts past the end of what was read leaves a gap: its bytes are given at
  their own offset, and the gap is named; so is a window that starts where no earlier window
  started or ended, or whose first line number disagrees with the lines read before it.

Naming a misfit is all the reader does; each caller decides what it costs: ``verify``
reports it, a transcript is not given back with a gap in it, a cursor is not rebuilt from it,
and the lines read on (the view tells the gap from their line numbers). A snapshot window is
a whole copy; the newest one is the source's bytes.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from asz.store._framing import LandedFile, LandedFileError
from asz.store._layout import TRANSCRIPT_KIND, is_stream_key, stream_key

__all__ = [
    "APPEND",
    "MAIN_STREAM",
    "PACK_STREAMS",
    "SNAPSHOT",
    "Fresh",
    "LandedWindow",
    "StreamReader",
    "TranscriptLine",
    "split_lines",
    "windows_of",
]

MAIN_STREAM = "main"
APPEND = "append"
SNAPSHOT = "snapshot"
PACK_STREAMS = "streams"
"""The header field of a transcript pack that lists the streams it holds (:func:`windows_of`)."""


@dataclass(frozen=True, slots=True)
class LandedWindow:
    """One window as landed: its source, where it starts, and its exact bytes."""

    seq: int
    source: str
    stream: str
    snapshot: bool
    off: int
    line: int
    lines: int
    sha256: str
    payload: bytes
    key: str = ""
    """The name of the stream directory the window lands in: ``stream_key(source)``, or,
    in a redacted counterpart whose source is redacted, the one its header names
    (``stream_dir``), the original source's."""

    @property
    def end(self) -> int:
        return self.off + len(self.payload)


@dataclass(frozen=True, slots=True)
class TranscriptLine:
    """One transcript line read back; ``data`` holds its exact bytes with the newline."""

    stream: str
    source: str
    line: int
    offset: int
    data: bytes


@dataclass(frozen=True, slots=True)
class Fresh:
    """What a window adds to its stream: bytes not read before, from ``offset``, whose first
    line is number ``line``; ``misfit`` names why the window does not follow, if it does not."""

    offset: int
    line: int
    data: bytes
    misfit: str | None = None


def windows_of(landed: LandedFile, session: str | None = None) -> list[LandedWindow]:
    """The windows of one landed transcript file; LandedFileError when it does not hold.

    With ``session`` given, a file whose header names another session does not hold either.
    A file is one stream's (its header names the source), or a *pack* of a generation, which
    holds windows of several streams of the session (its header lists them in ``streams``,
    each record names its own by place in that list, ``s``), so that they compress together.
    """
    header, path = landed.header, landed.path
    if header.get("kind") != TRANSCRIPT_KIND:
        raise LandedFileError(path, "is not a transcript file (kind or source missing)")
    if session is not None and header.get("session") != session:
        raise LandedFileError(path, f"names session {header.get('session')!r}, not {session}")
    listed = header.get(PACK_STREAMS)
    redacted = "redacted" in header
    if listed is None:
        named = header.get("stream_dir") if redacted else None
        streams = [_stream_of(path, header, named, pack=False, redacted=redacted)]
    elif isinstance(listed, list) and listed and all(isinstance(s, dict) for s in listed):
        streams = [
            _stream_of(path, item, item.get("key"), pack=True, redacted=redacted) for item in listed
        ]
    else:
        raise LandedFileError(path, "has a pack header without its streams")
    windows = []
    for record in landed.records:
        meta = record.meta
        off, line, lines = meta.get("off"), meta.get("line"), meta.get("lines")
        digest = meta.get("sha256")
        which = meta.get("s", 0) if listed is not None else 0
        if not (
            isinstance(off, int)
            and isinstance(line, int)
            and isinstance(lines, int)
            and min(off, line, lines) >= 0
        ):
            raise LandedFileError(path, "has a window without off, line or lines", record.row)
        if not isinstance(digest, str):
            raise LandedFileError(path, "has a window without its sha256", record.row)
        if type(which) is not int or not 0 <= which < len(streams):
            raise LandedFileError(path, "has a window of no stream its header lists", record.row)
        source, stream, snapshot, key = streams[which]
        windows.append(
            LandedWindow(
                seq=landed.seq,
                source=source,
                stream=stream,
                snapshot=snapshot,
                off=off,
                line=line,
                lines=lines,
                sha256=digest,
                payload=record.payload,
                key=key,
            )
        )
    return windows


def _stream_of(
    path: str, fields: dict[str, Any], named: object, *, pack: bool, redacted: bool
) -> tuple[str, str, bool, str]:
    """A stream as a header names it: its source, stream, whether it is a snapshot, and the
    name of its stream directory: ``named`` where given (a redacted file's, whose source is
    redacted; a pack's, which names each stream's, its source's unless redacted)."""
    source, stream, shape = fields.get("source"), fields.get("stream"), fields.get("shape")
    if not isinstance(source, str) or not source:
        raise LandedFileError(path, "is not a transcript file (kind or source missing)")
    if not isinstance(stream, str) or shape not in (APPEND, SNAPSHOT):
        raise LandedFileError(path, "has a transcript header without stream or shape")
    if not pack:
        return (
            source,
            stream,
            shape == SNAPSHOT,
            named if isinstance(named, str) else stream_key(source),
        )
    if not is_stream_key(named) or (not redacted and named != stream_key(source)):
        raise LandedFileError(path, f"names a stream directory {named!r} not its source's")
    return source, stream, shape == SNAPSHOT, str(named)


@dataclass(slots=True)
class StreamReader:
    """How far one source's landed bytes reach, read window by window (see the module).

    ``starts`` maps each offset a window may start at (0, and every window's end) to the line
    number there, which is what tells a re-landed window from a damaged sequence. A reader
    resumed from a cache knows only where it stopped.
    """

    end: int = 0
    line: int = 1
    starts: dict[int, int] = field(default_factory=lambda: {0: 1})

    @classmethod
    def resumed(cls, end: int, line: int) -> StreamReader:
        return cls(end, line, {end: line})

    def _misfit(self, window: LandedWindow) -> str | None:
        if window.off > self.end:
            return f"starts at byte {window.off}, past the {self.end} bytes landed before it"
        expected = self.starts.get(window.off)
        if expected is None:
            return f"starts at byte {window.off}, where no earlier window started or ended"
        if expected != window.line:
            return f"says its first line is {window.line}, but line {expected} starts there"
        return None

    def take(self, window: LandedWindow) -> Fresh:
        """What ``window`` of an append-only source adds (see the module for the rule)."""
        misfit = self._misfit(window)
        if window.end <= self.end:
            return Fresh(self.end, self.line, b"", misfit)
        skip = max(0, self.end - window.off)
        fresh = window.payload[skip:] if skip else window.payload
        line = window.line + (window.payload.count(b"\n", 0, skip) if skip else 0)
        self.end = window.end
        self.line = line + (fresh.count(b"\n") if skip else window.lines)
        self.starts[self.end] = self.line
        return Fresh(window.end - len(fresh), line, fresh, misfit)


def split_lines(fresh: Fresh) -> Iterator[tuple[int, int, bytes]]:
    """(offset, line number, exact bytes with the newline) of each line of fresh bytes."""
    data, line, start = fresh.data, fresh.line, 0
    while start < len(data):
        nl = data.find(b"\n", start)
        stop = len(data) if nl < 0 else nl + 1
        yield fresh.offset + start, line, data[start:stop]
        line += 1
        start = stop
