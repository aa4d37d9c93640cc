"""Rebuilding a session's landed bodies, loading its body files at most once and only as far
as needed.

A body may copy from bodies and name pieces in earlier files of its session, so in general
rebuilding one means holding every record up to the one that has it, in landing order:
:class:`BodyLoader` takes the files in sequence order only as far as it must and keeps what it
took. A response usually copies nothing: when its manifest was read (``Session.manifests``)
it is rebuilt from its own record, read from the file its manifest names, and the pieces it
names, found in the ``new`` blobs of the session's records, without holding any request; the
codec still checks it against its digest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asz.store._errors import BodyNotFound
from asz.store._held import HeldBodies
from asz.store._layout import BODY_KIND
from asz.store._manifest import CodecError, Record, Repeat, new_pieces, referenced_pieces

if TYPE_CHECKING:
    from asz.store._errors import Problem
    from asz.store._framing import LandedFile, LandedRecord
    from asz.store._manifest_index import BodyManifest
    from asz.store._session_files import SessionFiles

__all__ = ["BodyLoader", "BodyReader"]


class BodyLoader:
    """Holds a session's body records in landing order, as far as asked (see the module).

    Every record that does not hold is a problem of the session (or of ``problems``) naming
    its file and row, and is skipped; with ``rebuild_each`` every record is also rebuilt as
    it is taken, so that one that does not rebuild is named where it is.
    """

    def __init__(
        self,
        session: SessionFiles,
        held: HeldBodies | None = None,
        *,
        rebuild_each: bool = False,
        problems: list[Problem] | None = None,
    ) -> None:
        self.session = session
        self.held = held if held is not None else HeldBodies()
        self.rebuild_each = rebuild_each
        self.problems = problems
        self.names = session.landed(BODY_KIND)
        self._next = 0
        """The next of ``names`` to take (no generator is kept: see ``Session.body``)."""
        self.bodies = 0
        """Records taken (and, with ``rebuild_each``, rebuilt)."""

    def step(self) -> bool:
        """Takes the next file that reads; False when there is none left."""
        while self._next < len(self.names):
            name = self.names[self._next]
            self._next += 1
            for _name, landed in self.session.files([name], self.problems):
                for record in landed.records:
                    self.take(landed, record)
                return True
        return False

    def take(self, landed: LandedFile, record: LandedRecord) -> None:
        """Holds one record of ``landed``; one that does not hold is a problem."""
        try:
            self.held.add(Record(meta=record.meta, payload=record.payload))
            if self.rebuild_each:
                self.held.rebuild(str(record.meta["id"]))
        except Repeat:
            return
        except CodecError as err:
            self.session.problem(str(landed.path), record.row, str(err), self.problems)
            return
        self.bodies += 1

    def load_all(self) -> HeldBodies:
        while self.step():
            pass
        return self.held

    def rebuild(self, record_id: str) -> bytes | None:
        """The body, loading files until one holds it; None when none does."""
        while not self.held.holds(record_id):
            if not self.step():
                return None
        return self.held.exact(record_id)


class BodyReader:
    """A session's bodies on demand: alone where the manifest allows, else through a loader."""

    def __init__(self, session: SessionFiles) -> None:
        self.session = session
        self._loader: BodyLoader | None = None
        self._alone = HeldBodies()
        self._responses: dict[str, dict[int, Record]] = {}
        """Landed file name -> its response records by row, for each file read for one."""
        self._pieces: dict[str, bytes] = {}

    def body(self, record_id: str, manifests: dict[str, BodyManifest] | None) -> bytes:
        """The body's bytes; ``manifests`` are the session's when they were read."""
        landed = manifests.get(record_id) if manifests is not None else None
        if landed is not None and landed.role == "response":
            record = self._response_record(landed)
            try:
                if record is not None:
                    return self._rebuild_alone(record)
            except CodecError:
                pass
        body = self._through_loader(record_id)
        if body is None:
            self.session.gone()  # listed before a repack moved the session: read it again
            session, said = self.session.id, self.session.problems_said()
            if record_id in self.session.manifests():
                # Landed, but its record does not hold against what the session holds.
                raise CodecError(f"session {session} cannot rebuild body {record_id}{said}")
            raise BodyNotFound(f"session {session} holds no body {record_id}{said}")
        return body

    def _through_loader(self, record_id: str) -> bytes | None:
        """The body from the session's records held in landing order up to it.

        They are first held on their claims alone and the body proven by its digest: proving
        every record before it one by one would hash every earlier body whole. When the body
        does not prove out, the records are held again, each proven, so that the one that
        does not hold is named as the session's problem.
        """
        if self._loader is None:
            self._loader = BodyLoader(self.session, HeldBodies(rebuild_checked=False))
        try:
            return self._loader.rebuild(record_id)
        except CodecError:
            if not self._loader.held.rebuild_checked:
                self._loader = BodyLoader(self.session)
                return self._loader.rebuild(record_id)
            raise

    def _response_record(self, manifest: BodyManifest) -> Record | None:
        """A response's landed record, read from its file with the file's other responses
        (responses are small, and a reader of one often reads them all)."""
        rows = self._responses.get(manifest.file)
        if rows is None:
            rows = self._responses[manifest.file] = {}
            name = self.session.body_file(manifest)
            for _name, landed in self.session.files([name], problems=[]):
                for record in landed.records:
                    if record.meta.get("role") == "response":
                        rows[record.row] = Record(record.meta, record.payload)
        return rows.get(manifest.row)

    def _rebuild_alone(self, record: Record) -> bytes:
        record_id = str(record.meta.get("id"))
        if not self._alone.holds(record_id):
            wanted = referenced_pieces(record.meta)
            if not wanted <= self._pieces.keys():
                # Every piece any response names, so that the records are read once for all.
                self._find_pieces(wanted | self.session.response_pieces())
            for digest in wanted:
                piece = self._pieces.get(digest)
                if piece is None:
                    raise CodecError(f"no landed record holds piece {digest}")
                self._alone.hold_piece(piece)
            self._alone.add(record)
        return self._alone.rebuild(record_id)

    def _find_pieces(self, wanted: set[str]) -> None:
        """Keeps the pieces of ``wanted`` from the ``new`` blobs of the session's landed
        records; reading stops once every one is found."""
        names = self.session.landed(BODY_KIND)
        for _name, landed in self.session.files(names, problems=[]):
            for record in landed.records:
                for digest, piece in new_pieces(Record(record.meta, record.payload)):
                    if digest in wanted:
                        self._pieces.setdefault(digest, piece)
            if wanted <= self._pieces.keys():
                return
