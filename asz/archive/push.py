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

The push is ``Pusher``, made of parts of one job each (``asz.archive.push_parts``): what goes
before a session's files (``asz.archive.push_claims``), the files (``asz.archive.push_files``),
and what goes of a redacted root (``asz.archive.push_reredact``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from functools import partial
from itertools import pairwise
from pathlib import Path
from typing import Any, TypeVar

from asz.archive.archived import Archived
from asz.archive.bucket import Bucket
from asz.archive.claims import claim_path
from asz.archive.failure import understand
from asz.archive.generations import claim_for, manifests_due, push_manifests
from asz.archive.push_claims import Claiming, extent_of
from asz.archive.push_files import Sending
from asz.archive.push_parts import GRACE, Progress, Todo
from asz.archive.push_reredact import Reredacting
from asz.archive.push_tally import PushTally
from asz.archive.record import MARKERS_DIR, PushRecord, new_marker
from asz.archive.redacted import RedactedRoot, bucket_record
from asz.archive.retry import Halted
from asz.archive.workers import Workers
from asz.locations import ArchiveUrl
from asz.store import PUSH_LOCK_FILE, Store, state_lock

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


Admits = Callable[[str], bool | None]
"""The session filter's verdict on a session: pushed (True), left out (False), or waiting for
what would judge it (None); the caller builds it (``asz.adapters.session_filter``)."""


class Pusher(Reredacting, Claiming, Sending):
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
            if not tally.stopped:
                record.compact()
        there = self._there(record)
        left = [name for item in todo for name in item.names if not there(name.path)]
        tally.waiting_files = len(left)
        tally.waiting_bytes = sum(self.store.size_of(name.path) for name in left)
        tally.seconds = round(time.monotonic() - started, 6)
        return tally

    def _pushing(self, record: PushRecord, tally: PushTally, relist: bool) -> list[Todo]:
        """One push, until its end or its stop; what it was to push."""
        link = self.bucket.link
        workers: Workers[Any, Any] = Workers(self.workers, link)
        failed = link.failed

        def count_retry(err: BaseException) -> None:
            tally.retries += 1
            if failed is not None:
                failed(err)

        link.failed = count_retry
        todo: list[Todo] | None = None
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

    def _size(self, path: str) -> int:
        return self.redacted.size(path) if self.redacted is not None else self.store.size_of(path)

    def _would_create(
        self, record: PushRecord, todo: list[Todo], rebuilt: bool
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
            extent = extent_of(item)
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

    def _admitted(self, record: PushRecord, tally: PushTally) -> list[Todo]:
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
                todo.append(Todo(session_id, new, names[0], before))
        return todo

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
