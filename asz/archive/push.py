"""One push: every landed file of every session the session filter admits, into the archive.

Each landed file goes to the archive's prefix under the root's own relative path, by a
create-only put (``asz.archive.bucket``); derived state (``_state/``, ``seq``, summaries,
facts, cursors, kept reports) never leaves the machine. What went is remembered in the push
record (``asz.archive.record``), so a pass sends only what is new, and a push that stopped
(a failure, a kill) resumes where it stopped. A session is claimed before its first file goes
(``asz.archive.claims``), so a session two roots hold is reported, never merged; then its
extent (``asz.store.extent_path``), so a reader of the bucket meanwhile says the session is
incomplete rather than reading what went so far as the whole of it.

Uploads run in a bounded set of threads (``asz.archive.workers``; the client releases the GIL
while it waits); each reads its file when it starts, so memory holds at most one file per
worker. A session's files go in sequence order until the first one this push creates (a copy
of the root that diverged stops at its conflict), then together. A failure no retry mends,
the breaker, or a stop asked for (``Pusher.stop``) ends the push within ``GRACE`` seconds
(``asz.archive.retry.Link``); what it did not send waits for the next push.

With a redacted root (``asz.archive.redacted``), what goes is each file's redacted
counterpart, made before it goes, and its redaction record beside it; a file that could not
be redacted goes neither raw nor at all, and nor does the rest of its session. What goes of a
session is its counterpart as a reader counts it: a repacked session's generation goes as
its mirror, the manifest last, naming the counterparts' digests. A session whose counted
files went under another policy (or raw, ``asz.archive.archived``) gets nothing more: the
push names those files, and which of them would now differ, until ``reredact`` publishes the
session re-redacted as a new generation beside them (create-only still: the old objects stay,
reported as replaced, for ``asz push --prune``).
"""

from __future__ import annotations

import collections
import hashlib
import time
from collections import deque
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any, Protocol, TypeVar

from asz.archive.archived import Archived
from asz.archive.bucket import ABSENT, Bucket, Created, Known, Meta
from asz.archive.claims import claim_path
from asz.archive.failure import understand
from asz.archive.generations import claim_for, manifests_due, push_manifests
from asz.archive.push_tally import PushTally
from asz.archive.record import MARKERS_DIR, PushRecord, new_marker
from asz.archive.redacted import RedactedRoot, bucket_record
from asz.archive.relisted import went_under
from asz.archive.retry import Halted
from asz.archive.workers import Workers
from asz.locations import ArchiveUrl
from asz.store import (
    MAX_CONTENT_BYTES,
    PUSH_LOCK_FILE,
    LandedName,
    Store,
    extent_path,
    parse_generation_dir,
    parse_generation_file,
    state_lock,
)

__all__ = [
    "GRACE",
    "Admits",
    "Progress",
    "PushBusy",
    "Pusher",
    "push_lock",
]

T = TypeVar("T")


class PushBusy(Exception):
    """Another push into the archive from this root is running."""


def push_lock(root: Path) -> AbstractContextManager[None]:
    """One push per root at a time (the service's and ``asz push`` share the record). The
    push writes only its record and this lock, under ``_state/``, and like the collector
    refuses a root where that would go through a link or into another user's directory
    (``UnsafeRoot``)."""
    return state_lock(
        root, PUSH_LOCK_FILE, lambda: PushBusy(f"another push from {root} is running")
    )


GRACE = 1.0
"""Seconds a stopped push waits for the uploads in flight before it abandons them."""


@dataclass(frozen=True, slots=True)
class _Todo:
    session: str
    names: list[LandedName]
    """Landed files of the session not yet in the record, in sequence order."""
    first: LandedName
    """The session's first landed file, which its claim names."""
    before: dict[str, LandedName]
    """The landed file before each one in the session's sequence (none for the first)."""


Admits = Callable[[str], bool | None]
"""The session filter's verdict on a session: pushed (True), left out (False), or waiting for
what would judge it (None); the caller builds it (``asz.adapters.session_filter``)."""


class Progress(Protocol):
    """Told how a push goes while it goes (the service's metrics move with it)."""

    def waiting(self, files: int, size: int) -> None:
        """What is to go, as the push begins."""

    def pushed(self, size: int, created: bool) -> None:
        """One more file is in the bucket: created now, or found there already."""


class Pusher:
    """A push of one root into one archive; ``run`` is one pass."""

    def __init__(
        self,
        root: Path,
        store: Store,
        admits: Admits,
        url: ArchiveUrl,
        bucket: Bucket,
        *,
        workers: int,
        progress: Progress | None = None,
        redacted: RedactedRoot | None = None,
    ) -> None:
        self.root = root
        self.store = store
        self.admits = admits
        self.url = url
        self.bucket = bucket
        self.workers = max(1, workers)
        self.progress = progress
        self.redacted = redacted
        """Where the redacted files that go are made; None: the landed files go raw."""
        self.reredact = False
        # The link outlives a push (the service keeps its client); a push starts unstopped
        # here, not when it starts sending, so that a stop asked while it reads its record
        # holds.
        bucket.link.start()

    def stop(self, why: str) -> None:
        """Ends the push in flight (from another thread or a signal handler): no request
        starts any more, uploads in flight get ``GRACE`` seconds, what went is recorded."""
        self.bucket.link.stop(why, asked=True)

    def run(
        self, *, dry_run: bool = False, relist: bool = False, reredact: bool = False
    ) -> PushTally:
        """One pass; ``reredact``: the sessions held back by files that went under another
        redaction policy go again, re-redacted, as a new generation."""
        started = time.monotonic()
        tally = PushTally(str(self.url))
        record = PushRecord.for_root(self.root, str(self.url), self.bucket.endpoint)
        self.reredact = reredact
        if dry_run:
            tally.rebuilt = relist or record.rebuilt
            if tally.rebuilt:
                record.done.clear()
            todo = self._admitted(record, tally)
            tally.would_push = self._would_create(
                record, self._redacting(record, todo, tally), tally.rebuilt
            )
        else:
            todo = self._pushing(record, tally, relist)
        there = self._there(record)
        left = [name for item in todo for name in item.names if not there(name.path)]
        tally.waiting_files = len(left)
        tally.waiting_bytes = sum(self.store.size_of(name.path) for name in left)
        tally.seconds = round(time.monotonic() - started, 6)
        return tally

    def _pushing(self, record: PushRecord, tally: PushTally, relist: bool) -> list[_Todo]:
        """One push, until its end or its stop; what it was to push."""
        link = self.bucket.link
        workers: Workers[Any, Any] = Workers(self.workers, link)
        failed = link.failed

        def count_retry(err: BaseException) -> None:
            tally.retries += 1
            if failed is not None:
                failed(err)

        link.failed = count_retry
        todo: list[_Todo] | None = None
        try:
            relist = self._relisting(record, tally, relist)
            todo = self._admitted(record, tally)
            going = self._redacting(record, todo, tally)
            if self.progress is not None:
                paths = [name.path for item in going for name in item.names]
                self.progress.waiting(len(paths), sum(map(self._size, paths)))
            known = self._known(workers, record, going, tally, relist)
            owned = self._claim(workers, record, going, tally)
            mine = [item for item in going if item.session in owned]
            mine, extended = self._extents(workers, record, mine, known, tally)
            moved: set[str] = set()
            self._files(workers, record, mine, known, tally, extended=extended, moved=moved)
            if moved:
                # A repack retired files this push had listed: those sessions go again,
                # once, as they are now (the record skips what went).
                again = self._admitted(record, PushTally(tally.archive))
                again = [item for item in again if item.session in moved]
                todo = [item for item in todo if item.session not in moved] + again
                known = self._known(workers, record, again, tally, relist)
                again, extended = self._extents(workers, record, again, known, tally)
                self._files(workers, record, again, known, tally, extended=extended)
            self._manifests(record, tally)
        except Halted:
            pass
        finally:
            link.failed = failed
            workers.close()
        tally.stopped, tally.interrupted = link.halted, link.asked
        # Stopped before it looked: all that was to go still is.
        return todo if todo is not None else self._admitted(record, tally)

    def _redacting(self, record: PushRecord, todo: list[_Todo], tally: PushTally) -> list[_Todo]:
        """What goes of ``todo`` once redacted: each session's counterpart as a reader counts
        it (``RedactedRoot.landed``), of the files made (up to the first that failed), except
        in a session the archive counts files of under another policy (or raw): those are
        named, with which of them would now differ, and go only re-redacted (``reredact``)."""
        redacted = self.redacted
        if redacted is None:
            return todo
        tally.policy = policy = redacted.fingerprint
        archived = Archived.of(record)
        judged = set(tally.left_out) | set(tally.not_judged)
        other = {
            session: paths
            for session in archived.sessions()
            if session not in judged and (paths := archived.other_policy(session, policy))
        }
        # A session held back with nothing new is made whole: to say what differs, and to go.
        todo = todo + [
            whole
            for session in sorted(other.keys() - {item.session for item in todo})
            if self.store.has_landed(session) and (whole := self._whole(session)) is not None
        ]
        rules: collections.Counter[str] = collections.Counter()
        going = []
        outcomes = redacted.make_all([(item.session, item.names[-1]) for item in todo])
        for item in todo:
            made = outcomes[item.session]
            rules.update(made.rules)
            if made.failed is not None:
                tally.redaction_failed.append(": ".join(made.failed))
            held = other.get(item.session)
            if held is not None:
                tally.would_differ += [
                    path for path in held if redacted.differs(path, archived.policy(path))
                ]
                if not (
                    self.reredact and made.failed is None and self._reredo(item, archived, tally)
                ):
                    tally.other_policy += held
                    continue
                tally.reredacted.append(item.session)
            ready = {name.path for name in made.ready}
            counted = redacted.landed(item.session)
            names = [
                name
                for name in counted
                if name.path not in record.done and (made.failed is None or name.path in ready)
            ]
            if not names:
                continue
            before = {later.path: earlier for earlier, later in pairwise(counted)}
            going.append(_Todo(item.session, names, item.first, before))
            session_rules: collections.Counter[str] = collections.Counter()
            for name in names:
                session_rules.update(redacted.rules(name.path))
            tally.redacted_by_session[item.session] = dict(sorted(session_rules.items()))
        tally.other_policy.sort()
        tally.redactions = dict(sorted(rules.items()))
        return going

    def _whole(self, session: str) -> _Todo | None:
        """Every landed file of ``session``, to be made (None: it has none)."""
        names = self.store.open_session(session).landed()
        if not names:
            return None
        return _Todo(session, names, names[0], {})

    def _reredo(self, item: _Todo, archived: Archived, tally: PushTally) -> bool:
        """Whether the session's counterpart has, or now gets, a generation newer than any the
        archive holds of the session that replaces every file of it the archive counts: its
        mirror of the root's generation when that one is, else one re-redacted up to the
        session's highest number, as a revision of that number above any the archive holds
        (``asz.store.GenerationId``), by the record and by a listing of the session there
        (a record rebuilt knows only what this policy's counterparts found). False when the
        session has fewer numbers than the archive counts (files of it lost here), or its
        listing failed."""
        assert self.redacted is not None
        newest = archived.newest(item.session)
        top = archived.top(archived.counted(item.session))
        generation = self.redacted.generation(item.session)
        if (
            generation is not None
            and (newest is None or generation.id > newest)
            and generation.replaces >= top
        ):
            policy = self.redacted.fingerprint
            went = archived.record.done
            if not any(
                name.path in went and archived.policy(name.path) != policy
                for name in generation.files
            ):
                return True
        highest, _remembered = self.store.numbered(item.session)
        if highest < top:
            return False
        try:
            dirs, objects = self.bucket.list_dir(item.session)
        except Halted:
            raise
        except Exception as err:
            self._failed(tally, f"{self.url.key(item.session)}/ (listing)", err)
            return False
        listed = [
            *map(parse_generation_dir, dirs),
            *(parse_generation_file(meta.path.rsplit("/", 1)[-1]) for meta in objects),
            *archived.manifests.get(item.session, {}),
        ]
        held = [g.revision for g in listed if g is not None and g.replaces == highest]
        self.redacted.reredact(item.session, highest, above=max(held, default=0))
        return True

    def _read(self, path: str) -> bytes:
        """The bytes that go for the landed file at ``path``: its redacted counterpart's,
        or its own when files go raw."""
        if self.redacted is not None:
            return self.redacted.read(path)
        return self.store.backend.read(path, MAX_CONTENT_BYTES)

    def _size(self, path: str) -> int:
        return self.redacted.size(path) if self.redacted is not None else self.store.size_of(path)

    def _would_create(
        self, record: PushRecord, todo: list[_Todo], rebuilt: bool
    ) -> list[tuple[str, int]]:
        """Every object a push would create, and its size: a new record's marker, each
        session's claim not made yet, every landed file not pushed yet."""
        objects = []
        if rebuilt:
            _marker, data = new_marker()
            objects.append((f"{MARKERS_DIR}/<new id>.json", len(data)))
        for item in todo:
            if item.session not in record.claimed:
                claim = claim_for(self.store, item.session) or b""
                objects.append((claim_path(item.session), len(claim)))
        for item in todo:
            extent = _extent(item)
            if extent is not None and extent not in record.extents:
                objects.append((extent, 0))
            for name in item.names:
                objects.append((name.path, self._size(name.path)))
                if self.redacted is not None:
                    said = self.redacted.record(name.path)
                    objects.append((bucket_record(name.path), len(said)))
        store = self._manifest_store()
        pushed = {name.path for item in todo for name in item.names} | self._pushed(record)
        due = manifests_due(store, pushed, (item.session for item in todo))
        return objects + [(path, store.size_of(path)) for path in due]

    def _manifest_store(self) -> Store:
        """Where the manifests that go are read: the root's, or its redacted counterpart's."""
        return self.store if self.redacted is None else self.redacted.shadow

    def _pushed(self, record: PushRecord) -> set[str]:
        """The paths in the archive that a manifest of what goes may name: those that went
        under this push's policy."""
        policy = "" if self.redacted is None else self.redacted.fingerprint
        return {path for path in record.done if record.policy.get(path, "") == policy}

    def _there(self, record: PushRecord) -> Callable[[str], bool]:
        """Whether a landed file of the root needs nothing more sent: it went, or (redacted)
        the archive's newest generation of the session, of this policy, holds it."""
        if self.redacted is None:
            return record.done.__contains__
        archived = Archived.of(record)
        return partial(archived.covers, policy=self.redacted.fingerprint)

    def _relisting(self, record: PushRecord, tally: PushTally, relist: bool) -> bool:
        """Whether the record is rebuilt by listing: asked, lost, another bucket's, or its
        marker is gone from the bucket. A rebuilt record names a new marker, created first."""
        if not (relist or record.rebuilt):
            tally.marker_lost = self._needed(lambda: self.bucket.head(record.marker)) is None
        tally.rebuilt = relist or record.rebuilt or tally.marker_lost
        if not tally.rebuilt:
            return False
        # A bucket that is not there, or does not answer, ends the push before the record.
        self._needed(lambda: self.bucket.list_dir(""))
        marker, data = new_marker()
        record.start(marker)
        self._needed(lambda: self.bucket.create(marker, data))
        return True

    def _needed(self, call: Callable[[], T]) -> T:
        """A request the push cannot go on without: its failure, retries spent, stops it."""
        try:
            return call()
        except Halted:
            raise
        except Exception as err:
            self.bucket.link.stop(understand(err).said)
            raise Halted(self.bucket.link.halted) from None

    def _admitted(self, record: PushRecord, tally: PushTally) -> list[_Todo]:
        """Every session the filter admits, with its landed files the archive does not
        hold (``_there``)."""
        there = self._there(record)
        todo = []
        for session_id in self.store.sessions():
            verdict = self.admits(session_id)
            if verdict is None:
                tally.sessions_waiting += 1
                tally.not_judged.append(session_id)
                continue
            if not verdict:
                tally.sessions_excluded += 1
                tally.left_out.append(session_id)
                continue
            tally.sessions += 1
            names = self.store.open_session(session_id).landed()
            new = [name for name in names if not there(name.path)]
            if new:
                before = {later.path: earlier for earlier, later in pairwise(names)}
                todo.append(_Todo(session_id, new, names[0], before))
        return todo

    def _known(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[_Todo],
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
        self, workers: Workers[Any, Any], record: PushRecord, todo: list[_Todo], tally: PushTally
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

    def _extents(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[_Todo],
        known: dict[str, Known],
        tally: PushTally,
    ) -> tuple[list[_Todo], dict[str, str]]:
        """Before a session's files go, an ``extent-<n>`` object says how far they reach
        (``asz.store.parse_extent``): a reader that finds fewer says the session is
        incomplete, never a shorter whole. A session whose extent was not created sends
        nothing this time; one whose extent is in the bucket already (the record says so)
        sends no request for it. What goes, and the extents this push created, by session."""
        going = {item.session: item for item in todo}
        extents = {item.session: _extent(item) for item in todo}
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

    def _take_back(self, record: PushRecord, path: str, tally: PushTally) -> None:
        """Removes the extent this push created for a session whose first file to go met
        another root's there (a diverged copy): nothing of this root's follows it, and its
        promise would have readers wait for files this root will never send."""
        try:
            self.bucket.delete(path)
        except Exception as err:
            self._failed(tally, self.url.key(path), err)
            return
        record.unextended(path)

    def _claim_one(self, item: _Todo) -> Created:
        claim = claim_for(self.store, item.session)
        if claim is None:
            raise OSError(f"{item.first.path} does not read: the session cannot be claimed")
        # Looked for first: a claim is made once, and most often it is there already.
        return self.bucket.create(claim_path(item.session), claim, known=None)

    def _files(
        self,
        workers: Workers[Any, Any],
        record: PushRecord,
        todo: list[_Todo],
        known: dict[str, Known],
        tally: PushTally,
        *,
        extended: dict[str, str],
        moved: set[str] | None = None,
    ) -> None:
        """Each session's files in sequence order, one at a time until the first one this
        push creates, then all at once. A copy of the root that diverged from the one that
        pushed (the same session, other files from some sequence number on) meets its first
        file of another root's there as a conflict, and sends nothing after it: a session
        in the bucket never continues one root's sequence with another's files, and the
        extent this push created for it (``extended``) is taken back. So is a session whose
        file this root pushed before under another redaction policy meets a push that rebuilt
        its record (``asz.archive.relisted``): the record then says which policy each of its
        files there went under, and the session is held as it would have been. A session a
        repack moved meanwhile (a file gone that it no longer counts) sends nothing more and
        is put in ``moved``, when given, rather than failed."""
        left = {item.session: deque(item.names) for item in todo}
        before = {path: name for item in todo for path, name in item.before.items()}
        serial = set(left)

        def send(session: str) -> None:
            path = left[session].popleft().path
            job = partial(self._file_one, path, known[path], record, before.get(path))
            workers.submit((session, path), job)

        for session in left:
            send(session)
        for (session, path), outcome in workers.finished(GRACE):
            if moved is not None and self._retired(session, path, outcome):
                moved.add(session)
                left[session].clear()
                continue
            if isinstance(outcome, BaseException):
                self._failed(tally, self.url.key(path), outcome)
                if session in serial:
                    left[session].clear()  # what is at this number is not known: no further
                continue
            result, size, went = outcome
            if result is Created.OTHER:
                if went is None:
                    tally.conflicts.append(self.url.key(path))
                else:
                    self._went_before(record, path, size, went, tally)
                    for later in left[session]:
                        if isinstance(known.get(later.path), Meta):
                            workers.submit((session, later.path), partial(self._found, later.path))
                left[session].clear()
                if session in serial and session in extended:
                    self._take_back(record, extended.pop(session), tally)
                continue
            record.pushed(path, size, tally.policy)
            if self.progress is not None:
                self.progress.pushed(size, result is Created.CREATED)
            if result is Created.CREATED:
                tally.files += 1
                tally.bytes += size
            else:
                tally.already_there += 1
            if session in serial and result is Created.CREATED:
                serial.discard(session)
                while left[session]:
                    send(session)
            elif left[session]:
                send(session)

    def _retired(self, session: str, path: str, outcome: object) -> bool:
        """Whether a file's send failed because a repack retired the file (or the one
        before it) since the push listed it: the session no longer counts it."""
        if not isinstance(outcome, FileNotFoundError):
            return False
        counted = {name.path for name in self.store.open_session(session).landed()}
        return path not in counted

    def _manifests(self, record: PushRecord, tally: PushTally) -> None:
        """Each generation whose files are all in the bucket now gets its manifest, last
        (``asz.archive.generations``; under redaction the counterpart's, naming the
        counterparts' digests). What each one made the archive stop counting is said
        (``replaced``), left for ``asz push --prune``."""
        store = self._manifest_store()
        due = manifests_due(store, self._pushed(record), sorted(record.claimed))
        before = Archived.of(record)
        failed = partial(self._failed_path, tally)
        created, size, conflicts = push_manifests(
            store, self.bucket, record, due, failed, policy=tally.policy
        )
        tally.files += created
        tally.bytes += size
        tally.conflicts += [self.url.key(path) for path in conflicts]
        after = Archived.of(record)
        for path in due:
            if path in record.done:  # what this generation replaced, and no earlier one
                session = path.split("/", 1)[0]
                earlier = set(before.replaced(session))
                now = [old for old in after.replaced(session) if old not in earlier]
                tally.replaced += [self.url.key(old) for old in now]

    def _failed_path(self, tally: PushTally, path: str, err: BaseException) -> None:
        self._failed(tally, self.url.key(path), err)

    def _went_before(
        self, record: PushRecord, path: str, size: int, policy: str, tally: PushTally
    ) -> None:
        """The object at ``path`` is this root's file under ``policy``: recorded so, and said
        as a file under another policy (``other_policy``), never as a conflict."""
        assert self.redacted is not None
        record.pushed(path, size, policy)
        tally.other_policy.append(path)
        if self.redacted.differs(path, policy):
            tally.would_differ.append(path)

    def _found(self, path: str) -> tuple[Created, int, str | None]:
        """The object at ``path``, which holds other bytes than this push sends: its size, and
        the redaction policy it went under when it is this root's file there (None: it is
        another root's, a conflict)."""
        found = self.bucket.get(path)
        backend = self.store.backend
        if not backend.exists(path):  # a file of a re-redacted generation: no landed file
            return Created.OTHER, len(found), None
        landed = backend.read(path, MAX_CONTENT_BYTES)
        return Created.OTHER, len(found), went_under(found, path, landed)

    def _file_one(
        self, path: str, known: Known, record: PushRecord, before: LandedName | None
    ) -> tuple[Created, int, str | None]:
        """Sends the file at ``path``: how it went, its size, and, for an object in the way
        that this root pushed under another policy, that policy (``_found``)."""
        data = self._read(path)
        # Listed by a push that rebuilt its record: the object is there, only compared.
        listed = isinstance(known, Meta)
        if self.redacted is not None and not listed:
            # The record goes first: a redacted file in the archive always has its record.
            self.bucket.create(bucket_record(path), self.redacted.record(path), known=None)
        follows = ""
        if before is not None:
            earlier = self._read(before.path)
            follows = f"{before.seq}:{hashlib.sha256(earlier).hexdigest()}"
        created = self.bucket.create(path, data, known, sending=record.sending, follows=follows)
        if self.redacted is not None and listed:
            if created is Created.OTHER:
                return self._found(path)  # what went before under another policy, perhaps
            self.bucket.create(bucket_record(path), self.redacted.record(path), known=None)
        return created, len(data), None

    def _failed(self, tally: PushTally, key: str, err: BaseException) -> None:
        """One failed request in the tally's errors, unless the whole push stopped: then its
        one reason says it all, and the files wait for the next push."""
        if isinstance(err, Halted) or self.bucket.link.halted:
            return
        tally.errors.append(f"{key}: {understand(err).said}")


def _extent(item: _Todo) -> str | None:
    """The extent object that goes before the session's files: it names the highest number
    of the session's ordinary files this push sends. None when it sends only a generation's
    files, whose manifest, pushed last, is what makes them count."""
    ordinary = [name.seq for name in item.names if not _in_generation(name)]
    return extent_path(item.session, max(ordinary)) if ordinary else None


def _in_generation(name: LandedName) -> bool:
    parts = name.path.split("/")
    return len(parts) > 3 and parse_generation_dir(parts[1]) is not None


def _paths(item: _Todo) -> list[str]:
    """What a push looks for or sends of the session: its extent and its files."""
    extent = _extent(item)
    return [*([extent] if extent is not None else []), *(name.path for name in item.names)]
