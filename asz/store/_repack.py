"""Repacking a session: its landed files merged into as few as ``max_delta_bytes`` allows.

A live session lands a few small files per pass, which cost a file each on disk, a request
each in a bucket, and compress badly one by one. A repack reads everything the session holds
and lands it again as one generation (``asz.store._generation``), cut over the whole session:

- bodies: every record as it landed, in landing order, merged into files of up to
  ``PACK_BYTES`` (each was cut against the whole session when it landed, so the codec would
  find nothing more; what is left to gain is zstd seeing a long session's records in one
  stream rather than restarting every ``max_delta_bytes``);
- transcripts: each stream's bytes (or a sidecar's copies) in windows of up to
  ``max_delta_bytes``, and every stream of the session together in transcript packs of up
  to ``PACK_BYTES`` (``asz.store._streams``), so that a subagent's windows compress in one
  stream with its session's, at ``REPACK_LEVELS``;
- index lines: as they were, merged.

Nothing counts until it is proven: the files are written and read back (every body rebuilt to
its digest), then read again from disk as the session the generation would make, whose
bodies, lines and index lines must be exactly the old session's; only then is the manifest
published, under the landing lock, and what it replaced retired. A session that has any
problem (a damaged file, a gap, a stream that does not follow) is repacked not at all.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asz.bodykeys import BodyKeys
from asz.config import Config
from asz.store._bodies import Records, packed
from asz.store._bodyreader import BodyLoader
from asz.store._errors import Problem
from asz.store._framing import LandedFile
from asz.store._generation import (
    Generation,
    PreparedFile,
    publish_generation,
    remove_unpublished,
    retire,
)
from asz.store._layout import (
    BODY_KIND,
    INDEX_KIND,
    REPACK_LOCK_FILE,
    TRANSCRIPT_KIND,
    LandedName,
    bodies_dir,
    index_dir,
    seq_file,
    transcripts_dir,
)
from asz.store._root import state_lock
from asz.store._session import Session
from asz.store._store import Store
from asz.store._streams import APPEND, PACK_STREAMS, SNAPSHOT

__all__ = [
    "REPACK_LEVELS",
    "RepackBusy",
    "RepackOutcome",
    "budgets_of",
    "landed_at",
    "quiet_for",
    "repack_lock",
    "repack_session",
]

PACK_BYTES = 32 * 1024 * 1024
"""The most bytes of records one repacked file of bodies, or one transcript pack, holds: a
reader holds a file whole. Landing cuts at ``max_delta_bytes`` (2 MiB), which keeps a live
session's files small; a quiet session's records compress better in one stream. Measured on
two synthetic sessions of 120 turns (docs/operations.md): bodies in 14 files of up to 2 MiB
were 2.55x of ``zstd -19 --long`` over each session's bodies, in one file each 1.39x (at level
12, before the ``suffix`` segment)."""
REPACK_LEVELS = {BODY_KIND: 19, TRANSCRIPT_KIND: 12, INDEX_KIND: 12}
"""zstd level of repacked files, by kind: a session is repacked once, when it is quiet, so it
may cost more than landing (level 6, 3 for transcripts). Bodies are cut against their session
already, so a repacked file of them holds about a tenth of the bytes it stands for, and level
19 costs little per source byte: on two sessions of 120 turns (docs/operations.md) it takes
5% off level 12's bytes with the repack still at 137 MB/s of source (68 MB/s on six
sessions of 30 turns, whose records level 19 compresses more slowly). Transcripts are
compressed as they were written, so level 19 would cost ten times level 12's time for 5% of
bytes already under the goal; level 9 costs 1 to 2% more at twice the speed. Long-distance
matching finds nothing more within one file and slows the compressing."""

REPACKED = "repacked"
PACKED = "packed"
DAMAGED = "damaged"
PLANNED = "planned"


@dataclass(slots=True)
class RepackOutcome:
    """What a repack of one session did (``state``), or would do with ``--dry-run``."""

    session: str
    state: str = PACKED
    """``repacked``; ``planned`` (a dry run); ``packed`` (fewer files it would not make);
    ``damaged`` (``why`` says what, and nothing of the session was repacked)."""
    files_before: int = 0
    bytes_before: int = 0
    files_after: int = 0
    bytes_after: int | None = None
    source_bytes: int = 0
    """The bytes the session's files stand for: bodies, transcript bytes, index lines."""
    retired: int = 0
    seconds: float = 0.0
    why: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "session": self.session,
            "state": self.state,
            "files_before": self.files_before,
            "bytes_before": self.bytes_before,
            "files_after": self.files_after,
            "bytes_after": self.bytes_after,
            "source_bytes": self.source_bytes,
            "retired": self.retired,
            "seconds": self.seconds,
            "why": self.why,
        }


class Damaged(Exception):
    """The session does not read whole; nothing of it is repacked."""


@dataclass(slots=True)
class _Unit:
    """Files of one kind (or a transcript pack) to land together, in order, from the number
    of the first old file they stand for (which keeps the order kinds first landed in)."""

    first: int
    kind: str
    directory: str
    header: dict[str, Any]
    files: list[Records]
    check: Callable[[LandedFile], None] | None = None


@dataclass(slots=True)
class _Contents:
    """What a session holds, as digests: what a repack must give back exactly."""

    bodies: dict[str, tuple[str, str, int, str, Any]] = field(default_factory=dict)
    streams: dict[str, tuple[str, ...]] = field(default_factory=dict)
    index: list[tuple[Any, str]] = field(default_factory=list)
    source_bytes: int = field(default=0, compare=False)


def repack_session(
    store: Store,
    session_id: str,
    budgets: Mapping[str, int],
    *,
    landing: Callable[[], AbstractContextManager[None]] = contextlib.nullcontext,
    published: Callable[[Session], None] | None = None,
    dry_run: bool = False,
) -> RepackOutcome:
    """Repacks one session of a root that may be written (see the module). ``landing`` holds
    landing away (``landing_lock``) for the whole of it, so the session read is the session
    replaced: a pass waits for one session's repack at most. The caller holds the root's
    repack lock, so no other generation is written meanwhile. ``published`` sees the session
    as it reads once its generation is published (still under ``landing``): where state
    derived by a higher layer (the transcript cursors) is moved to the new files."""
    with landing():
        return _repack(store, session_id, budgets, published, dry_run)


def _repack(
    store: Store,
    session_id: str,
    budgets: Mapping[str, int],
    published: Callable[[Session], None] | None,
    dry_run: bool,
) -> RepackOutcome:
    started = time.monotonic()
    outcome = RepackOutcome(session_id)
    backend = store.backend
    if not dry_run:
        remove_unpublished(backend, session_id)
    old = store.open_session(session_id)
    names = old.landed()
    outcome.files_before = len(names)
    outcome.bytes_before = sum(store.size_of(name.path) for name in names)
    generation = old.generation()
    if generation is not None and names and names[-1].seq <= generation.replaces:
        # Packed already; what a stopped repack left of the files it replaced goes now.
        outcome.retired = 0 if dry_run else retire(backend, generation)
        return _done(outcome, started)
    if len(names) < 2:
        return _done(outcome, started)
    try:
        contents, units = _plan(old, names, budgets)
        outcome.source_bytes = contents.source_bytes
        outcome.files_after = sum(len(unit.files) for unit in units)
        if outcome.files_after >= outcome.files_before:
            return _done(outcome, started)
        if dry_run:
            outcome.state = PLANNED
            return _done(outcome, started)
        replaces = max(names[-1].seq, generation.replaces if generation else 0)
        prepared = [
            PreparedFile(unit.kind, unit.directory, unit.header, records, unit.check)
            for unit in sorted(units, key=lambda unit: unit.first)
            for records in unit.files
        ]

        def proven(candidate: Generation) -> None:
            again = _contents(Session(store.backend, session_id, generation=candidate))
            if again != contents:
                raise Damaged("the repacked files do not give back what the session holds")

        generation, outcome.retired = publish_generation(
            store.backend,
            session_id,
            replaces,
            prepared,
            origin=old.origin(),
            compression=store.compression,
            proven=proven,
            levels=REPACK_LEVELS,
        )
        outcome.bytes_after = sum(size for size, _digest in generation.digests.values())
        if published is not None:
            published(store.open_session(session_id))
    except Damaged as err:
        outcome.state, outcome.why = DAMAGED, str(err)
        outcome.files_after, outcome.bytes_after = 0, None
        return _done(outcome, started)
    outcome.state = REPACKED
    return _done(outcome, started)


def _done(outcome: RepackOutcome, started: float) -> RepackOutcome:
    outcome.seconds = round(time.monotonic() - started, 6)
    return outcome


def _said(problems: list[Problem]) -> str:
    return "; ".join(map(str, problems[:3])) + (" ..." if len(problems) > 3 else "")


def _plan(
    session: Session, names: list[LandedName], budgets: Mapping[str, int]
) -> tuple[_Contents, list[_Unit]]:
    """What the session holds, and the files that would hold it again; Damaged when any of
    it does not read whole."""
    if session.problems:
        raise Damaged(_said(session.problems))
    contents = _Contents()
    units: list[_Unit] = []
    bodies = session.landed(BODY_KIND)
    if bodies:
        budget = max(budgets[BODY_KIND], PACK_BYTES)
        units.append(_body_unit(session, bodies[0].seq, budget, contents))
    index = session.landed(INDEX_KIND)
    if index:
        units += _index_units(session, index, budgets[INDEX_KIND], contents)
    streams = [
        _stream(session, directory, names, budgets[TRANSCRIPT_KIND], contents)
        for directory in session.stream_dirs()
        if (names := session.landed_in(directory))
    ]
    units += _packs(session, sorted(streams, key=lambda stream: stream.first))
    if session.problems or not names:
        raise Damaged(_said(session.problems) or "it holds no landed file")
    return contents, units


def _body_unit(session: Session, first: int, budget: int, contents: _Contents) -> _Unit:
    """Every body record as it landed, in landing order, merged (a record landed twice, after
    a crash, once). Records name what they copy by record id and digest, never by file, and
    each was cut when it landed against everything the session held, so cutting the bodies
    again finds the same pieces (measured: within 0.1% of the bytes): what a repack gains is
    the files merged, each compressed as one stream. That every body still rebuilds to its
    digest is proven from the files written (:func:`_contents`); what the session holds is
    taken from the records read here, so that each old file is read once."""
    records: list[tuple[dict[str, Any], bytes]] = []
    for _name, landed in session.files(session.landed(BODY_KIND)):
        for record in landed.records:
            record_id = record.meta.get("id")
            if isinstance(record_id, str) and record_id not in contents.bodies:
                contents.bodies[record_id] = _body_of(record.meta)
                records.append((record.meta, record.payload))
    contents.source_bytes += sum(body[2] for body in contents.bodies.values())
    return _Unit(first, BODY_KIND, bodies_dir(session.id), {}, list(packed(records, budget)))


def _index_units(
    session: Session, names: list[LandedName], budget: int, contents: _Contents
) -> list[_Unit]:
    """The index lines as they landed, merged; files with another header stay apart."""
    units: list[_Unit] = []
    for name, landed in session.files(names):
        header = {k: v for k, v in landed.header.items() if k == "src"}
        if not units or units[-1].header != header:
            units.append(_Unit(name.seq, INDEX_KIND, index_dir(session.id), header, []))
        records = [(record.meta, record.payload) for record in landed.records]
        units[-1].files.append(records)
        contents.source_bytes += sum(len(record.payload) for record in landed.records)
        contents.index += [_index_line(meta.get("off"), payload) for meta, payload in records]
    for unit in units:
        unit.files = list(packed((r for f in unit.files for r in f), budget))
    return units


@dataclass(slots=True)
class _Stream:
    """One stream of the session as a pack lists it, and its windows, from the number of
    its first old file."""

    first: int
    entry: dict[str, Any]
    windows: list[tuple[dict[str, Any], bytes]]


def _stream(
    session: Session, directory: str, names: list[LandedName], budget: int, contents: _Contents
) -> _Stream:
    """One stream's bytes in windows of complete lines up to ``budget`` (a longer line
    alone); a sidecar's copies, each whole."""
    entry: dict[str, Any] = {}
    data: list[bytes] = []
    copies: list[tuple[dict[str, Any], bytes]] = []
    problems: list[Problem] = []
    for name, window, fresh in session.stream(names, problems):
        if not entry:
            shape = SNAPSHOT if window.snapshot else APPEND
            key = directory.rsplit("/", 1)[-1]
            entry = {"key": key, "source": window.source, "stream": window.stream, "shape": shape}
        if fresh is None:
            copies.append((_window_meta(window.payload, 0, 1), window.payload))
        elif fresh.misfit:
            raise Damaged(f"{session.backend.describe(name.path)}: {fresh.misfit}")
        else:
            data.append(fresh.data)
    if problems or not entry:
        raise Damaged(_said(problems) or f"{directory} holds no window")
    whole = b"".join(data)
    if entry["shape"] == SNAPSHOT:
        windows = copies
        contents.source_bytes += sum(len(payload) for _, payload in copies)
    else:
        windows = list(_windows(whole, budget))
        contents.source_bytes += len(whole)
    digests = (*(meta["sha256"] for meta, _ in copies), hashlib.sha256(whole).hexdigest())
    contents.streams[entry["source"]] = (*digests, str(whole.count(b"\n")))
    return _Stream(names[0].seq, entry, windows)


def _packs(session: Session, streams: list[_Stream]) -> Iterator[_Unit]:
    """The session's streams, in the order they first landed, as transcript packs: each
    holds windows of several streams (its header lists them, each window names its own),
    up to ``PACK_BYTES``, so that a subagent's stream compresses against its session's."""
    if not streams:
        return
    first, directory = streams[0].first, transcripts_dir(session.id)
    listed: dict[str, int] = {}
    records: list[tuple[dict[str, Any], bytes]] = []
    size = 0
    for stream in streams:
        for meta, payload in stream.windows:
            if records and size + len(payload) > PACK_BYTES:
                yield _pack_unit(first, directory, listed, streams, records)
                listed, records, size = {}, [], 0
            which = listed.setdefault(stream.entry["key"], len(listed))
            records.append(({"s": which, **meta}, payload))
            size += len(payload)
    yield _pack_unit(first, directory, listed, streams, records)


def _pack_unit(
    first: int,
    directory: str,
    listed: dict[str, int],
    streams: list[_Stream],
    records: list[tuple[dict[str, Any], bytes]],
) -> _Unit:
    entries = {stream.entry["key"]: stream.entry for stream in streams}
    header = {PACK_STREAMS: [entries[key] for key in listed]}
    return _Unit(first, TRANSCRIPT_KIND, directory, header, [records])


def _windows(data: bytes, budget: int) -> Iterator[tuple[dict[str, Any], bytes]]:
    """``data`` (complete lines) in windows of up to ``budget`` bytes, each ending with a
    line; a longer line is a window alone. No data is one empty window, which keeps an empty
    source."""
    off, line = 0, 1
    while True:
        end = len(data) if len(data) - off <= budget else data.rfind(b"\n", off, off + budget) + 1
        if end <= off < len(data):
            end = data.index(b"\n", off) + 1
        window = data[off:end]
        yield _window_meta(window, off, line), window
        off, line = end, line + window.count(b"\n")
        if off >= len(data):
            return


def _window_meta(window: bytes, off: int, line: int) -> dict[str, Any]:
    digest = hashlib.sha256(window).hexdigest()
    return {"off": off, "line": line, "lines": window.count(b"\n"), "sha256": digest}


def _contents(session: Session) -> _Contents:
    """What ``session`` holds, read whole from its files; Damaged when any of it does not
    hold (a body that does not rebuild, a stream that does not follow)."""
    problems: list[Problem] = []
    BodyLoader(session, rebuild_each=True, problems=problems).load_all()
    contents = _Contents(bodies=_bodies_of(session), index=_index_of(session))
    for directory in session.stream_dirs():
        names = session.landed_in(directory)
        for _name, window, _fresh in session.stream(names[:1]):
            contents.streams[window.source] = _stream_of(session, names)
            break
    if problems or session.problems:
        raise Damaged(_said(problems + session.problems))
    return contents


def _bodies_of(session: Session) -> dict[str, tuple[str, str, int, str, Any]]:
    return {
        record_id: (m.role, m.src, m.size, m.sha256, m.keys)
        for record_id, m in session.manifests().items()
    }


def _body_of(meta: dict[str, Any]) -> tuple[str, str, int, str, Any]:
    """A body record's manifest as :func:`_bodies_of` gives it (``Session.manifests``)."""
    size = meta.get("size")
    keys = BodyKeys.from_dict(meta.get("keys"))
    role, src, sha256 = (str(meta.get(name)) for name in ("role", "src", "sha256"))
    return role, src, size if type(size) is int else -1, sha256, keys


def _index_of(session: Session) -> list[tuple[Any, str]]:
    return [_index_line(line.offset, line.data) for line in session.index_lines()]


def _index_line(offset: Any, data: bytes) -> tuple[Any, str]:
    return offset, hashlib.sha256(data).hexdigest()


def _stream_of(session: Session, names: list[LandedName]) -> tuple[str, ...]:
    """A stream as digests: of its bytes and line count (appended), or of each copy."""
    digest = hashlib.sha256()
    lines = 0
    copies: list[str] = []
    for _name, window, fresh in session.stream(names):
        if fresh is None:
            copies.append(window.sha256)
        else:
            digest.update(fresh.data)
            lines += fresh.data.count(b"\n")
    return (*copies, digest.hexdigest(), str(lines))


class RepackBusy(Exception):
    """Another repack of the root is running."""


def repack_lock(root: Path) -> AbstractContextManager[None]:
    """One repack of a root at a time (``asz repack`` and the service's)."""
    return state_lock(
        root, REPACK_LOCK_FILE, lambda: RepackBusy(f"another repack of {root} is running")
    )


def landed_at(root: Path, session: str) -> float:
    """When the session last landed a file: the time of its ``seq`` file, which every landing
    batch rewrites and a repack never touches (-infinity when it has none)."""
    try:
        return os.stat(root / seq_file(session)).st_mtime
    except OSError:
        return -math.inf


def quiet_for(root: Path, session: str, now: float | None = None) -> float:
    """Seconds since the session last landed a file (:func:`landed_at`)."""
    return (time.time() if now is None else now) - landed_at(root, session)


def budgets_of(config: Config) -> dict[str, int]:
    """Each kind's ``max_delta_bytes``, from the adapter that lands it."""
    provider = config.adapters.claude_code_provider.max_delta_bytes
    local = config.adapters.claude_code_local.max_delta_bytes
    return {BODY_KIND: provider, INDEX_KIND: provider, TRANSCRIPT_KIND: local}
