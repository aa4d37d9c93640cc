"""One landed session read back: its bodies, transcripts, index lines and facts.

Every reader of a root reads through :class:`Session`, the reading API over the session's
landed files (:class:`~asz.store._session_files.SessionFiles`), so a landed file is found,
read and checked in one way, and a damaged one is skipped the same way everywhere: it becomes
a :class:`Problem` in ``Session.problems`` and the rest of the session is still read.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Any

import orjson

from asz.store._bodyparts import BodyParts
from asz.store._bodyreader import BodyReader
from asz.store._errors import (
    BodyNotFound,
    DamagedTranscript,
    Problem,
    TranscriptNotFound,
)
from asz.store._layout import (
    INDEX_KIND,
    LandedName,
    stream_key,
    transcripts_dir,
)
from asz.store._manifest_index import BodyManifest
from asz.store._moves import retried_when_moved
from asz.store._resolve import bodies_starting, body_text, only
from asz.store._session_facts import SessionFacts, load_facts
from asz.store._session_files import SessionFiles
from asz.store._streams import (
    TranscriptLine,
    split_lines,
)
from asz.store._summary import SessionSummary, summarize

if TYPE_CHECKING:
    pass

__all__ = ["IndexLine", "Session"]


@dataclass(frozen=True, slots=True)
class IndexLine:
    """One ``index.jsonl`` line as landed: its offset in Claude Code's file and its bytes."""

    offset: int | None
    data: bytes


class Session(SessionFiles):
    """A landed session of a store (see the module)."""

    # -- bodies ----------------------------------------------------------------------------

    def body_ids(self) -> list[str]:
        """Every landed body's record id (``<uuid>.request``, ``req_….response``), sorted."""
        return sorted(self.manifests())

    @retried_when_moved
    def find_body(self, text: str) -> str:
        """The record id ``text`` names as a person pastes it: the id, the source file name
        (or a path to it), or a prefix of the id (``asz.store._resolve``). BodyNotFound when
        none matches, AmbiguousId when several do."""
        wanted = body_text(text)
        if wanted in self.manifests():
            return wanted
        found = bodies_starting(wanted, self.manifests())
        missing = BodyNotFound(f"session {self.id} holds no body {wanted}{self.problems_said()}")
        return only(text, f"bodies of session {self.id}", found, missing)

    def manifest(self, record_id: str) -> BodyManifest:
        found = self.manifests().get(record_id)
        if found is None:
            raise BodyNotFound(f"session {self.id} holds no body {record_id}{self.problems_said()}")
        return found

    @retried_when_moved
    def body(self, record_id: str) -> bytes:
        """The exact bytes of a landed body; BodyNotFound, or CodecError when it does not
        rebuild."""
        # A manifest already read may let the body be rebuilt alone; none is read for this.
        return self._bodies.body(record_id, self._manifests)

    def renew(self) -> None:
        super().renew()
        self.__dict__.pop("_bodies", None)  # the cached reader of the files read before

    @cached_property
    def _bodies(self) -> BodyReader:
        # The reader holds this session weakly: a strong hold would make a cycle, and a
        # session dropped with a loader full of bodies would wait for the cycle collector.
        return BodyReader(weakref.proxy(self))

    def body_parts(self) -> BodyParts:
        """The session's bodies as spans of their landed parts, for comparing requests through
        the front they share (see :mod:`asz.store._bodyparts`); a new reader each call."""
        return BodyParts(self)

    @retried_when_moved
    def transcript_paths(self) -> list[str]:
        """The path under Claude Code's projects directory of every landed transcript
        source (what ``transcript`` takes, and where a restore puts it), sorted."""
        paths = set()
        for directory in self.stream_dirs():
            for _name, window in self.windows(self.landed_in(directory)):
                paths.add(window.source)
                break
        return sorted(paths)

    @retried_when_moved
    def transcript(self, path: str) -> bytes:
        """The exact bytes of a source as landed: every line up to the last one landed, or
        the newest copy of a sidecar. TranscriptNotFound, or DamagedTranscript when what
        landed does not give them back whole."""
        problems: list[Problem] = []
        directory = self._stream_dir_of(path)
        parts: list[bytes] = []
        snapshot: bytes | None = None
        found = False
        for name, window, fresh in self.stream(self.landed_in(directory), problems):
            found = True
            where = self.backend.describe(name.path)
            if window.source != path:
                self.problem(where, None, f"holds {window.source}, not {path}", problems)
            elif fresh is None:
                snapshot = window.payload
            else:
                if fresh.misfit:
                    self.problem(where, None, fresh.misfit, problems)
                parts.append(fresh.data)
        self.problems += problems
        if problems:
            raise DamagedTranscript("; ".join(map(str, problems)))
        if not found:
            raise TranscriptNotFound(f"session {self.id} holds no transcript {path}")
        return snapshot if snapshot is not None else b"".join(parts)

    def _stream_dir_of(self, path: str) -> str:
        """The stream directory of the source ``path``: the one named from it, or, in a
        redacted counterpart whose sources are redacted (``LandedWindow.key``), the one whose
        windows name it."""
        directory = f"{transcripts_dir(self.id)}/{stream_key(path)}"
        if self.landed_in(directory):
            return directory
        for other in self.stream_dirs():
            for _name, window in self.windows(self.landed_in(other)):
                if window.source == path:
                    return other
                break
        return directory

    def transcript_lines(self) -> Iterator[TranscriptLine]:
        """Every landed transcript line, each once, in order within its source; sources in
        the order they first landed. Snapshots are not lines; a damaged file's lines are
        missing rather than wrong (the line numbers show where). When a repack moves the
        session half way, the lines go on from the newest generation where they were
        (``iterated_when_moved``)."""
        given: dict[str, int] = {}
        for line in self.iterated_when_moved(lambda: self._lines_past(given)):
            given[line.source] = line.line
            yield line

    def _lines_past(self, given: dict[str, int]) -> Iterator[TranscriptLine]:
        """The lines of :meth:`transcript_lines` past those of ``given`` (each source's last
        line number given)."""
        streams = [self.landed_in(directory) for directory in self.stream_dirs()]
        streams.sort(key=self._first_landed)
        for names in streams:
            for _name, window, fresh in self.stream(names):
                if fresh is not None:
                    for start, number, data in split_lines(fresh):
                        if number > given.get(window.source, 0):
                            yield TranscriptLine(window.stream, window.source, number, start, data)

    def _first_landed(self, names: list[LandedName]) -> tuple[int, int]:
        """Where a stream's files first landed: its first file's number, and within a pack,
        which holds several streams in the order they first landed, its place there."""
        if not names:
            return 0, 0
        generation = self.generation()
        keys = () if generation is None else generation.streams.get(names[0].path, ())
        return names[0].seq, keys.index(names[0].part) if names[0].part in keys else 0

    @retried_when_moved
    def facts(self) -> SessionFacts:
        """What the session's transcripts say: calls, directories, cwds, models, activity and
        lines (kept up to date in a derived cache file where the root can be written)."""
        return load_facts(self)

    @retried_when_moved
    def summary(self, landed: list[LandedName] | None = None) -> SessionSummary:
        """The session in one line, as ``asz sessions`` lists it (``asz.store._summary``);
        ``landed``, the session's landed files as the caller listed them just now."""
        return summarize(self, landed)

    # -- index lines -----------------------------------------------------------------------

    @retried_when_moved
    def index_lines(self) -> list[IndexLine]:
        """The session's landed ``index.jsonl`` lines, in the order they landed."""
        return [
            IndexLine(record.meta.get("off"), record.payload)
            for _name, landed in self.files(self.landed(INDEX_KIND))
            for record in landed.records
        ]

    def index_entries(self) -> list[dict[str, Any]]:
        """The landed index lines that parse as JSON objects."""
        entries = []
        for line in self.index_lines():
            try:
                value = orjson.loads(line.data)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict):
                entries.append(value)
        return entries
