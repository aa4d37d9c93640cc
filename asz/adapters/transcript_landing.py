"""Landing transcript sources: each from where it was last landed, one window per landed file.

A window holds only complete lines (a last line without its newline is still being written),
at most ``max_delta_bytes`` of them unless one line alone is longer, and is one record: its
meta says where it starts in the source (``off``), the number of its first line (``line``),
how many lines it holds and the SHA-256 of its bytes. A ``.meta.json`` sidecar is a snapshot
source instead: a new whole copy lands each time its bytes change. A source that is empty
while nothing of it has landed lands once, as an empty window (offset 0, no lines): Claude
Code leaves empty session files, and without it a restore could not give them back. The
source then goes on from offset 0 when it grows. Where each source was landed up to is its
cursor (``asz.adapters.transcript_cursors``), which moves only once the windows it covers
are published.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from asz.adapters.source_files import FileStat, NotReadable, open_regular
from asz.adapters.transcript_cursors import (
    ACTIVE,
    CONFLICT,
    CURSOR_TAIL_BYTES,
    Cursor,
    Tail,
    load_cursor,
    mark_gone,
    rebuild_cursor,
    save_cursor,
)
from asz.crashpoints import crash_point
from asz.store import (
    APPEND,
    MAX_CONTENT_BYTES,
    SNAPSHOT,
    TRANSCRIPT_KIND,
    LandedFileError,
    LandedWindow,
    Session,
    SessionWriter,
    stream_dir,
    stream_key,
)
from asz.tally import Tally

__all__ = [
    "MAX_SNAPSHOT_BYTES",
    "MAX_WINDOWS_PER_PASS",
    "MAX_WINDOW_BYTES",
    "LineTooLong",
    "TranscriptLander",
    "TranscriptSource",
    "read_window",
]

MAX_WINDOWS_PER_PASS = 64
MAX_SNAPSHOT_BYTES = 16 * 1024 * 1024
MAX_WINDOW_BYTES = MAX_CONTENT_BYTES - 64 * 1024
"""Largest window a landed file can hold and still be read back (header and framing aside)."""


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


class TranscriptLander:
    """Lands the sources of one session, each from where it was last landed.

    Windows are staged through ``writer`` and land when the caller commits its batch, the
    cursors and the counts moving after that; ``on_window`` sees every window as it is
    staged, which is how the derived facts grow without reading it back.
    """

    def __init__(
        self,
        session: Session,
        writer: SessionWriter,
        *,
        max_delta_bytes: int,
        on_window: Callable[[LandedWindow], None],
        max_windows: int = MAX_WINDOWS_PER_PASS,
    ) -> None:
        self.session = session
        self.writer = writer
        self.budget = max_delta_bytes
        self.on_window = on_window
        self.max_windows = max_windows

    def land(self, source: TranscriptSource, tally: Tally) -> None:
        """Stages what is new in ``source``; a source's own trouble is counted in ``tally``,
        never raised, and what lands is counted there once it is published."""
        directory = stream_dir(source.session, source.relpath)
        cursor = load_cursor(self.session, directory)
        if cursor is not None and cursor.source != source.relpath:
            why = f"its stream dir {source.key} already holds {cursor.source}"
            tally.conflict_sources.append(f"{source.relpath}: {why}")
            return
        if cursor is not None and cursor.seen_as(source.seen) and not cursor.owes_empty_window():
            if cursor.state == CONFLICT:
                tally.conflict_sources.append(f"{source.relpath}: {cursor.reason}")
            return
        try:
            fd, _info = open_regular(source.path)
        except NotReadable as err:
            if err.kind == "gone":
                mark_gone(self.session, directory)
            elif err.kind != "not_regular":
                tally.errors.append(f"{source.relpath}: {err.why}")
            return
        try:
            run = _SourceRun(self, source, fd, directory=directory, stored=cursor, tally=tally)
            if source.snapshot:
                run.land_snapshot()
            else:
                run.land_append()
        except LandedFileError as err:
            tally.errors.append(f"{source.relpath}: its landed files do not hold: {err}")
        except LineTooLong as err:
            tally.errors.append(f"{source.relpath}: {err}")
        except OSError as err:
            tally.errors.append(f"{source.relpath}: {err.strerror or err}")
        finally:
            os.close(fd)


class _SourceRun:
    """One source's landing in one pass: check what landed still holds, then land windows."""

    def __init__(
        self,
        lander: TranscriptLander,
        source: TranscriptSource,
        fd: int,
        *,
        directory: str,
        stored: Cursor | None,
        tally: Tally,
    ) -> None:
        self.lander = lander
        self.session = lander.session
        self.source = source
        self.fd = fd
        self.directory = directory
        self.tally = tally
        self.staged = Tally()
        """What this run staged, counted into ``tally`` once it is published."""
        self.seen = FileStat.of(os.fstat(fd))
        self.saved = stored.to_bytes(self.session, directory) if stored is not None else None
        self.cursor = self._current(stored)

    def _current(self, stored: Cursor | None) -> Cursor:
        """The stored cursor, or one rebuilt from the landed files when it is missing or behind."""
        files = self.session.landed_in(self.directory)
        highest = files[-1].seq if files else 0
        if stored is not None and stored.last_seq == highest:
            return stored
        shape = SNAPSHOT if self.source.snapshot else APPEND
        rebuilt = rebuild_cursor(self.session, files, self.source.relpath, shape)
        if stored is not None:
            rebuilt.dev, rebuilt.ino = stored.dev, stored.ino
        return rebuilt

    def save(self) -> None:
        data = self.cursor.to_bytes(self.session, self.directory)
        if data != self.saved:
            save_cursor(self.session, self.directory, data)
            self.saved = data
            crash_point("transcript.cursor")

    def land_append(self) -> None:
        cursor = self.cursor
        before = min(cursor.offset, CURSOR_TAIL_BYTES)
        tail = Tail()
        if self.seen.size < cursor.offset:
            reason = f"truncated to {self.seen.size} bytes, {cursor.offset} already landed"
        else:
            tail = Tail(os.pread(self.fd, before, cursor.offset - before))
            intact = tail.sha256() == cursor.tail_sha256
            reason = "" if intact else "rewritten: its bytes before the landed offset changed"
        cursor.saw(self.seen)
        if reason:
            cursor.state, cursor.reason = CONFLICT, reason
            self.save()
            self.tally.conflict_sources.append(f"{self.source.relpath}: {reason}")
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
                self.staged.pending += 1
                cursor.size = None  # more to land: the next pass must not skip this source
                break
            self._stage(window, cursor.offset, cursor.line)
            tail.add(window)
        if not self.staged.files and cursor.last_seq == 0 and self.seen.size == 0:
            self._stage(b"", 0, 1)
        if self.staged.files:
            cursor.tail_sha256 = tail.sha256()
        self._save_when_landed()

    def land_snapshot(self) -> None:
        cursor = self.cursor
        cursor.saw(self.seen)
        cursor.state, cursor.reason = ACTIVE, ""
        data = os.pread(self.fd, MAX_SNAPSHOT_BYTES + 1, 0)
        if len(data) > MAX_SNAPSHOT_BYTES:
            self.tally.errors.append(f"{self.source.relpath}: larger than a sidecar may be")
        else:
            digest = hashlib.sha256(data).hexdigest()
            changed = len(data) != cursor.offset or digest != cursor.tail_sha256
            # A later empty copy is a rewrite caught half way, never worth a copy; the first
            # copy lands even when empty, so that the sidecar is kept at all.
            if cursor.last_seq == 0 or (data and changed):
                self._stage(data, 0, 1)
                cursor.tail_sha256 = digest
        self._save_when_landed()

    def _save_when_landed(self) -> None:
        """Saves the cursor and counts what landed now or, when this run staged windows, once
        they are published: a cursor never runs ahead of the landed files."""
        if self.staged.files:
            self.lander.writer.batch.then(self._landed)
        else:
            self.tally.add(self.staged)
            self.save()

    def _landed(self) -> None:
        """Counts and saves the cursor after the windows landed; a cursor that cannot be
        written is rebuilt by the next pass, so that is reported on the source and stops
        nothing else."""
        self.tally.add(self.staged)
        try:
            self.save()
        except OSError as err:
            self.tally.errors.append(f"{self.source.relpath}: {err.strerror or err}")

    def _stage(self, window: bytes, off: int, line: int) -> None:
        """Stages one window and moves the cursor past it (saved once the window landed: a
        crash before that is caught by the cursor's ``last_seq``)."""
        source, cursor = self.source, self.cursor
        digest = hashlib.sha256(window).hexdigest()
        lines = window.count(b"\n")
        header = {
            "source": source.relpath,
            "stream": source.stream,
            "shape": SNAPSHOT if source.snapshot else APPEND,
        }
        meta = {"off": off, "line": line, "lines": lines, "sha256": digest}
        landed = self.lander.writer.land(TRANSCRIPT_KIND, self.directory, header, [(meta, window)])
        cursor.offset, cursor.line = off + len(window), line + lines
        cursor.last_seq = landed.seq
        staged = self.staged
        staged.landed_file(source.session, 1, landed.size)
        staged.transcript_files += 1
        staged.transcript_lines_landed += lines
        staged.source_bytes += len(window)
        self.lander.on_window(
            LandedWindow(
                landed.seq,
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
