"""Landing the bodies a provider pass claimed for collected sessions, and recording each
outcome in the ledger.

A session's bodies land oldest first, at most ``LAND_BYTES`` of source per call of the store,
so memory stays bounded whatever the backlog. Each body is the one judged: kept from its first
read, or read again and checked against the digest the ledger holds (a file that changed
meanwhile is counted as settling and judged again next pass). Landed and repeated bodies are
recorded as landed, a body its session holds with other bytes as a conflict; when a call
fails, its bodies are forgotten by the ledger so that the next pass reads them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path

from asz.adapters.provider_ledger import Ledger, LedgerEntry, State
from asz.adapters.provider_source import TooLarge, read_body
from asz.adapters.source_files import NotReadable
from asz.atomic import DirSyncs
from asz.store import BodyLander, CodecError, IncomingBody, LandedFileError
from asz.tally import Tally

__all__ = ["LAND_BYTES", "ClaimedLanding"]

LAND_BYTES = 64 * 1024 * 1024
"""Source bytes handed to the store in one call; a session with more lands in several calls,
so memory stays bounded whatever the backlog."""


class ClaimedLanding:
    """Lands claimed bodies for one pass (see the module)."""

    def __init__(
        self,
        where: Mapping[str, Path],
        lander: BodyLander,
        ledger: Ledger,
        result: Tally,
        *,
        budget: int,
        syncs: DirSyncs,
        kept: dict[str, bytes],
        objects: set[str],
        has_bodies: dict[str, bool],
    ) -> None:
        self.where = where
        """The bodies directory each file to land is in."""
        self.lander = lander
        self.ledger = ledger
        self.result = result
        self.budget = budget
        self.syncs = syncs
        self.kept = kept
        """Bodies read while judging, kept so that they are not read a second time."""
        self.objects = objects
        """Digests of bodies orjson parsed as JSON objects: landing need not parse them again."""
        self._has_bodies = has_bodies
        """Which sessions hold landed bodies, as the pass knows it; a landing adds to it."""

    def land(self, session: str, files: list[tuple[int, str, int]]) -> None:
        self.lander.progress.grow(len(files), sum(size for _mtime, _name, size in files))
        """Lands a session's bodies oldest first (``(mtime_ns, name, size)``), at most
        ``LAND_BYTES`` of them per call."""
        chunk: list[str] = []
        size = 0
        for _mtime_ns, name, body_size in files:
            if chunk and size + body_size > LAND_BYTES:
                self._land_chunk(session, chunk)
                chunk, size = [], 0
            chunk.append(name)
            size += body_size
        self._land_chunk(session, chunk)

    def _land_chunk(self, session: str, names: list[str]) -> None:
        incoming: list[IncomingBody] = []
        entries: dict[str, LedgerEntry] = {}
        for name in names:
            entry = self.ledger.get(name)
            body = self._body(entry) if entry is not None else None
            if entry is None or body is None:
                continue
            record_id = name[: -len(".json")]
            entries[record_id] = entry
            incoming.append(
                IncomingBody(
                    record_id,
                    entry.role,
                    name,
                    body,
                    entry.keys,
                    entry.mtime_ns,
                    sha256=entry.sha256,
                    json_object=entry.sha256 in self.objects,
                )
            )
        if not incoming:
            return
        result = self.result
        try:
            outcome = self.lander.land(session, incoming, self.budget, self.syncs)
        except (OSError, CodecError, LandedFileError) as err:
            result.errors.append(f"session {session}: {len(incoming)} bodies not landed: {err}")
            for entry in entries.values():
                self.ledger.drop(entry.name)
            return
        for record_id in (*outcome.landed, *outcome.repeats):
            self.ledger.put(replace(entries[record_id], state=State.LANDED, session=session))
        for record_id, why in outcome.conflicts:
            self.ledger.put(replace(entries[record_id], state=State.CONFLICT, session=session))
            result.conflict_sources.append(f"{entries[record_id].name}: {why}")
        tally = outcome.tally
        tally.errors = [error for error in tally.errors if error not in result.errors]
        result.add(tally)
        if outcome.landed:
            self._has_bodies[session] = True

    def _body(self, entry: LedgerEntry) -> bytes | None:
        """The file's bytes, as judged: kept from the first read, or read again and checked
        against the digest judged."""
        kept = self.kept.pop(entry.name, None)
        if kept is not None:
            return kept
        try:
            body: bytes | None = read_body(self.where[entry.name], entry.name).data
        except NotReadable as err:
            if err.kind == "gone":
                # Nothing left to count: the next pass forgets it.
                self.ledger.drop(entry.name)
                return None
            body = None
        except TooLarge:
            body = None
        if body is None or hashlib.sha256(body).hexdigest() != entry.sha256:
            # Written again since it was judged: settling, and judged afresh next pass.
            self.ledger.drop(entry.name)
            self.result.bodies_settling += 1
            return None
        return body
