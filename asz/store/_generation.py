"""Generations: a session's landed files replaced as a whole, so readers see one set or the other.

A session's ordinary landed files are numbered 1 to n and only ever added to. A *generation*
replaces the files numbered 1 to ``replaces`` with another set that holds exactly the same
bodies, lines and index lines (a repack cut over the whole session, or a session redacted
again). It comes to be in three steps, each safe to be stopped at:

1. its files are written under ``<session>/g-<replaces>/``, in the session's own layout
   (``provider_body/``, ``provider_index/``, ``transcripts/s-<16 hex>/``), numbered 1 to m,
   each read back and checked before it is published. No reader counts them yet;
2. its manifest, ``<session>/generation-<replaces>.json``, is created (never replacing a
   file) once they are all durable: from then on readers count the generation's files in place
   of the ordinary ones numbered up to ``replaces``, and the ordinary ones above it after them;
3. what it replaced (ordinary files up to ``replaces``, older generations) is retired: removed
   from a local root at once, kept in a bucket until ``asz push --prune``.

So a reader sees the old set (no manifest yet) or the new set (the manifest), never both
counted and never neither. The newest generation whose manifest reads counts; a manifest that
does not read is a problem every reader says.

Two generations may replace the same numbers: one written again over a generation that already
covers every number the session has (a session re-redacted for the archive, whose bucket holds
the first one and never replaces an object). The later one is a *revision* of those numbers,
``g-<replaces>.<revision>/`` and ``generation-<replaces>.<revision>.json`` (``GenerationId``;
the plain names are revision 0), and the newest is the one with the highest ``replaces``, then
the highest revision. A generation directory without its manifest is a
write that never finished: never read, removed by the next repack.

:class:`GenerationWriter` is the one way a generation is written: ``land`` each file (as
``SessionWriter.land``, into the session's ordinary directories, which it places under the
generation's), then ``publish``. The caller holds ``landing_lock`` around ``publish`` and
the retiring (``asz.store.retire``), so that no landing pass reads the session half way.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import orjson

from asz import __version__
from asz.crashpoints import crash_point
from asz.store._backend import Backend
from asz.store._errors import Problem
from asz.store._framing import LandedFile
from asz.store._layout import (
    KINDS,
    TRANSCRIPT_KIND,
    TRANSCRIPTS_DIR,
    GenerationId,
    LandedName,
    bodies_dir,
    generation_dir,
    generation_file,
    index_dir,
    is_stream_key,
    ordinary_path,
    parse_generation_dir,
    parse_generation_file,
    parse_landed,
    session_dir,
    transcripts_dir,
)
from asz.store._streams import PACK_STREAMS
from asz.store._writer import Batch, Landed, SessionWriter

__all__ = [
    "FORMAT",
    "MAX_MANIFEST_BYTES",
    "Generation",
    "GenerationError",
    "GenerationWriter",
    "PreparedFile",
    "decode_generation",
    "publish_generation",
    "read_generation",
    "remove_unpublished",
    "retire",
]

FORMAT = "asz.generation/1"
PACK_FORMAT = "asz.generation/2"
"""The format of a manifest that names a transcript pack (a file holding windows of several
streams, ``asz.store._streams``): a reader that does not know packs then says it cannot read
the generation, rather than count a session without its transcripts."""
FORMATS = (FORMAT, PACK_FORMAT)
REMOVERS = 4
"""Files a retiring removes at once (see :func:`retire`)."""
MAX_MANIFEST_BYTES = 64 * 1024 * 1024


class GenerationError(Exception):
    """A generation manifest that does not hold; ``why`` says how."""


@dataclass(frozen=True, slots=True)
class Generation:
    """A published generation: the numbers it replaces, and its files with their digests."""

    session: str
    replaces: int
    files: tuple[LandedName, ...]
    """Its files, at their real paths, in sequence order."""
    digests: dict[str, tuple[int, str]] = field(default_factory=dict)
    """Each file's size and SHA-256, by path: what a bucket's copy must be."""
    origin: tuple[str, str] | None = None
    """The path and SHA-256 of the session's first landed file ever, which the generation
    replaced and which an archive's claim names (``asz.archive.claims``)."""
    streams: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Each transcript pack's stream directories (their names), by path: a pack stands for
    each of them, its windows of that stream only."""
    revision: int = 0
    """Its revision among the generations that replace the same numbers (``GenerationId``)."""

    @property
    def id(self) -> GenerationId:
        return GenerationId(self.replaces, self.revision)

    @property
    def path(self) -> str:
        return generation_file(self.session, self.id)

    @property
    def directory(self) -> str:
        return generation_dir(self.session, self.id)

    def in_dir(self, directory: str) -> list[LandedName]:
        """The generation's files that stand for the ordinary directory ``directory``: a pack
        that holds its stream named for that stream alone (``LandedName.part``)."""
        parent, _, key = directory.rpartition("/")
        found = []
        for name in self.files:
            keys = self.streams.get(name.path)
            if keys is None:
                if ordinary_dir(self.session, name) == directory:
                    found.append(name)
            elif key in keys and parent == transcripts_dir(self.session):
                found.append(LandedName(name.seq, name.kind, name.path, key))
        return found

    def ordinary_dirs(self) -> set[str]:
        """The ordinary directories the generation has files for (a pack: its streams')."""
        dirs = {ordinary_dir(self.session, n) for n in self.files if n.path not in self.streams}
        base = transcripts_dir(self.session)
        return dirs | {f"{base}/{key}" for keys in self.streams.values() for key in keys}


def ordinary_dir(session: str, name: LandedName) -> str:
    return ordinary_path(session, name.path).rsplit("/", 1)[0]


def encode_generation(
    session: str,
    generation: GenerationId,
    files: Iterable[Landed],
    origin: tuple[str, str] | None,
    streams: Mapping[str, Sequence[str]] | None = None,
) -> bytes:
    """The manifest's bytes: one JSON line naming every file (path, size, SHA-256, and a
    transcript pack's stream directories), and its revision above revision 0 (a manifest of
    revision 0 reads as it did before revisions)."""
    streams = streams or {}
    listed = [
        {"path": f.path, "size": f.size, "sha256": f.sha256}
        | ({PACK_STREAMS: list(streams[f.path])} if f.path in streams else {})
        for f in files
    ]
    manifest = {
        "format": PACK_FORMAT if streams else FORMAT,
        "session": session,
        "replaces": generation.replaces,
        **({"revision": generation.revision} if generation.revision else {}),
        "origin": None if origin is None else {"path": origin[0], "sha256": origin[1]},
        "at": datetime.now(UTC).isoformat(timespec="microseconds"),
        "writer": f"asz/{__version__}",
        "files": listed,
    }
    return orjson.dumps(manifest) + b"\n"


def decode_generation(session: str, generation: GenerationId, data: bytes) -> Generation:
    """The generation a manifest names; GenerationError when it does not hold: not JSON,
    another format, session, number or revision than its name (``generation``) says, or a
    file outside its directory, not named as a landed file, or numbered out of order."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        raise GenerationError("is not JSON (not whole)") from None
    if not isinstance(value, dict) or value.get("format") not in FORMATS:
        raise GenerationError(f"is not in the format {FORMAT} or {PACK_FORMAT}")
    replaces = generation.replaces
    if (
        value.get("session") != session
        or value.get("replaces") != replaces
        or value.get("revision", 0) != generation.revision
    ):
        raise GenerationError("names another session, number or revision than its file name")
    listed = value.get("files")
    if not isinstance(listed, list) or not listed:
        raise GenerationError("names no files")
    prefix = generation_dir(session, generation) + "/"
    names: list[LandedName] = []
    digests: dict[str, tuple[int, str]] = {}
    packs: dict[str, tuple[str, ...]] = {}
    for item in listed:
        path = item.get("path") if isinstance(item, dict) else None
        name = _landed_in(prefix, path)
        size, digest = (item.get("size"), item.get("sha256")) if name else (None, None)
        if name is None or type(size) is not int or not isinstance(digest, str):
            raise GenerationError(f"names {path!r}, not a landed file of the generation")
        if name.seq != len(names) + 1:
            raise GenerationError(f"numbers {path} out of its order 1 to n")
        names.append(name)
        digests[name.path] = (size, digest)
        keys = _pack_streams(prefix, name, item.get(PACK_STREAMS))
        if keys is not None:
            packs[name.path] = keys
    if names[-1].seq > replaces:
        raise GenerationError(f"has more files than the {replaces} numbers it replaces")
    origin = value.get("origin")
    first: tuple[str, str] | None = None
    if origin is not None:
        path, digest = (
            (origin.get("path"), origin.get("sha256")) if isinstance(origin, dict) else (0, 0)
        )
        if not isinstance(path, str) or not isinstance(digest, str):
            raise GenerationError("names its origin without a path and a SHA-256")
        first = (path, digest)
    return Generation(session, replaces, tuple(names), digests, first, packs, generation.revision)


def _pack_streams(prefix: str, name: LandedName, listed: object) -> tuple[str, ...] | None:
    """The stream directories a manifest's entry names for a transcript pack (None for any
    other file); GenerationError where a pack lacks them or another file has them."""
    pack = name.kind == TRANSCRIPT_KIND and name.path == f"{prefix}{TRANSCRIPTS_DIR}/{name.name}"
    if listed is None and not pack:
        return None
    if not pack or not isinstance(listed, list) or not listed:
        raise GenerationError(f"names {name.path} with streams it cannot hold")
    if not all(is_stream_key(key) for key in listed) or len(set(listed)) != len(listed):
        raise GenerationError(f"names streams of {name.path} that are not stream directories")
    return tuple(listed)


def _landed_in(prefix: str, path: object) -> LandedName | None:
    if not isinstance(path, str) or not path.startswith(prefix) or ".." in path.split("/"):
        return None
    directory, _, name = path.rpartition("/")
    found = parse_landed(directory, name)
    return found if found is not None and found.kind in KINDS else None


def read_generation(backend: Backend, session: str) -> tuple[Generation | None, list[Problem]]:
    """The session's newest generation whose manifest reads (None when it has none), and a
    problem for each newer one that does not."""
    base = session_dir(session)
    named = (parse_generation_file(e.name) for e in backend.list(base) if not e.is_dir)
    ids = sorted(generation for generation in named if generation is not None)
    problems: list[Problem] = []
    for generation in reversed(ids):
        path = generation_file(session, generation)
        try:
            found = decode_generation(session, generation, backend.read(path, MAX_MANIFEST_BYTES))
        except OSError as err:
            problems.append(Problem(session, backend.describe(path), None, str(err.strerror)))
        except GenerationError as err:
            problems.append(Problem(session, backend.describe(path), None, str(err)))
        else:
            return found, problems
    return None, problems


class GenerationWriter:
    """Writes one new generation of a session (see the module): ``land`` its files in the
    order they are to be numbered, then ``publish``.

    ``replaces`` is the highest number of the session's files it stands for; its files are
    numbered from 1, and there must be no more of them than that. ``revision`` is its
    revision among generations replacing the same numbers (``GenerationId``). ``levels`` is
    the zstd level of each kind's files (landing's when None).
    """

    def __init__(
        self,
        backend: Backend,
        session: str,
        replaces: int,
        *,
        origin: tuple[str, str] | None,
        compression: str,
        revision: int = 0,
        levels: Mapping[str, int] | None = None,
    ) -> None:
        self.backend = backend
        self.session = session
        self.replaces = replaces
        self.id = GenerationId(replaces, revision)
        self.origin = origin
        """``Session.origin`` of the session it replaces (``Generation.origin``)."""
        self.batch = Batch(backend)
        self._files: list[Landed] = []
        self._streams: dict[str, list[str]] = {}
        self.writer = SessionWriter(
            backend,
            session,
            self.batch,
            compression=compression,
            numbered=lambda: (0, 0),
            generation=replaces,
            levels=levels,
        )

    @property
    def directory(self) -> str:
        return generation_dir(self.session, self.id)

    def land(
        self,
        kind: str,
        directory: str,
        header: dict[str, Any],
        records: Iterable[tuple[dict[str, Any], bytes]],
        *,
        check: Callable[[LandedFile], None] | None = None,
    ) -> Landed:
        """Writes (and reads back) one file of the generation, as ``SessionWriter.land`` does
        for the ordinary ``directory`` of the session, and keeps its bytes for the manifest."""
        base = session_dir(self.session) + "/"
        if not directory.startswith(base):
            raise ValueError(f"{directory} is not a directory of session {self.session}")
        where = f"{self.directory}/{directory[len(base) :]}"
        landed = self.writer.land(kind, where, header, records, check=check)
        if landed.seq > self.replaces:
            raise ValueError(f"a generation replacing {self.replaces} numbers has more files")
        self._files.append(landed)
        if kind == TRANSCRIPT_KIND and PACK_STREAMS in header:
            self._streams[landed.path] = [item["key"] for item in header[PACK_STREAMS]]
        return landed

    def commit(self) -> Generation:
        """Publishes the files landed so far, durable but not counted yet (no manifest): the
        generation they make, for the caller to read back whole before :meth:`publish`."""
        if not self._files:
            raise ValueError("a generation holds at least one file")
        self.batch.commit()
        data = encode_generation(self.session, self.id, self._files, self.origin, self._streams)
        return decode_generation(self.session, self.id, data)

    def publish(self) -> Generation:
        """Creates the manifest of the files committed, which makes them count; AlreadyExists
        when a generation of the same numbers and revision was published before. The caller
        holds ``landing_lock``."""
        generation = self.commit() if len(self.batch) else None
        data = encode_generation(self.session, self.id, self._files, self.origin, self._streams)
        backend = self.backend
        temp = backend.write_temp(generation_file(self.session, self.id), data)
        try:
            backend.publish([temp], None, lambda _i: None)
        finally:
            backend.remove_temp(temp)
        crash_point("generation.manifest")
        return generation or decode_generation(self.session, self.id, data)


@dataclass(frozen=True, slots=True)
class PreparedFile:
    """One file of a new generation, as ``SessionWriter.land`` takes it: its kind, the
    session's ordinary directory it stands for (``asz.store._layout``), its header's own
    fields, its records, and a check of it as read back (raise to refuse it)."""

    kind: str
    directory: str
    header: dict[str, Any]
    records: Sequence[tuple[dict[str, Any], bytes]]
    check: Callable[[LandedFile], None] | None = None


def publish_generation(
    backend: Backend,
    session: str,
    replaces: int,
    files: Iterable[PreparedFile],
    *,
    origin: tuple[str, str] | None,
    compression: str,
    proven: Callable[[Generation], None] | None = None,
    landing: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    levels: Mapping[str, int] | None = None,
) -> tuple[Generation, int]:
    """Replaces the session's files numbered 1 to ``replaces`` with ``files`` (numbered 1 to
    m in the order given), the whole way: clears what an earlier attempt left, writes and
    checks every file, lets ``proven`` read them as the session they would make (it raises to
    refuse them: nothing is published), publishes the manifest and retires what it replaced
    under ``landing`` (``landing_lock``: no pass reads the session half way). The generation
    and the number of files retired; on any failure before the manifest, nothing counts and
    nothing is left. ``origin`` is ``Session.origin()`` of the session replaced."""
    remove_unpublished(backend, session)
    writer = GenerationWriter(
        backend, session, replaces, origin=origin, compression=compression, levels=levels
    )
    try:
        for file in files:
            writer.land(file.kind, file.directory, file.header, file.records, check=file.check)
        candidate = writer.commit()
        if proven is not None:
            proven(candidate)
        with landing():
            generation = writer.publish()
            return generation, retire(backend, generation)
    except BaseException:
        remove_unpublished(backend, session)
        raise


def retire(backend: Backend, generation: Generation) -> int:
    """Removes what ``generation`` replaced from a root that may be written: the session's
    ordinary files numbered up to what it replaces, and every other generation (an older
    one, or one never published). Readers count none of them since the manifest was
    published, so a stop half way leaves only files nobody counts, which the next repack
    removes. The number of files removed."""
    session, base = generation.session, session_dir(generation.session)
    removed = 0
    for entry in backend.list(base):
        found = (parse_generation_dir if entry.is_dir else parse_generation_file)(entry.name)
        if found is not None and found != generation.id:
            removed += remove_tree(backend, f"{base}/{entry.name}", entry.is_dir)
    transcripts = transcripts_dir(session)
    streams = [f"{transcripts}/{e.name}" for e in backend.list(transcripts) if e.is_dir]
    replaced = []
    for directory in [bodies_dir(session), index_dir(session), *streams]:
        for entry in backend.list(directory):
            name = None if entry.is_dir else parse_landed(directory, entry.name)
            if name is not None and name.seq <= generation.replaces:
                replaced.append(name.path)

    def remove(path: str) -> None:
        backend.remove(path)
        crash_point("generation.retired")

    # Removed a few at a time: a busy file system takes milliseconds for each removal, and
    # several under way at once overlap their waits (measured on a loaded 2-core machine:
    # the 1,748 files of bench/repack.py in 2.4 to 4.7 s, against 2.7 to 6.4 s one by one).
    with ThreadPoolExecutor(REMOVERS) as pool:
        for _done in pool.map(remove, replaced):
            removed += 1
    return removed


def remove_unpublished(backend: Backend, session: str) -> int:
    """Removes the session's generation directories that have no manifest: writes that never
    finished, which no reader counts. The number of files removed."""
    base = session_dir(session)
    entries = backend.list(base)
    published = {parse_generation_file(e.name) for e in entries if not e.is_dir}
    removed = 0
    for entry in entries:
        found = parse_generation_dir(entry.name) if entry.is_dir else None
        if found is not None and found not in published:
            removed += remove_tree(backend, f"{base}/{entry.name}", True)
    return removed


def remove_tree(backend: Backend, path: str, is_dir: bool) -> int:
    """Removes ``path`` and, for a directory, everything below it; the files removed."""
    if not is_dir:
        backend.remove(path)
        return 1
    removed = sum(remove_tree(backend, f"{path}/{e.name}", e.is_dir) for e in backend.list(path))
    backend.remove(path)
    return removed
