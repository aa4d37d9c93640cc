"""What goes before a session's files in a push (``asz.archive.push``): what is known of
each object first, the session's claim (``asz.archive.claims``), so that a session two roots
hold is reported, never merged, and then its extent (``asz.store.extent_path``), so that a
reader of the bucket meanwhile says the session is incomplete rather than reading what went
so far as the whole of it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from asz.archive.bucket import ABSENT, Created, Known
from asz.archive.claims import claim_path
from asz.archive.generations import claim_for
from asz.archive.push_parts import GRACE, PushParts, Todo
from asz.archive.push_tally import PushTally
from asz.archive.record import PushRecord
from asz.archive.workers import Workers
from asz.store import LandedName, extent_path, parse_generation_dir

__all__ = ["Claiming", "extent_of"]


class Claiming(PushParts):
    """The part of a push that readies the bucket for each session's files."""

    def _known(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[Todo],
        tally: PushTally,
        relist: bool,
    ) -> dict[str, Known]:
        """What is known of each path's object before anything is sent. From the record: a
        path a stopped push was sending is looked for first (None), any other is absent. When
        relisting: one listing per session (never another root's objects); a listing that
        failed leaves its paths to be looked for one by one."""
        paths = {item.session: _paths(item) for item in todo}
        if not relist:
            return {
                path: None if path in record.tried else ABSENT
                for session in paths.values()
                for path in session
            }
        known: dict[str, Known] = {path: None for session in paths.values() for path in session}
        for item in todo:
            workers.submit(item.session, partial(self.bucket.list_all, f"{item.session}/"))
        for session, listing in workers.finished(GRACE):
            if isinstance(listing, BaseException):
                self._failed(tally, f"{self.url.key(session)}/ (listing)", listing)
                continue
            listed = {meta.path: meta for meta in listing}
            known.update((path, listed.get(path, ABSENT)) for path in paths[session])
        return known

    def _claim(
        self, workers: Workers[Any, Any], record: PushRecord, todo: list[Todo], tally: PushTally
    ) -> set[str]:
        """The sessions this root may push into: claimed now or before by this root."""
        owned = {item.session for item in todo if item.session in record.claimed}
        for item in todo:
            if item.session not in owned:
                workers.submit(item.session, partial(self._claim_one, item))
        for session, result in workers.finished(GRACE):
            if isinstance(result, BaseException):
                self._failed(tally, self.url.key(claim_path(session)), result)
            elif result is Created.OTHER:
                tally.held_elsewhere.append(session)
            else:
                record.claim(session)
                owned.add(session)
        return owned

    def _claim_one(self, item: Todo) -> Created:
        claim = claim_for(self.store, item.session)
        if claim is None:
            raise OSError(f"{item.first.path} does not read: the session cannot be claimed")
        # Looked for first: a claim is made once, and most often it is there already.
        return self.bucket.create(claim_path(item.session), claim, known=None)

    def _extents(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[Todo],
        known: dict[str, Known],
        tally: PushTally,
    ) -> tuple[list[Todo], dict[str, str]]:
        """Before a session's files go, an ``extent-<n>`` object says how far they reach
        (``asz.store.parse_extent``): a reader that finds fewer says the session is
        incomplete, never a shorter whole. A session whose extent was not created sends
        nothing this time; one whose extent is in the bucket already (the record says so)
        sends no request for it. What goes, and the extents this push created, by session."""
        going = {item.session: item for item in todo}
        extents = {item.session: extent_of(item) for item in todo}
        for session, path in extents.items():
            if path is not None and path not in record.extents:
                create = partial(
                    self.bucket.create, path, b"", known.get(path), sending=record.sending
                )
                workers.submit(session, create)
            else:
                extents[session] = None
        created = {}
        for session, result in workers.finished(GRACE):
            path = extents[session]
            assert path is not None
            if isinstance(result, BaseException):
                self._failed(tally, self.url.key(path), result)
                del going[session]
                continue
            record.extended(path)
            if result is Created.CREATED:
                created[session] = path
        return list(going.values()), created


def extent_of(item: Todo) -> str | None:
    """The extent object that goes before the session's files: it names the highest number
    of the session's ordinary files this push sends. None when it sends only a generation's
    files, whose manifest, pushed last, is what makes them count."""
    ordinary = [name.seq for name in item.names if not _in_generation(name)]
    return extent_path(item.session, max(ordinary)) if ordinary else None


def _in_generation(name: LandedName) -> bool:
    parts = name.path.split("/")
    return len(parts) > 3 and parse_generation_dir(parts[1]) is not None


def _paths(item: Todo) -> list[str]:
    """What a push looks for or sends of the session: its extent and its files."""
    extent = extent_of(item)
    return [*([extent] if extent is not None else []), *(name.path for name in item.names)]
