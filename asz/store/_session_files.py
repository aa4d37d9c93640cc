"""The files of one landed session: listed in sequence order, read and checked, and what
their headers and manifests say.

This is the raw side of a session, below its reading API (``asz.store._session``): the pieces
that rebuild bodies, derive facts and summaries, or keep derived files take a
:class:`SessionFiles`, so none of them needs the reading API built on top of them. A landed
file that does not read becomes a :class:`Problem` in ``problems`` and the rest is still read.

A repack may publish a new generation of the session while it is read: the session's reads
then start again once from it (``asz.store._moves``); these files say when that happened
(:meth:`SessionFiles.moved`) and forget what they read (:meth:`SessionFiles.renew`).
"""

from __future__ import annotations

import errno
import hashlib
from collections.abc import Iterable, Iterator
from typing import Any

from asz.progress import Progress, Silent
from asz.store._backend import Backend
from asz.store._derived import Kept, landed_mark, mark_of, stamp_of
from asz.store._errors import (
    Problem,
)
from asz.store._framing import MAX_CONTENT_BYTES, LandedFile, LandedFileError, decode_file
from asz.store._generation import Generation, read_generation
from asz.store._layout import (
    BODY_KIND,
    INDEX_KIND,
    STREAM_PREFIX,
    TRANSCRIPT_KIND,
    LandedName,
    bodies_dir,
    index_dir,
    landed_name,
    parse_landed,
    session_dir,
    transcripts_dir,
)
from asz.store._manifest_index import (
    MANIFESTS,
    BodyManifest,
    IndexedFile,
    decode_index,
    encode_index,
    is_manifest,
    pieces_named,
)
from asz.store._moves import MovedReads, retried_when_moved
from asz.store._streams import (
    Fresh,
    LandedWindow,
    StreamReader,
    windows_of,
)
from asz.store._writer import read_seq_file

__all__ = ["SessionFiles"]


class SessionFiles(MovedReads):
    """The landed files of one session, wherever its root is (see the module)."""

    def __init__(
        self,
        backend: Backend,
        session_id: str,
        *,
        trusts_derived: bool = True,
        generation: Generation | None = None,
    ) -> None:
        super().__init__()
        self.backend = backend
        self.id = session_id
        self.trusts_derived = trusts_derived
        """Whether derived files that hold are taken; without, everything is made again from
        the landed files (and kept), as ``asz verify`` does to check what was kept."""
        self.made: dict[str, Kept] = {}
        """Derived files this session made, by path, and what they hold."""
        self.problems: list[Problem] = []
        self.progress: Progress = Silent()
        """Told of every landed file read (a verify shows it on a terminal)."""
        self._manifests: dict[str, BodyManifest] | None = None
        self._response_pieces: set[str] = set()
        self._sequence_checked = False
        self._generation: tuple[Generation | None, list[Problem]] | None = None
        """The generation read (and the problems of newer manifests), once read; given, one
        not published yet is read as if it were (a repack reading back what it wrote)."""
        if generation is not None:
            self._generation = (generation, [])
        self._given = generation is not None
        self._pack: tuple[str, LandedFile] | None = None
        """The transcript pack read last: read for each stream it holds, it is read once."""
        self._marked: tuple[list[LandedName], str] | None = None
        """The listing last marked and its mark: a listing handed to several derived files
        (the summary and the kept report of one read) is stamped once."""

    # -- landed files ----------------------------------------------------------------------

    def generation(self) -> Generation | None:
        """The session's newest published generation (``asz.store._generation``), None when
        it has none; read once per session object."""
        if self._generation is None:
            self._generation = read_generation(self.backend, self.id)
        return self._generation[0]

    def renew(self) -> None:
        """Forgets what was read of the session's files, so that it is read again from its
        newest generation: for a reader that met a file a repack retired."""
        self._generation = None
        self.renewed()
        self._pack = None
        self._manifests = None
        self._response_pieces = set()
        self._sequence_checked = False

    def moved(self) -> bool:
        """Whether a generation other than the one read counts now (a repack published one
        since); never for a generation given to read back (``generation=``)."""
        if self._given:
            return False
        newest = read_generation(self.backend, self.id)[0]
        held = self.generation()
        return (None if newest is None else newest.id) != (None if held is None else held.id)

    def origin(self) -> tuple[str, str] | None:
        """The path and SHA-256 of the session's first landed file ever: kept by its
        generation once one replaced it, which an archive's claim names for good (None when
        nothing landed, or that file does not read)."""
        generation = self.generation()
        if generation is not None:
            return generation.origin
        names = self.landed(checked=False)
        if not names:
            return None
        try:
            data = self.backend.read(names[0].path, MAX_CONTENT_BYTES)
        except OSError:
            return None
        return names[0].path, hashlib.sha256(data).hexdigest()

    def landed_in(self, directory: str) -> list[LandedName]:
        """The landed files that count for the ordinary ``directory`` (a kind's, or a
        stream's), of any kind, in sequence order: those directly in it, or, once the session
        has a generation, its files for that directory and then those in it numbered above
        what the generation replaces."""
        backend = self.backend
        found = (parse_landed(directory, e.name) for e in backend.list(directory) if not e.is_dir)
        names = sorted(name for name in found if name is not None)
        generation = self.generation()
        if generation is None:
            return names
        return generation.in_dir(directory) + [n for n in names if n.seq > generation.replaces]

    def stream_dirs(self) -> list[str]:
        """Every stream directory of the session's landed transcripts, by name (a stream a
        generation holds is named by its ordinary directory, as ``landed_in`` takes it)."""
        base = transcripts_dir(self.id)
        names = self._ordinary_streams(base)
        generation = self.generation()
        if generation is not None:
            streams = (d for d in generation.ordinary_dirs() if d.startswith(base + "/"))
            names.update(d.rsplit("/", 1)[-1] for d in streams)
        return [f"{base}/{name}" for name in sorted(names)]

    def ordinary_stream_dirs(self) -> list[str]:
        """The stream directories in the session's ordinary layout, where the streams' cursors
        are: what a landing pass looks after, found without reading the generation (a stream
        only a generation holds has no cursor)."""
        base = transcripts_dir(self.id)
        return [f"{base}/{name}" for name in sorted(self._ordinary_streams(base))]

    def _ordinary_streams(self, base: str) -> set[str]:
        entries = self.backend.list(base)
        return {e.name for e in entries if e.is_dir and e.name.startswith(STREAM_PREFIX)}

    def landed(self, kind: str | None = None, *, checked: bool = True) -> list[LandedName]:
        """The session's landed files of ``kind`` (every kind when None), in sequence order.
        The first listing of a session also checks its sequence (:meth:`gaps`), so that every
        reader says the session is incomplete rather than show it as a shorter whole; the
        writer, which only numbers the next file, asks ``checked=False``."""
        found = self._listed(kind)
        if checked and not self._sequence_checked:
            self._sequence_checked = True
            gaps = self.gaps(found if kind is None else None)
            if gaps and not self.within_retry() and self.moved():
                # Listed half way through a repack's retiring: listed again, once, from its
                # generation (a read that starts again when moved does that itself).
                self.renew()
                self._sequence_checked = True
                found = self._listed(kind)
                gaps = self.gaps(found if kind is None else None)
            self.problems += gaps
        return found

    def gaps(self, listed: list[LandedName] | None = None) -> list[Problem]:
        """A problem when numbers of the session's sequence have no landed file.

        Every landed file of a session, of any kind, takes the next number of one sequence,
        and a number is used only by a file that landed (``asz.store._writer``); so the files
        are numbered 1 to n without a gap, n being at least what the ``seq`` file remembers.
        A number without its file is a landed file gone (removed, or not yet copied into a
        bucket a push is filling), unless the file after the gap says it was landed past
        files lost (``lost`` in its header). A landing under way publishes its files in order
        but may be listed half way through, so a gap is listed once more before it is said.
        """
        highest = read_seq_file(self.backend, self.id)
        every = self._listed(None) if listed is None else listed
        generation = self.generation()
        assert self._generation is not None
        problems = [*self._generation[1], *self._generation_gone(generation)]
        if problems:
            self.gone()
        floor = 0 if generation is None else generation.replaces
        if not _missing(every, highest, floor):
            return problems
        every = self._listed(None)
        missing = [
            span for span in _missing(every, highest, floor) if not self._landed_past(every, span)
        ]
        if not missing:
            return problems
        self.gone()
        top = max(highest, every[-1].seq if every else 0)
        where = self.backend.describe(session_dir(self.id))
        spans = ", ".join(str(a) if a == b else f"{a} to {b}" for a, b in missing)
        count = sum(b - a + 1 for a, b in missing)
        said = "a landed file" if count == 1 else f"{count} landed files"
        why = f"misses {said} of its sequence 1 to {top} (number {spans})"
        return [*problems, Problem(self.id, where, None, f"{why}: the session is incomplete")]

    def _generation_gone(self, generation: Generation | None) -> list[Problem]:
        """A problem for each file the session's generation names that is not there."""
        if generation is None:
            return []
        backend = self.backend
        there: dict[str, set[str]] = {}
        problems = []
        for name in generation.files:
            directory = name.path.rsplit("/", 1)[0]
            if directory not in there:
                there[directory] = {e.name for e in backend.list(directory) if not e.is_dir}
            if name.name not in there[directory]:
                why = "is gone: a file of the session's generation (the session is incomplete)"
                problems.append(Problem(self.id, backend.describe(name.path), None, why))
        return problems

    def _landed_past(self, landed: list[LandedName], span: tuple[int, int]) -> bool:
        """Whether the file after the missing numbers ``span`` says the collector landed past
        them, knowing them lost."""
        after = next((name for name in landed if name.seq > span[1]), None)
        if after is None:
            return False
        for _name, found in self.files([after], problems=[]):
            lost = found.header.get("lost")
            if isinstance(lost, list) and len(lost) == 2 and all(type(n) is int for n in lost):
                return bool(lost[0] <= span[0] and span[1] <= lost[1])
        return False

    def _listed(self, kind: str | None) -> list[LandedName]:
        found: list[LandedName] = []
        if kind in (None, BODY_KIND):
            found += self.landed_in(bodies_dir(self.id))
        if kind in (None, INDEX_KIND):
            found += self.landed_in(index_dir(self.id))
        if kind in (None, TRANSCRIPT_KIND):
            # A pack stands for each stream it holds; as a file of the session, it is one.
            found += {
                LandedName(name.seq, name.kind, name.path) if name.part else name
                for directory in self.stream_dirs()
                for name in self.landed_in(directory)
            }
        return sorted(name for name in found if kind is None or name.kind == kind)

    def landed_mark(self, names: Iterable[LandedName] | None = None) -> str:
        """What the session's landed files (those of ``names``, when given) are: their count
        and a digest of every path and stamp in sequence order. Landed files never change once
        published, so a result derived from them holds while the mark is the same; a file
        rewritten in any way (cut short, or changed in place at the same size) changes its
        stamp, so it is read again and its problem said, rather than hidden behind what was
        derived before (``asz.store._derived``)."""
        if names is None:
            return landed_mark(self.backend, self.landed())
        if self._marked is not None and self._marked[0] is names:
            return self._marked[1]
        mark = landed_mark(self.backend, names)
        if isinstance(names, list):
            self._marked = (names, mark)
        return mark

    def landed_bytes(self, kind: str | None = None) -> int:
        """The bytes on disk of the session's landed files of ``kind`` (every kind when None)."""
        return sum(self.size(name) for name in self.landed(kind))

    def size(self, name: LandedName) -> int:
        """A landed file's size; 0 when it is gone since it was listed (reading it is what
        says so), unless a repack moved the session and the read starts again."""
        try:
            return self.backend.size(name.path)
        except FileNotFoundError:
            self.gone()
            return 0

    def read(self, name: LandedName) -> LandedFile:
        """One landed file, checked whole; LandedFileError when it does not hold."""
        if name.part and self._pack is not None and self._pack[0] == name.path:
            return self._pack[1]
        where = self.backend.describe(name.path)
        try:
            data = self.backend.read(name.path, MAX_CONTENT_BYTES)
        except OSError as err:
            if err.errno == errno.ENOENT:
                self.gone()
            why = err.strerror if err.errno == errno.EFBIG else f"cannot be opened: {err.strerror}"
            self.progress.advance(1, 0)
            raise LandedFileError(where, str(why)) from None
        self.progress.advance(1, len(data))
        landed = decode_file(where, data)
        if name.part:
            self._pack = (name.path, landed)
        return landed

    def files(
        self, names: Iterable[LandedName], problems: list[Problem] | None = None
    ) -> Iterator[tuple[LandedName, LandedFile]]:
        """The files of ``names`` that read whole, in the order given; each that does not is a
        problem (in ``problems``, else the session's), never an end."""
        for name in names:
            try:
                yield name, self.read(name)
            except LandedFileError as err:
                self.problem(err.path, err.row, err.why, problems)

    def problem(
        self, file: str, row: int | None, why: str, problems: list[Problem] | None = None
    ) -> None:
        (self.problems if problems is None else problems).append(Problem(self.id, file, row, why))

    # -- bodies ----------------------------------------------------------------------------

    @retried_when_moved
    def manifests(self) -> dict[str, BodyManifest]:
        """Every landed body's manifest by record id, in landing order; the first landing of
        an id wins. Read once per session object, from the manifest index where it holds
        (:mod:`asz.store._manifest_index`) and from the body files it lacks."""
        if self._manifests is None:
            self._manifests = {}
            backend = self.backend
            found = MANIFESTS.read(self) if self.trusts_derived else None
            kept = {} if found is None else decode_index(found.value)
            files: dict[str, IndexedFile] = {}
            names = self.landed(BODY_KIND)
            stamps = [stamp_of(backend, name.path) for name in names]
            for name, stamp in zip(names, stamps, strict=True):
                entry = self._indexed(name, stamp, kept.get(name.name))
                if entry is None:
                    continue
                files[name.name] = entry
                where = backend.describe(name.path)
                for row, why in entry.problems:
                    self.problem(where, row, why)
                for row, meta in entry.records:
                    self._take_manifest(name, row, meta)
                    self._response_pieces.update(pieces_named(meta))
            if files != kept:
                mark = mark_of(zip((name.path for name in names), stamps, strict=True))
                MANIFESTS.keep(self, mark, encode_index(files))
        return self._manifests

    def response_pieces(self) -> set[str]:
        """The digests of the pieces the session's landed responses name: what rebuilding
        them alone must find in the ``new`` blobs of other records."""
        self.manifests()
        return self._response_pieces

    def _indexed(
        self, name: LandedName, stamp: str, kept: IndexedFile | None
    ) -> IndexedFile | None:
        """What a body file holds: from the index while the file has the stamp it had, else
        read from the file; None (and a problem) when it does not read."""
        if (
            kept is not None
            and kept.stamp == stamp
            and all(is_manifest(m) for _, m in kept.records)
        ):
            return kept
        try:
            landed = self.read(name)
        except LandedFileError as err:
            self.problem(err.path, err.row, err.why)
            return None
        records, problems = [], []
        for record in landed.records:
            if is_manifest(record.meta):
                records.append((record.row, record.meta))
            else:
                problems.append((record.row, "not a provider body manifest"))
        return IndexedFile.of(stamp, records, problems)

    def _take_manifest(self, name: LandedName, row: int, meta: dict[str, Any]) -> None:
        assert self._manifests is not None
        record_id = str(meta["id"])
        if record_id not in self._manifests:
            self._manifests[record_id] = BodyManifest.of(name, row, meta)

    def body_file(self, manifest: BodyManifest) -> LandedName:
        """The landed file a body's manifest says it is in, named without listing any."""
        return self.landed_at(bodies_dir(self.id), BODY_KIND, manifest.seq)

    def landed_at(self, directory: str, kind: str, seq: int) -> LandedName:
        """The landed file of ``kind`` numbered ``seq`` that counts for the ordinary
        ``directory``, named without listing any: in the session's generation when it
        replaces that number (whether or not the file is there)."""
        generation = self.generation()
        if generation is not None and seq <= generation.replaces:
            for name in generation.in_dir(directory):
                if name.seq == seq and name.part:
                    return name  # a transcript pack
            base = session_dir(self.id) + "/"
            directory = f"{generation.directory}/{directory[len(base) :]}"
        return LandedName(seq, kind, f"{directory}/{landed_name(kind, seq)}")

    def problems_said(self) -> str:
        """The problems met so far, as the end of a message: `` (a; b)``, or nothing."""
        return f" ({'; '.join(map(str, self.problems))})" if self.problems else ""

    # -- transcripts -----------------------------------------------------------------------

    def windows(
        self, names: Iterable[LandedName], problems: list[Problem] | None = None
    ) -> Iterator[tuple[LandedName, LandedWindow]]:
        """The windows of the transcript files ``names`` that hold, in the order given (of a
        pack named for one stream, that stream's)."""
        for name, landed in self.files(names, problems):
            try:
                windows = windows_of(landed, self.id)
            except LandedFileError as err:
                self.problem(err.path, err.row, err.why, problems)
                continue
            for window in windows:
                if not name.part or window.key == name.part:
                    yield name, window

    def stream(
        self, names: Iterable[LandedName], problems: list[Problem] | None = None
    ) -> Iterator[tuple[LandedName, LandedWindow, Fresh | None]]:
        """The windows of one stream's files, each with what it adds to its source read by the
        rule of ``asz.store._streams`` (None for a snapshot, a whole copy of its own)."""
        reader = StreamReader()
        for name, window in self.windows(names, problems):
            yield name, window, None if window.snapshot else reader.take(window)


def _missing(landed: list[LandedName], highest: int, floor: int = 0) -> list[tuple[int, int]]:
    """The spans ``(first, last)`` of numbers above ``floor`` (what a generation replaces)
    up to the highest (landed, or ``highest``) that no landed file has."""
    seqs = sorted({name.seq for name in landed if name.seq > floor})
    spans = []
    expected = floor + 1
    for seq in [*seqs, max(highest, seqs[-1] if seqs else 0) + 1]:
        if seq > expected:
            spans.append((expected, seq - 1))
        expected = max(expected, seq + 1)
    return spans
