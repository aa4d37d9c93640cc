"""Landing provider bodies: cut each against what its session holds, write, check, publish.

All new bodies of a session in one call land in as few files as the budget allows: a file
ends before a body that would take its records past ``max_delta_bytes``, and a body larger
than that lands alone. Every file is written to a temporary name, read back from disk and
every record rebuilt against its SHA-256 before the file is published, so a landed file is
known to rebuild at the moment it appears.

What a session holds is loaded from its landed files and kept for a few sessions, so a
long-running collector does not re-read a long session on every batch; a cached session is
reused only while its files on disk are exactly the ones it was loaded from.
"""

from __future__ import annotations

import contextlib
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from asz.bodykeys import BodyKeys
from asz.store.atomic import DirSyncs, publish_new
from asz.store.codec import CodecError, IdConflict, Record, Repeat, SessionBodies
from asz.store.crashpoints import crash_point
from asz.store.framing import LandedFileError, encode_file, read_file
from asz.store.root import PROVIDER_BODY, Root

_RECORD_OVERHEAD = 32
_FILE_OVERHEAD = 512


@dataclass(frozen=True, slots=True)
class IncomingBody:
    """A source body ready to land: its bytes and what was read from it.

    ``sha256`` and ``json_object`` pass on what the reader already learned of these bytes
    (their digest; that orjson parsed them as an object) so that landing does not learn it
    again; the read-back check still rebuilds every record against its digest.
    """

    record_id: str
    role: str
    src: str
    body: bytes
    keys: BodyKeys
    mtime_ns: int
    sha256: str | None = None
    json_object: bool = False


@dataclass(slots=True)
class LandOutcome:
    landed: list[str] = field(default_factory=list)
    repeats: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    files: list[Path] = field(default_factory=list)
    records: int = 0
    source_bytes: int = 0
    landed_bytes: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LoadedSession:
    bodies: SessionBodies
    seqs: tuple[int, ...]
    errors: list[str]


def load_session_bodies(root: Root, session: str) -> LoadedSession:
    """Holds every body of a session's landed files, in sequence order.

    A file that does not read, or a record that does not hold, is reported and skipped, so a
    damaged or partly restored session still takes new bodies cut against what holds.
    """
    held = SessionBodies()
    errors: list[str] = []
    landed = root.landed(root.bodies_dir(session))
    for item in landed:
        try:
            landed_file = read_file(item.path)
        except LandedFileError as err:
            errors.append(f"damaged landed file skipped: {err}")
            continue
        for record in landed_file.records:
            with contextlib.suppress(Repeat):
                try:
                    held.add(Record(meta=record.meta, payload=record.payload))
                except CodecError as err:
                    errors.append(f"{item.path}: row {record.row}: {err}")
    return LoadedSession(held, tuple(item.seq for item in landed), errors)


class BodyStore:
    """Lands bodies into a root, keeping what the most recent sessions hold in memory."""

    def __init__(self, root: Root, compression: str = "zstd", keep_sessions: int = 4) -> None:
        self.root = root
        self.compression = compression
        self._keep = keep_sessions
        self._cache: OrderedDict[str, LoadedSession] = OrderedDict()

    def _session(self, session: str) -> LoadedSession:
        seqs = tuple(item.seq for item in self.root.landed(self.root.bodies_dir(session)))
        cached = self._cache.get(session)
        if cached is not None and cached.seqs == seqs:
            self._cache.move_to_end(session)
            cached.errors = []
            return cached
        loaded = load_session_bodies(self.root, session)
        self._cache[session] = loaded
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)
        return loaded

    def holds(self, session: str, record_id: str) -> str | None:
        """The SHA-256 of a body the session holds under ``record_id``, if any."""
        bodies = self._session(session).bodies
        return bodies.meta(record_id)["sha256"] if bodies.holds(record_id) else None

    def land(
        self,
        session: str,
        incoming: Sequence[IncomingBody],
        max_delta_bytes: int,
        syncs: DirSyncs | None = None,
    ) -> LandOutcome:
        """Lands ``incoming`` (sorted by mtime then name) into the session's body files.

        With ``syncs`` the directories of the files landed are recorded there, for the caller
        to flush once for the whole pass, instead of each being flushed at once.
        """
        outcome = LandOutcome()
        loaded = self._session(session)
        outcome.errors.extend(loaded.errors)
        try:
            self._land(session, loaded, incoming, max_delta_bytes, outcome, syncs=syncs)
        except BaseException:
            # What the session holds in memory may now include records that never landed.
            self._cache.pop(session, None)
            raise
        return outcome

    def _land(
        self,
        session: str,
        loaded: LoadedSession,
        incoming: Sequence[IncomingBody],
        budget: int,
        outcome: LandOutcome,
        *,
        syncs: DirSyncs | None,
    ) -> None:
        batch: list[tuple[IncomingBody, Record]] = []
        batch_bytes = _FILE_OVERHEAD
        for item in sorted(incoming, key=lambda body: (body.mtime_ns, body.src)):
            try:
                record = loaded.bodies.take(
                    item.record_id,
                    item.role,
                    item.src,
                    item.body,
                    item.keys,
                    sha256=item.sha256,
                    json_object=item.json_object,
                )
            except Repeat:
                outcome.repeats.append(item.record_id)
                continue
            except IdConflict as err:
                outcome.conflicts.append((item.record_id, str(err)))
                continue
            size = len(orjson.dumps(record.meta)) + len(record.payload) + _RECORD_OVERHEAD
            if batch and batch_bytes + size > budget:
                self._flush(session, loaded, batch, outcome, syncs=syncs)
                batch, batch_bytes = [], _FILE_OVERHEAD
            batch.append((item, record))
            batch_bytes += size
        if batch:
            self._flush(session, loaded, batch, outcome, syncs=syncs)

    def _flush(
        self,
        session: str,
        loaded: LoadedSession,
        batch: list[tuple[IncomingBody, Record]],
        outcome: LandOutcome,
        *,
        syncs: DirSyncs | None,
    ) -> None:
        seq = self.root.next_seq(session)
        header = {
            "kind": PROVIDER_BODY,
            "session": session,
            "seq": seq,
        }
        data = encode_file(header, ((rec.meta, rec.payload) for _, rec in batch), self.compression)
        path = self.root.bodies_dir(session) / Root.landed_name(PROVIDER_BODY, seq)
        publish_new(
            path, data, check=lambda temp: _check_read_back(temp, loaded.bodies, batch), syncs=syncs
        )
        crash_point("body.published")
        self.root.remember_seq(session, seq)
        loaded.seqs = (*loaded.seqs, seq)
        outcome.files.append(path)
        outcome.records += len(batch)
        outcome.landed.extend(item.record_id for item, _ in batch)
        outcome.source_bytes += sum(len(item.body) for item, _ in batch)
        outcome.landed_bytes += len(data)


class ReadBackError(Exception):
    """A file written for landing did not read back as what was written."""


def _check_read_back(
    temp: Path, held: SessionBodies, batch: list[tuple[IncomingBody, Record]]
) -> None:
    landed_file = read_file(temp)
    if len(landed_file.records) != len(batch):
        raise ReadBackError(f"{temp}: read back {len(landed_file.records)} records")
    for landed, (item, _) in zip(landed_file.records, batch, strict=True):
        rebuilt = held.check(Record(meta=landed.meta, payload=landed.payload))
        if rebuilt != item.body:
            raise ReadBackError(f"{item.src} does not rebuild from what was written")
    crash_point("body.written")
