"""The one way a landed file comes to be: numbered, framed, read back, published, remembered.

Every kind of landed file (bodies, transcript windows, index lines) lands through
:class:`SessionWriter`, so the steps are the same for each and written once:

1. it takes the session's next sequence number, above every landed file and above the one
   the session's ``seq`` file remembers, so a number is never used twice, and gives it back
   when the file is not staged, so the numbers of a session's landed files have no gap. When
   the ``seq`` file remembers numbers above every landed file (files a power cut lost before
   their directory was flushed), its first file says so in its header (``lost``: the first
   and last such number), so that readers know that gap for one the collector landed past;
2. it frames the records (``asz.store._framing``) at the zstd level of their kind;
3. it writes them under a temporary name, reads them back from where they were written, and
   checks that they are the bytes written and decompress to exactly what was framed (and
   whatever the caller checks besides, every body rebuilding for instance) before anything
   is published;
4. it publishes them with the other files of its :class:`Batch`, after one flush of them all,
   never replacing a file;
5. it remembers the highest number used, once the batch is published.

A named crash point (``asz.crashpoints``) sits after the read-back check and after the
publish of each file, so the crash tests can stop a writer in either gap.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from asz.atomic import DirSyncs
from asz.crashpoints import crash_point
from asz.store._backend import Backend, TempFile
from asz.store._framing import (
    ZSTD_LEVEL,
    LandedFile,
    LandedFileError,
    LandedRecord,
    content_of_own,
    frame,
)
from asz.store._layout import (
    BODY_KIND,
    INDEX_KIND,
    TRANSCRIPT_KIND,
    landed_name,
    seq_file,
)

__all__ = [
    "CRASH_POINTS",
    "LEVELS",
    "Batch",
    "Check",
    "Landed",
    "ReadBackError",
    "SessionWriter",
    "read_seq_file",
]

LEVELS = {TRANSCRIPT_KIND: 3}
"""zstd level per kind where it is not the default: transcripts land raw and in bulk, and
level 3 takes a third of the time of the default for about a tenth more bytes."""
CRASH_POINTS = {BODY_KIND: "body", INDEX_KIND: "index", TRANSCRIPT_KIND: "transcript"}
"""The prefix of each kind's crash points (``<prefix>.written``, ``<prefix>.published``)."""

Check = Callable[[LandedFile], None]


class ReadBackError(LandedFileError):
    """A file written for landing did not read back as what was written."""


@dataclass(slots=True)
class _Staged:
    temp: TempFile
    published: Callable[[], None] | None


class Batch:
    """New files written now and published together, after one flush made them all durable.

    :meth:`stage` writes each under a temporary name; :meth:`commit` publishes them in the
    order they were staged and then runs the actions queued with :meth:`then` (moving the
    cursors and caches that describe them), in order. A crash before the commit leaves only
    temporary files, which the next holder of the root's lock removes; a failed commit removes
    them itself and runs no action. With ``defer``, what must still be flushed for the new
    names to be durable is recorded there for the caller; without, each commit flushes it.
    """

    def __init__(self, backend: Backend, defer: DirSyncs | None = None) -> None:
        self.backend = backend
        self._defer = defer
        self._files: list[_Staged] = []
        self._actions: list[Callable[[], None]] = []
        self.size = 0

    def __len__(self) -> int:
        return len(self._files)

    def stage(
        self,
        path: str,
        data: bytes,
        check: Callable[[bytes], None] | None = None,
        published: Callable[[], None] | None = None,
    ) -> None:
        """Writes ``data`` as the next file to publish at ``path``.

        ``check`` gets the bytes read back from the temporary file; if it raises, nothing is
        staged. ``published`` runs right after this file is published.
        """
        temp = self.backend.write_temp(path, data)
        try:
            if check is not None:
                check(self.backend.read_temp(temp))
        except BaseException:
            self.backend.remove_temp(temp)
            raise
        self._files.append(_Staged(temp, published))
        self.size += len(data)

    def then(self, action: Callable[[], None]) -> None:
        """Runs ``action`` once every file staged so far is published."""
        self._actions.append(action)

    def commit(self) -> None:
        """Publishes and runs the queued actions; raises (publishing nothing more and running
        no action) when a file cannot be flushed or published."""
        files, self._files = self._files, []
        actions, self._actions = self._actions, []
        self.size = 0

        def published(i: int) -> None:
            action = files[i].published
            if action is not None:
                action()

        try:
            self.backend.publish([item.temp for item in files], self._defer, published)
        finally:
            for item in files:
                self.backend.remove_temp(item.temp)
        for action in actions:
            action()


@dataclass(frozen=True, slots=True)
class Landed:
    """A file staged for landing: its number, its path in the root, and its size."""

    seq: int
    path: str
    size: int
    sha256: str = ""
    """Of the file's bytes as written."""


class SessionWriter:
    """Lands files into one session through one batch (see the module)."""

    def __init__(
        self,
        backend: Backend,
        session: str,
        batch: Batch,
        *,
        compression: str,
        numbered: Callable[[], tuple[int, int]],
        generation: int | None = None,
        levels: Mapping[str, int] | None = None,
    ) -> None:
        self.backend = backend
        self.session = session
        self.batch = batch
        self.compression = compression
        self._numbered = numbered
        self.generation = generation
        """For a writer of a generation's files (``asz.store._generation``): the number its
        files replace up to. Its headers say so, its crash points are ``generation.*``, and
        the ``seq`` file, which counts the session's ordinary files, is left alone."""
        self.levels = levels or LEVELS
        """The zstd level of each kind's files (``ZSTD_LEVEL`` for a kind it does not name)."""
        self._next: int | None = None
        self._first = 0
        self._lost: list[int] | None = None
        self._remembered = 0
        self._pending = False
        self.errors: list[str] = []
        """What could not be remembered (derived state: the landed files still hold)."""

    def next_seq(self) -> int:
        """Takes the session's next sequence number."""
        if self._next is None:
            highest, remembered = self._numbered()
            self._next = self._first = max(highest, remembered) + 1
            if remembered > highest:
                self._lost = [highest + 1, remembered]
        seq = self._next
        self._next += 1
        return seq

    def land(
        self,
        kind: str,
        directory: str,
        header: dict[str, Any],
        records: Iterable[tuple[dict[str, Any], bytes]],
        *,
        check: Check | None = None,
        published: Callable[[], None] | None = None,
        stamp: dict[str, Any] | None = None,
        level: int | None = None,
    ) -> Landed:
        """Stages one landed file of ``kind`` in ``directory`` holding ``records`` in order.

        ``header`` adds to the kind, session and sequence number every header has. ``check``
        sees the file as read back (already proven to hold exactly these records) and may
        refuse it by raising; ``published`` runs once it is published. ``stamp`` is the
        time and writer of a file this one stands for (``asz.store._framing.frame``), and
        ``level`` its zstd level where not the writer's for the kind.
        """
        seq = self.next_seq()
        lost: dict[str, Any] = {"lost": self._lost} if seq == self._first and self._lost else {}
        if self.generation is not None:
            lost = {"generation": self.generation}
        written = list(records)
        framed = frame(
            {"kind": kind, "session": self.session, "seq": seq, **lost, **header},
            written,
            self.compression,
            level or self.levels.get(kind, ZSTD_LEVEL),
            stamp,
        )
        path = f"{directory}/{landed_name(kind, seq)}"
        point = "generation" if self.generation is not None else CRASH_POINTS[kind]

        def read_back(back: bytes) -> None:
            # The bytes on disk are those written, and they give back the content framed:
            # the records in it are then exactly ``written``, and ``check`` sees those.
            where = self.backend.describe(path)
            if back != framed.data or content_of_own(back) != framed.content:
                raise ReadBackError(where, "did not read back as written")
            if check is not None:
                rows = [LandedRecord(row, *record) for row, record in enumerate(written, 1)]
                check(LandedFile(where, framed.header, rows))
            crash_point(f"{point}.written")

        def on_published() -> None:
            crash_point(f"{point}.published")
            if published is not None:
                published()

        try:
            self.batch.stage(path, framed.data, check=read_back, published=on_published)
        except BaseException:
            # The number goes back: a file that never lands must not leave a gap in the
            # session's sequence, which a reader takes for a landed file gone missing.
            self._next = seq
            raise
        if not self._pending and self.generation is None:
            self._pending = True
            self.batch.then(self._remember)
        return Landed(seq, path, len(framed.data), hashlib.sha256(framed.data).hexdigest())

    def _remember(self) -> None:
        """Records the highest number published, so it is never handed out again. The file
        is derived and written without a disk sync: after a power cut it may be behind, empty
        or torn, and then the landed files, which are durable, still bound the next number."""
        self._pending = False
        highest = (self._next or 1) - 1
        if highest <= self._remembered:
            return
        try:
            self.backend.replace_derived(seq_file(self.session), f"{highest}\n".encode())
        except OSError as err:
            self.errors.append(f"{self.session}: {err.strerror or err}")
            return
        self._remembered = highest


def read_seq_file(backend: Backend, session: str) -> int:
    """The number the session's ``seq`` file remembers, 0 when it is missing or torn."""
    with contextlib.suppress(OSError, ValueError):
        return int(backend.read(seq_file(session), 64))
    return 0
