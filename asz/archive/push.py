"""One push: every landed file of every session the session filter admits, into the archive.

Each landed file goes to the archive's prefix under the root's own relative path, by a
create-only put (``asz.archive.bucket``); derived state (``_state/``, ``seq``, summaries,
facts, cursors, kept reports) never leaves the machine. What went is remembered in the push
record (``asz.archive.record``), so a pass sends only what is new, and a push that stopped
(a failure, a kill) resumes where it stopped. A session is claimed before its first file goes
(``asz.archive.claims``), so a session two roots hold is reported, never merged.

Uploads run in a bounded pool of threads (the client releases the GIL while it waits); each
reads its file when it starts, so memory holds at most one file per worker.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asz.archive.bucket import ABSENT, Bucket, Created, Known, Meta
from asz.archive.claims import claim_bytes, claim_path
from asz.archive.location import ArchiveUrl
from asz.archive.record import PushRecord
from asz.store import LandedName, Store
from asz.store.atomic import private_dir
from asz.store.framing import MAX_CONTENT_BYTES
from asz.store.root import Root, check_private
from asz.words import count, size

LOCK_FILE = "archive-push.lock"


class PushBusy(Exception):
    """Another push into the archive from this root is running."""


@contextmanager
def push_lock(root: Path) -> Iterator[None]:
    """One push per root at a time (the service's and ``asz push`` share the record). The
    push writes only its record and this lock, under ``_state/``, and like the collector
    refuses a root where that would go through a link or into another user's directory
    (``UnsafeRoot``)."""
    held = Root(root)
    check_private(held)
    private_dir(held.state_dir)
    fd = os.open(held.state_dir / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise PushBusy(f"another push from {root} is running") from None
        yield
    finally:
        os.close(fd)


@dataclass(slots=True)
class PushTally:
    """What one push did and left; ``complete`` when nothing failed or conflicts."""

    archive: str
    sessions: int = 0
    """Sessions the filter admits (pushed now or before)."""
    files: int = 0
    """Objects created by this pass."""
    bytes: int = 0
    already_there: int = 0
    """Objects found in the bucket holding this root's bytes (a push that stopped, a lost
    record)."""
    conflicts: list[str] = field(default_factory=list)
    """Object keys holding other bytes than this root's file of that path."""
    held_elsewhere: list[str] = field(default_factory=list)
    """Sessions another root claimed first: none of their files are pushed from here."""
    sessions_excluded: int = 0
    sessions_waiting: int = 0
    waiting_files: int = 0
    """Landed files of admitted sessions not in the bucket after the pass."""
    waiting_bytes: int = 0
    retries: int = 0
    rebuilt: bool = False
    """The record was (with ``dry_run``: would be) rebuilt by listing the bucket."""
    would_push: list[tuple[str, int]] = field(default_factory=list)
    """With ``dry_run``: every path that would go, and its size."""
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        return not (self.conflicts or self.held_elsewhere or self.errors)

    def as_dict(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "sessions": self.sessions,
            "files": self.files,
            "bytes": self.bytes,
            "already_there": self.already_there,
            "conflicts": self.conflicts,
            "held_elsewhere": self.held_elsewhere,
            "sessions_excluded": self.sessions_excluded,
            "sessions_waiting": self.sessions_waiting,
            "waiting_files": self.waiting_files,
            "waiting_bytes": self.waiting_bytes,
            "retries": self.retries,
            "rebuilt": self.rebuilt,
            "errors": self.errors,
            "complete": self.complete,
            "seconds": self.seconds,
        }


@dataclass(frozen=True, slots=True)
class _Todo:
    session: str
    names: list[LandedName]
    """Landed files of the session not yet in the record, in sequence order."""
    first: LandedName
    """The session's first landed file, which its claim names."""


Admits = Callable[[str], bool | None]
"""The session filter's verdict on a session: pushed (True), left out (False), or waiting for
what would judge it (None); the caller builds it (``asz.adapters.session_filter``)."""


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
    ) -> None:
        self.root = root
        self.store = store
        self.admits = admits
        self.url = url
        self.bucket = bucket
        self.workers = max(1, workers)

    def run(self, *, dry_run: bool = False, relist: bool = False) -> PushTally:
        started = time.monotonic()
        tally = PushTally(str(self.url))
        record = PushRecord.for_root(self.root, str(self.url))
        relist = tally.rebuilt = relist or record.rebuilt
        if relist and not dry_run:
            record.start()
        todo = self._admitted(record, tally)
        if dry_run:
            tally.would_push = [
                (name.path, self.store.size_of(name.path)) for item in todo for name in item.names
            ]
        else:
            self._push(record, todo, tally, relist)
        left = [name for item in todo for name in item.names if name.path not in record.done]
        tally.waiting_files = len(left)
        tally.waiting_bytes = sum(self.store.size_of(name.path) for name in left)
        tally.seconds = round(time.monotonic() - started, 6)
        return tally

    def _admitted(self, record: PushRecord, tally: PushTally) -> list[_Todo]:
        """Every session the filter admits, with its landed files the record does not
        hold."""
        todo = []
        for session_id in self.store.sessions():
            verdict = self.admits(session_id)
            if verdict is None:
                tally.sessions_waiting += 1
                continue
            if not verdict:
                tally.sessions_excluded += 1
                continue
            tally.sessions += 1
            names = self.store.open_session(session_id).landed()
            new = [name for name in names if name.path not in record.done]
            if new:
                todo.append(_Todo(session_id, new, names[0]))
        return todo

    def _push(self, record: PushRecord, todo: list[_Todo], tally: PushTally, relist: bool) -> None:
        failed = self.bucket.failed

        def count_retry(err: BaseException) -> None:
            tally.retries += 1
            if failed is not None:
                failed(err)

        self.bucket.failed = count_retry
        try:
            with ThreadPoolExecutor(self.workers, thread_name_prefix="asz-push") as pool:
                known = self._known(pool, record, todo, tally, relist)
                owned = self._claim(pool, record, todo, tally)
                self._files(pool, record, [t for t in todo if t.session in owned], known, tally)
        finally:
            self.bucket.failed = failed

    def _known(
        self,
        pool: ThreadPoolExecutor,
        record: PushRecord,
        todo: list[_Todo],
        tally: PushTally,
        relist: bool,
    ) -> dict[str, Known]:
        """What is known of each path's object before anything is sent. From the record: a
        path a stopped push was sending is looked for first (None), any other is absent. When
        relisting: one listing per session (never another root's objects); a listing that
        failed leaves its paths to be looked for one by one."""
        if not relist:
            return {
                name.path: None if name.path in record.tried else ABSENT
                for item in todo
                for name in item.names
            }
        jobs = {item.session: pool.submit(self._list_session, item.session) for item in todo}
        known: dict[str, Known] = {}
        for item in todo:
            try:
                listed = {meta.path: meta for meta in jobs[item.session].result()}
            except Exception as err:
                tally.errors.append(f"{self.url.key(item.session)}/ (listing): {_said(err)}")
                known.update((name.path, None) for name in item.names)
                continue
            known.update((name.path, listed.get(name.path, ABSENT)) for name in item.names)
        return known

    def _list_session(self, session: str) -> list[Meta]:
        return self.bucket.list_all(f"{session}/")

    def _claim(
        self, pool: ThreadPoolExecutor, record: PushRecord, todo: list[_Todo], tally: PushTally
    ) -> set[str]:
        """The sessions this root may push into: claimed now or before by this root."""
        owned = {item.session for item in todo if item.session in record.claimed}
        jobs = {
            item.session: pool.submit(self._claim_one, item)
            for item in todo
            if item.session not in owned
        }
        for session, job in jobs.items():
            try:
                result = job.result()
            except Exception as err:
                key = self.url.key(claim_path(session))
                tally.errors.append(f"{key}: {_said(err)}")
                continue
            if result is Created.OTHER:
                tally.held_elsewhere.append(session)
            else:
                record.claim(session)
                owned.add(session)
        return owned

    def _claim_one(self, item: _Todo) -> Created:
        data = self.store.backend.read(item.first.path, MAX_CONTENT_BYTES)
        claim = claim_bytes(item.session, item.first.path, data)
        # Looked for first: a claim is made once, and most often it is there already.
        return self.bucket.create(claim_path(item.session), claim, known=None)

    def _files(
        self,
        pool: ThreadPoolExecutor,
        record: PushRecord,
        todo: list[_Todo],
        known: dict[str, Known],
        tally: PushTally,
    ) -> None:
        paths = [name.path for item in todo for name in item.names]
        record.trying([path for path in paths if known[path] is ABSENT])
        jobs: dict[Future[tuple[Created, int]], str] = {
            pool.submit(self._file_one, path, known[path]): path for path in paths
        }
        for job in as_completed(jobs):  # recorded as each ends: a kill loses the fewest
            path = jobs[job]
            try:
                result, size = job.result()
            except Exception as err:
                tally.errors.append(f"{self.url.key(path)}: {_said(err)}")
                continue
            if result is Created.OTHER:
                tally.conflicts.append(self.url.key(path))
                continue
            if result is Created.CREATED:
                tally.files += 1
                tally.bytes += size
            else:
                tally.already_there += 1
            record.pushed(path, size)

    def _file_one(self, path: str, known: Known) -> tuple[Created, int]:
        data = self.store.backend.read(path, MAX_CONTENT_BYTES)
        return self.bucket.create(path, data, known), len(data)


def push_line(tally: PushTally) -> str:
    """The one human line a push says (the service logs it too)."""
    said = (
        f"pushed {count(tally.files, 'landed file')} ({size(tally.bytes)})"
        if tally.files
        else "nothing new to push"
    )
    left = [
        count(number, noun) + tail
        for number, noun, tail in (
            (tally.already_there, "file", " already there"),
            (tally.sessions_excluded, "session", " left out by the session filter"),
            (tally.sessions_waiting, "session", " waiting for the filter to judge it"),
            (len(tally.held_elsewhere), "session", " held by another root"),
            (len(tally.conflicts), "conflict", ""),
            (len(tally.errors), "error", ""),
            (tally.waiting_files, "file", " still to push"),
        )
        if number
    ]
    rebuilt = (
        "; no local record of what was pushed: the archive was listed" if tally.rebuilt else ""
    )
    return f"{'; '.join([f'{said} to {tally.archive}', *left])}{rebuilt} ({tally.seconds:.3f} s)"


def _said(err: BaseException) -> str:
    """An error in one line: the client's errors carry their whole request chain."""
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__
