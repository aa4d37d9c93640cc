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

from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from asz.atomic import DirSyncs
from asz.bodykeys import BodyKeys
from asz.progress import Progress, Silent
from asz.store._bodyreader import BodyLoader
from asz.store._codec import IdConflict, Record, Repeat, SessionBodies
from asz.store._errors import Problem
from asz.store._framing import LandedFile
from asz.store._layout import BODY_KIND, bodies_dir
from asz.store._store import Store
from asz.store._writer import ReadBackError
from asz.tally import Tally

__all__ = [
    "BodyLander",
    "BodyLanding",
    "IncomingBody",
    "LoadedSession",
    "Records",
    "load_session_bodies",
    "packed",
    "record_bytes",
]

_RECORD_OVERHEAD = 32
_FILE_OVERHEAD = 512

Records = list[tuple[dict[str, Any], bytes]]


def record_bytes(meta: dict[str, Any], payload: bytes) -> int:
    """What a record takes of a landed file's budget (``max_delta_bytes``), framing included."""
    return len(orjson.dumps(meta)) + len(payload) + _RECORD_OVERHEAD


def packed(records: Iterable[tuple[dict[str, Any], bytes]], budget: int) -> Iterator[Records]:
    """``records`` in order, cut into files as landing cuts them: a file ends before a record
    that would take it past ``budget``, and a record larger than that is a file alone."""
    batch: Records = []
    used = _FILE_OVERHEAD
    for meta, payload in records:
        size = record_bytes(meta, payload)
        if batch and used + size > budget:
            yield batch
            batch, used = [], _FILE_OVERHEAD
        batch.append((meta, payload))
        used += size
    if batch:
        yield batch


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
class BodyLanding:
    """What one call of :meth:`BodyLander.land` did: which ids landed, were already held
    (``repeats``) or conflict with what is held, and its counts."""

    landed: list[str] = field(default_factory=list)
    repeats: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    tally: Tally = field(default_factory=Tally)


@dataclass(slots=True)
class LoadedSession:
    """What a session holds, loaded from the landed files at ``paths`` (a generation's files
    have numbers the ordinary ones had), and what did not hold on the way."""

    bodies: SessionBodies
    paths: tuple[str, ...]
    problems: list[Problem]


def load_session_bodies(store: Store, session: str) -> LoadedSession:
    """Holds every body of a session's landed files, in sequence order.

    A file that does not read, or a record that does not hold, is a problem and is skipped,
    so a damaged or partly restored session still takes new bodies cut against what holds.
    """
    problems: list[Problem] = []
    loader = BodyLoader(store.open_session(session), SessionBodies(), problems=problems)
    held = loader.load_all()
    assert isinstance(held, SessionBodies)
    return LoadedSession(held, tuple(name.path for name in loader.names), problems)


class BodyLander:
    """Lands bodies into a store, keeping what the most recent sessions hold in memory."""

    def __init__(self, store: Store, keep_sessions: int = 4) -> None:
        self.store = store
        self.progress: Progress = Silent()
        """Told of the bodies each landed file holds (``collect --once`` on a terminal)."""
        self._keep = keep_sessions
        self._cache: OrderedDict[str, LoadedSession] = OrderedDict()

    def _session(self, session: str) -> LoadedSession:
        landed = self.store.open_session(session).landed(BODY_KIND)
        paths = tuple(name.path for name in landed)
        cached = self._cache.get(session)
        if cached is not None and cached.paths == paths:
            self._cache.move_to_end(session)
            cached.problems = []
            return cached
        loaded = load_session_bodies(self.store, session)
        self._cache[session] = loaded
        while len(self._cache) > self._keep:
            self._cache.popitem(last=False)
        return loaded

    def holds(self, session: str, record_id: str) -> str | None:
        """The SHA-256 of a body the session holds under ``record_id``, if any."""
        bodies = self._session(session).bodies
        return bodies.digest(record_id) if bodies.holds(record_id) else None

    def land(
        self,
        session: str,
        incoming: Sequence[IncomingBody],
        max_delta_bytes: int,
        syncs: DirSyncs | None = None,
    ) -> BodyLanding:
        """Lands ``incoming`` (sorted by mtime then name) into the session's body files.

        With ``syncs`` the directories of the files landed are recorded there, for the caller
        to flush once for the whole pass, instead of each being flushed at once.
        """
        outcome = BodyLanding()
        loaded = self._session(session)
        outcome.tally.errors.extend(str(problem) for problem in loaded.problems)
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
        outcome: BodyLanding,
        *,
        syncs: DirSyncs | None,
    ) -> None:
        writer = self.store.writer(session, self.store.batch(syncs))
        batch: list[tuple[IncomingBody, Record]] = []
        batch_bytes = _FILE_OVERHEAD

        def flush() -> None:
            held = loaded.bodies
            records = [(record.meta, record.payload) for _item, record in batch]
            landed = writer.land(
                BODY_KIND,
                bodies_dir(session),
                {},
                records,
                check=lambda landed: _check_rebuilds(landed, held, batch),
            )
            writer.batch.commit()
            loaded.paths = (*loaded.paths, landed.path)
            tally = outcome.tally
            tally.landed_file(session, len(batch), landed.size)
            tally.bodies_landed += len(batch)
            tally.source_bytes += sum(len(item.body) for item, _ in batch)
            self.progress.advance(len(batch), sum(len(item.body) for item, _ in batch))
            outcome.landed.extend(item.record_id for item, _ in batch)

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
            size = record_bytes(record.meta, record.payload)
            if batch and batch_bytes + size > budget:
                flush()
                batch, batch_bytes = [], _FILE_OVERHEAD
            batch.append((item, record))
            batch_bytes += size
        if batch:
            flush()
        outcome.tally.errors += writer.errors


def _check_rebuilds(
    landed: LandedFile, held: SessionBodies, batch: list[tuple[IncomingBody, Record]]
) -> None:
    """Every record read back rebuilds, against what the session holds, to its source body."""
    for record, (item, _) in zip(landed.records, batch, strict=True):
        rebuilt = held.check(Record(meta=record.meta, payload=record.payload))
        if rebuilt != item.body:
            raise ReadBackError(item.src, "does not rebuild from what was written")
