"""Landed transcripts: append-only windows of a source's exact bytes, cursors, reading back.

A transcript is landed from where it was last landed, one window per landed file::

    <root>/<session>/transcripts/s-<16 hex>/transcript-<seq>.asz   one window each
    <root>/<session>/transcripts/s-<16 hex>/cursor.json            where the next window starts

The stream key ``s-<16 hex>`` is the start of the SHA-256 of the source's path relative to the
projects directory, so any source name, however odd, maps to a safe directory name, and the
same source always lands in the same place. A window holds only complete lines (a last line
without its newline is still being written), at most ``max_delta_bytes`` of them unless one
line alone is longer, and is one record: its meta says where it starts in the source
(``off``), the number of its first line (``line``), how many lines it holds and the SHA-256 of
its bytes. A ``.meta.json`` sidecar is a snapshot source instead: a new whole copy lands each
time its bytes change.

The cursor is derived. A window lands before the cursor moves, so a crash in between leaves a
cursor behind the landed files; the cursor remembers the sequence number of the last window it
covers, and a cursor that does not match the landed files (or is missing, empty or torn) is
rebuilt from them. That check is also why the cursor is written without a disk sync, and why
the directory of a landed file may be synced once at the end of a pass: after a power cut, a
cursor naming a landed file the disk lost no longer matches, so the source lands again from
what the disk kept (a source is skipped unread only while the file its cursor names is there).
Readers never count a byte twice even so: a window that starts before the end of what was
already read back is a re-landed one, and only its bytes past that end are new.

A source whose bytes before the cursor changed (it shrank below the offset, or the digest of
the 1 MiB before the offset no longer matches) is a conflict: nothing more lands from it and it
is counted on every pass while it stays so. Putting the landed bytes back, or removing the
source, ends it. A source that disappears keeps everything landed (``source_gone``) and resumes
if it comes back holding the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

import orjson

from asz.store.atomic import StagedFiles, replace_derived
from asz.store.crashpoints import crash_point
from asz.store.framing import MAX_CONTENT_BYTES, LandedFileError, encode_file, read_file
from asz.store.root import TRANSCRIPT, LandedPath, Root
from asz.store.verify import Problem, VerifyReport

STREAM_PREFIX = "s-"
CURSOR_FILE = "cursor.json"
MAIN_STREAM = "main"
APPEND = "append"
SNAPSHOT = "snapshot"
ACTIVE = "active"
SOURCE_GONE = "source_gone"
CONFLICT = "conflict"
TAIL_BYTES = 1 << 20
MAX_WINDOWS_PER_PASS = 64
MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024
ZSTD_LEVEL = 3
"""Transcripts land raw and in bulk: level 3 takes a third of the time of the default level
for about a tenth more bytes."""
MAX_WINDOW_BYTES = MAX_CONTENT_BYTES - 64 * 1024
"""Largest window a landed file can hold and still be read back (header and framing aside)."""

_CURSOR_SCHEMA = 1
_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()


class NotRegular(OSError):
    """A path named like a transcript that is not a regular file (a FIFO, a device, a link)."""


def open_regular(path: Path | str) -> int:
    """Opens a regular file for reading without following a link or blocking on a FIFO."""
    fd = os.open(path, _OPEN_FLAGS)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise NotRegular(f"{path} is not a regular file")
    return fd


def stream_key(relpath: str) -> str:
    """The directory a source lands in, derived from its path under the projects dir."""
    return STREAM_PREFIX + hashlib.sha256(relpath.encode()).hexdigest()[:16]


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


@dataclass(frozen=True, slots=True)
class TranscriptSource:
    """One file to land: where it is, which session and stream it belongs to."""

    path: Path
    relpath: str
    session: str
    stream: str
    snapshot: bool = False
    seen: FileStat | None = None

    @property
    def project_dir(self) -> str:
        return self.relpath.split("/", 1)[0]

    @property
    def key(self) -> str:
        return stream_key(self.relpath)


@dataclass(slots=True)
class Cursor:
    """Where a source's next window starts, and what its bytes before that looked like.

    ``tail_sha256`` digests the (up to) 1 MiB before ``offset``; for a snapshot source it
    digests the whole last landed copy, whose length is ``offset``.
    """

    source: str
    shape: str = APPEND
    offset: int = 0
    line: int = 1
    tail_sha256: str = _EMPTY_SHA256
    last_seq: int = 0
    dev: int | None = None
    ino: int | None = None
    size: int | None = None
    mtime_ns: int | None = None
    state: str = ACTIVE
    reason: str = ""

    def seen_as(self, seen: FileStat | None) -> bool:
        """Whether the source is exactly as the cursor last saw it (so nothing can be new)."""
        return seen is not None and (self.dev, self.ino, self.size, self.mtime_ns) == (
            seen.dev,
            seen.ino,
            seen.size,
            seen.mtime_ns,
        )

    def saw(self, seen: FileStat) -> None:
        self.dev, self.ino, self.size, self.mtime_ns = seen.dev, seen.ino, seen.size, seen.mtime_ns

    def to_bytes(self) -> bytes:
        values = {name: getattr(self, name) for name in _CURSOR_FIELDS}
        return orjson.dumps({"schema": _CURSOR_SCHEMA, **values}) + b"\n"


_CURSOR_FIELDS = tuple(field.name for field in fields(Cursor))


def load_cursor(stream_dir: Path) -> Cursor | None:
    """The cursor of a stream dir, or None when it is missing or unreadable (then rebuilt)."""
    try:
        value = orjson.loads((stream_dir / CURSOR_FILE).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(value, dict) or value.pop("schema", None) != _CURSOR_SCHEMA:
        return None
    try:
        cursor = Cursor(**value)
    except TypeError:
        return None
    if not isinstance(cursor.source, str) or not isinstance(cursor.offset, int):
        return None
    return cursor


def save_cursor(stream_dir: Path, cursor: Cursor) -> None:
    replace_derived(stream_dir / CURSOR_FILE, cursor.to_bytes())


# Reading landed windows back


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

    @property
    def end(self) -> int:
        return self.off + len(self.payload)


@dataclass(frozen=True, slots=True)
class LandedLine:
    """One transcript line read back; ``data`` holds its exact bytes with the newline."""

    stream: str
    source: str
    line: int
    offset: int
    data: bytes


def read_windows(path: Path, session: str | None = None) -> list[LandedWindow]:
    """The windows of one landed transcript file; LandedFileError when it does not hold.

    With ``session`` given, a file whose header names another session does not hold either.
    """
    landed = read_file(path)
    header = landed.header
    source, stream, shape = header.get("source"), header.get("stream"), header.get("shape")
    if header.get("kind") != TRANSCRIPT or not isinstance(source, str) or not source:
        raise LandedFileError(path, "is not a transcript file (kind or source missing)")
    if not isinstance(stream, str) or shape not in (APPEND, SNAPSHOT):
        raise LandedFileError(path, "has a transcript header without stream or shape")
    if session is not None and header.get("session") != session:
        raise LandedFileError(path, f"names session {header.get('session')!r}, not {session}")
    windows = []
    for record in landed.records:
        meta = record.meta
        off, line, lines = meta.get("off"), meta.get("line"), meta.get("lines")
        digest = meta.get("sha256")
        if not all(isinstance(value, int) and value >= 0 for value in (off, line, lines)):
            raise LandedFileError(path, "has a window without off, line or lines", record.row)
        if not isinstance(digest, str):
            raise LandedFileError(path, "has a window without its sha256", record.row)
        windows.append(
            LandedWindow(
                seq=landed.seq,
                source=source,
                stream=stream,
                snapshot=shape == SNAPSHOT,
                off=off,
                line=line,
                lines=lines,
                sha256=digest,
                payload=record.payload,
            )
        )
    return windows


def stream_dirs(root: Root, session: str) -> list[Path]:
    """Every stream dir of a session's landed transcripts, by name."""
    try:
        entries = list(os.scandir(root.transcripts_dir(session)))
    except (FileNotFoundError, NotADirectoryError):
        return []
    return sorted(
        Path(entry.path)
        for entry in entries
        if entry.name.startswith(STREAM_PREFIX) and entry.is_dir(follow_symlinks=False)
    )


def landed_transcripts(root: Root, session: str) -> list[LandedPath]:
    """Every landed transcript file of a session, in sequence (that is, landing) order."""
    found = [item for directory in stream_dirs(root, session) for item in root.landed(directory)]
    return sorted((item for item in found if item.kind == TRANSCRIPT), key=lambda i: i.seq)


@dataclass(slots=True)
class Reach:
    """How far a source's landed bytes reach while reading its windows in landing order.

    ``starts`` maps each offset a window may start at (0, and every window's end) to the line
    number there, which is what tells a re-landed window from a damaged sequence.
    """

    end: int = 0
    line: int = 1
    starts: dict[int, int] = field(default_factory=lambda: {0: 1})

    def misfit(self, window: LandedWindow) -> str | None:
        """Why ``window`` cannot follow the windows read so far, or None when it can."""
        if window.off > self.end:
            return f"starts at byte {window.off}, past the {self.end} bytes landed before it"
        expected = self.starts.get(window.off)
        if expected is None:
            return f"starts at byte {window.off}, where no earlier window started or ended"
        if expected != window.line:
            return f"says its first line is {window.line}, but line {expected} starts there"
        return None

    def take(self, window: LandedWindow) -> tuple[int, int, bytes]:
        """The bytes of ``window`` not read before: (offset, first line number, bytes).

        A window starting past the end leaves a gap; its bytes are taken as they are.
        """
        if window.end <= self.end:
            return self.end, self.line, b""
        skip = max(0, self.end - window.off)
        fresh = window.payload[skip:] if skip else window.payload
        line = window.line + (window.payload.count(b"\n", 0, skip) if skip else 0)
        self.end = window.end
        self.line = line + (fresh.count(b"\n") if skip else window.lines)
        self.starts[self.end] = self.line
        return window.end - len(fresh), line, fresh


def split_lines(off: int, line: int, data: bytes) -> Iterator[tuple[int, int, bytes]]:
    """(offset, line number, exact bytes with the newline) of each line of a window span."""
    start = 0
    while start < len(data):
        nl = data.find(b"\n", start)
        stop = len(data) if nl < 0 else nl + 1
        yield off + start, line, data[start:stop]
        line += 1
        start = stop


def iter_lines(root: Root, session: str) -> Iterator[LandedLine]:
    """Every landed transcript line of a session, each once, in order within its source.

    Sources come in the order they first landed; a damaged landed file is skipped (verify
    names it), so its lines are missing rather than wrong.
    """
    streams = [(root.landed(directory), directory) for directory in stream_dirs(root, session)]
    streams.sort(key=lambda pair: pair[0][0].seq if pair[0] else 0)
    for files, _directory in streams:
        reach = Reach()
        for item in files:
            try:
                windows = read_windows(item.path, session)
            except LandedFileError:
                continue
            for window in windows:
                if window.snapshot:
                    continue
                off, line, fresh = reach.take(window)
                for start, number, data in split_lines(off, line, fresh):
                    yield LandedLine(window.stream, window.source, number, start, data)


# Landing


@dataclass(slots=True)
class SourceOutcome:
    """What one source's landing did in one pass."""

    files: int = 0
    lines: int = 0
    source_bytes: int = 0
    landed_bytes: int = 0
    pending: bool = False
    conflict: str | None = None
    new_conflict: bool = False
    """Whether the conflict was found in this pass (rather than kept from an earlier one)."""
    error: str | None = None


class LineTooLong(Exception):
    """A single line larger than a landed file can hold."""


def read_window(fd: int, offset: int, budget: int) -> bytes | None:
    """The complete lines from ``offset``: at most ``budget`` bytes, unless one line is longer.

    None when there is no complete line yet.
    """
    chunk = os.pread(fd, budget, offset)
    if not chunk:
        return None
    last = chunk.rfind(b"\n")
    if last >= 0:
        return chunk[: last + 1] if last + 1 < len(chunk) else chunk
    parts = [chunk]
    total = len(chunk)
    step = max(budget, 8 * 1024 * 1024)
    while True:
        more = os.pread(fd, step, offset + total)
        if not more:
            return None
        nl = more.find(b"\n")
        if nl >= 0:
            parts.append(more[: nl + 1])
            return b"".join(parts)
        parts.append(more)
        total += len(more)
        if total > MAX_WINDOW_BYTES:
            raise LineTooLong(f"a line at offset {offset} is longer than {MAX_WINDOW_BYTES} bytes")


class _Tail:
    """The last ``TAIL_BYTES`` of a stream, kept as pieces and joined only for its digest."""

    def __init__(self, start: bytes = b"") -> None:
        self.parts = [start]
        self.size = len(start)

    def add(self, data: bytes) -> None:
        self.parts.append(data)
        self.size += len(data)
        while len(self.parts) > 1 and self.size - len(self.parts[0]) >= TAIL_BYTES:
            self.size -= len(self.parts.pop(0))

    def sha256(self) -> str:
        joined = memoryview(b"".join(self.parts))
        return hashlib.sha256(joined[-TAIL_BYTES:]).hexdigest()


def rebuild_cursor(files: list[LandedPath], relpath: str, shape: str) -> Cursor:
    """A stream's cursor derived from its landed files alone (LandedFileError if they fail)."""
    cursor = Cursor(source=relpath, shape=shape)
    reach = Reach()
    tail = _Tail()
    for item in files:
        for window in read_windows(item.path):
            if window.source != relpath:
                raise LandedFileError(item.path, f"holds {window.source}, not {relpath}")
            if window.snapshot:
                cursor.offset, cursor.line = len(window.payload), 1 + window.lines
                cursor.tail_sha256 = hashlib.sha256(window.payload).hexdigest()
                continue
            why = reach.misfit(window)
            if why:
                raise LandedFileError(item.path, why)
            tail.add(reach.take(window)[2])
        cursor.last_seq = item.seq
    if shape == APPEND:
        cursor.offset, cursor.line = reach.end, reach.line
        cursor.tail_sha256 = tail.sha256()
    return cursor


def mark_gone(stream_dir: Path) -> None:
    """Records that a stream's source is gone; what landed stays, and it resumes if it returns."""
    cursor = load_cursor(stream_dir)
    if cursor is None or cursor.state == SOURCE_GONE:
        return
    cursor.state, cursor.reason = SOURCE_GONE, ""
    cursor.dev = cursor.ino = cursor.size = cursor.mtime_ns = None
    save_cursor(stream_dir, cursor)


def _still_landed(stream_dir: Path, cursor: Cursor) -> bool:
    """Whether the landed file the cursor names as its last is there.

    A cursor is written without a disk sync and the directory of a landed file is synced only
    at the end of a pass, so a power cut can keep a cursor that saw the source as it is now
    and lose the file it names: such a source must not be skipped, or that window would land
    again only once the source grows. One ``lstat`` per unchanged source tells.
    """
    if cursor.last_seq == 0:
        return True
    try:
        named = os.lstat(stream_dir / Root.landed_name(TRANSCRIPT, cursor.last_seq))
    except OSError:
        return False
    return stat.S_ISREG(named.st_mode)


class TranscriptLander:
    """Lands the sources of one session, each from where it was last landed.

    ``next_seq`` hands out the session's next sequence number; ``on_window`` sees every window
    as it is staged, which is how the derived facts grow without reading it back. Windows are
    staged in ``staged`` and land when the caller commits it, the cursors moving after that.
    """

    def __init__(
        self,
        root: Root,
        *,
        compression: str,
        max_delta_bytes: int,
        next_seq: Callable[[], int],
        on_window: Callable[[LandedWindow], None],
        max_windows: int = MAX_WINDOWS_PER_PASS,
        staged: StagedFiles,
    ) -> None:
        self.root = root
        self.staged = staged
        self.compression = compression
        self.budget = max_delta_bytes
        self.next_seq = next_seq
        self.on_window = on_window
        self.max_windows = max_windows

    def land(self, source: TranscriptSource) -> SourceOutcome:
        """Stages what is new in ``source``; a source's own trouble is reported, never raised."""
        outcome = SourceOutcome()
        directory = self.root.transcripts_dir(source.session) / source.key
        cursor = load_cursor(directory)
        if cursor is not None and cursor.source != source.relpath:
            outcome.conflict = f"its stream dir {source.key} already holds {cursor.source}"
            return outcome
        if cursor is not None and cursor.seen_as(source.seen) and _still_landed(directory, cursor):
            if cursor.state == CONFLICT:
                outcome.conflict = cursor.reason
            return outcome
        try:
            fd = open_regular(source.path)
        except FileNotFoundError:
            mark_gone(directory)
            return outcome
        except NotRegular:
            return outcome
        except OSError as err:
            outcome.error = f"{source.relpath}: cannot be opened: {err.strerror or err}"
            return outcome
        try:
            run = _SourceRun(self, source, fd, directory=directory, stored=cursor, outcome=outcome)
            if source.snapshot:
                run.land_snapshot()
            else:
                run.land_append()
        except LandedFileError as err:
            outcome.error = f"{source.relpath}: its landed files do not hold: {err}"
        except LineTooLong as err:
            outcome.error = f"{source.relpath}: {err}"
        except OSError as err:
            outcome.error = f"{source.relpath}: {err.strerror or err}"
        finally:
            os.close(fd)
        return outcome


class _SourceRun:
    """One source's landing in one pass: check what landed still holds, then land windows."""

    def __init__(
        self,
        lander: TranscriptLander,
        source: TranscriptSource,
        fd: int,
        *,
        directory: Path,
        stored: Cursor | None,
        outcome: SourceOutcome,
    ) -> None:
        self.lander = lander
        self.staged = lander.staged
        self.source = source
        self.fd = fd
        self.directory = directory
        self.outcome = outcome
        self.seen = FileStat.of(os.fstat(fd))
        self.saved = stored.to_bytes() if stored is not None else None
        self.cursor = self._current(stored)

    def _current(self, stored: Cursor | None) -> Cursor:
        """The stored cursor, or one rebuilt from the landed files when it is missing or behind."""
        files = self.lander.root.landed(self.directory)
        highest = files[-1].seq if files else 0
        if stored is not None and stored.last_seq == highest:
            return stored
        shape = SNAPSHOT if self.source.snapshot else APPEND
        rebuilt = rebuild_cursor(files, self.source.relpath, shape)
        if stored is not None:
            rebuilt.dev, rebuilt.ino = stored.dev, stored.ino
        return rebuilt

    def save(self) -> None:
        data = self.cursor.to_bytes()
        if data != self.saved:
            replace_derived(self.directory / CURSOR_FILE, data)
            self.saved = data
            crash_point("transcript.cursor")

    def land_append(self) -> None:
        cursor = self.cursor
        before = min(cursor.offset, TAIL_BYTES)
        tail = _Tail()
        if self.seen.size < cursor.offset:
            reason = f"truncated to {self.seen.size} bytes, {cursor.offset} already landed"
        else:
            tail = _Tail(os.pread(self.fd, before, cursor.offset - before))
            intact = tail.sha256() == cursor.tail_sha256
            reason = "" if intact else "rewritten: its bytes before the landed offset changed"
        cursor.saw(self.seen)
        if reason:
            self.outcome.new_conflict = cursor.state != CONFLICT or cursor.reason != reason
            cursor.state, cursor.reason = CONFLICT, reason
            self.save()
            self.outcome.conflict = reason
            return
        cursor.state, cursor.reason = ACTIVE, ""
        for count in range(self.lander.max_windows + 1):
            # No more than the size seen is asked for: a small source then costs a small read
            # buffer, and what was appended since waits for the next pass, which sees it grew.
            seen_left = max(0, self.seen.size - cursor.offset)
            window = read_window(self.fd, cursor.offset, min(self.lander.budget, seen_left))
            if window is None:
                break
            if count == self.lander.max_windows:
                self.outcome.pending = True
                cursor.size = None  # more to land: the next pass must not skip this source
                break
            self._publish(window, cursor.offset, cursor.line)
            tail.add(window)
        if self.outcome.files:
            cursor.tail_sha256 = tail.sha256()
        self._save_when_landed()

    def land_snapshot(self) -> None:
        cursor = self.cursor
        cursor.saw(self.seen)
        cursor.state, cursor.reason = ACTIVE, ""
        data = os.pread(self.fd, MAX_SNAPSHOT_BYTES + 1, 0)
        if len(data) > MAX_SNAPSHOT_BYTES:
            self.outcome.error = f"{self.source.relpath}: larger than a sidecar may be"
        else:
            digest = hashlib.sha256(data).hexdigest()
            if data and (len(data) != cursor.offset or digest != cursor.tail_sha256):
                self._publish(data, 0, 1)
                cursor.tail_sha256 = digest
        self._save_when_landed()

    def _save_when_landed(self) -> None:
        """Saves the cursor now or, when this run staged windows, once they have landed: a
        cursor never runs ahead of the landed files."""
        if self.outcome.files:
            self.staged.then(self._save_landed)
        else:
            self.save()

    def _save_landed(self) -> None:
        """Saves the cursor after the windows landed; a cursor that cannot be written is rebuilt
        by the next pass, so that is reported on the source and stops nothing else."""
        try:
            self.save()
        except OSError as err:
            self.outcome.error = f"{self.source.relpath}: {err.strerror or err}"

    def _publish(self, window: bytes, off: int, line: int) -> None:
        """Stages one window and moves the cursor past it (saved once the window landed: a
        crash before that is caught by the cursor's ``last_seq``)."""
        source, cursor = self.source, self.cursor
        seq = self.lander.next_seq()
        digest = hashlib.sha256(window).hexdigest()
        lines = window.count(b"\n")
        header: dict[str, Any] = {
            "kind": TRANSCRIPT,
            "session": source.session,
            "seq": seq,
            "source": source.relpath,
            "stream": source.stream,
            "shape": SNAPSHOT if source.snapshot else APPEND,
        }
        meta = {"off": off, "line": line, "lines": lines, "sha256": digest}
        data = encode_file(header, [(meta, window)], self.lander.compression, ZSTD_LEVEL)
        self.staged.stage(
            self.directory / Root.landed_name(TRANSCRIPT, seq),
            data,
            check=lambda _temp: crash_point("transcript.written"),
            published=lambda: crash_point("transcript.published"),
        )
        cursor.offset, cursor.line = off + len(window), line + lines
        cursor.last_seq = seq
        self.outcome.files += 1
        self.outcome.lines += lines
        self.outcome.source_bytes += len(window)
        self.outcome.landed_bytes += len(data)
        self.lander.on_window(
            LandedWindow(
                seq,
                source.relpath,
                source.stream,
                source.snapshot,
                off,
                line,
                lines,
                digest,
                window,
            )
        )


# Verifying


def transcript_check(root: Root, session: str, report: VerifyReport) -> None:
    """Every landed transcript file whole, its windows contiguous per source, digests matching.

    A re-landed window (one starting where an earlier window of its source started) is
    allowed; its lines are counted once.
    """
    for directory in stream_dirs(root, session):
        reach = Reach()
        source: str | None = None
        for item in root.landed(directory):
            report.files += 1

            def problem(why: str, row: int | None = None, where: Path = item.path) -> None:
                report.problems.append(Problem(session, str(where), row, why))

            if item.kind != TRANSCRIPT:
                problem(f"a {item.kind} file among landed transcripts")
                continue
            try:
                windows = read_windows(item.path, session)
            except LandedFileError as err:
                problem(err.why, err.row)
                continue
            for row, window in enumerate(windows, start=1):
                source = source or window.source
                if window.source != source or directory.name != stream_key(window.source):
                    problem(f"holds {window.source}, which does not land in this dir", row)
                if hashlib.sha256(window.payload).hexdigest() != window.sha256:
                    problem("its bytes do not match their sha256", row)
                if window.payload.count(b"\n") != window.lines:
                    problem(f"does not hold the {window.lines} lines it claims", row)
                if window.snapshot:
                    if window.off != 0:
                        problem("is a snapshot that does not start at byte 0", row)
                    continue
                if not window.payload.endswith(b"\n"):
                    problem("does not end with a complete line", row)
                why = reach.misfit(window)
                if why:
                    problem(why, row)
                _off, _line, fresh = reach.take(window)
                report.transcript_lines += fresh.count(b"\n")
