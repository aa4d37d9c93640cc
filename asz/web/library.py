"""What the pages read from the root, each kept in memory while the session's landed files
stay the same.

A page must answer in well under a second, and what it shows is costly to derive: a session's
summary reads every body manifest, its cache report compares every request, its view rebuilds
every joined response. The collector keeps most of that in the root, but the web server never
writes there (:mod:`.readonly`), so it keeps its own copy in memory, keyed like the root's
derived files by the session's landed mark (``Session.landed_mark``, a listing of its
directories): while the mark holds, the copy is the answer. The small results (summaries,
report totals, prompt text) are kept for every session; the large ones (a view, a report)
for the few sessions looked at last, so memory stays bounded however large the root is.
Where the root's derived state lives apart from it (an archive read through its local cache,
``Backend.derived_apart``), the session list is kept there too (``SESSION_LIST_FILE``): a
second start answers its first list from it at once, with no request per session, and makes
the list afresh behind it; every list after that is the fresh one. Those few sessions'
``Session`` objects are kept too, with what they hold of their bodies: a
call page rebuilds its request through the records landed before it, and a session opened
afresh for each page did that walk from the start every time (a second for a long
session's last call). A kept session is used by one page at a time (its own lock), since its
readers keep state between reads.

Everything here is blocking work; the pages run it in worker threads.
"""

from __future__ import annotations

import contextlib
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Protocol, TypeVar

import orjson

from asz.bodykeys import is_session_id
from asz.store import (
    SESSION_LIST_FILE,
    STATE_DIR,
    BodyNotFound,
    CodecError,
    Session,
    SessionSummary,
    Store,
    UnknownSession,
)
from asz.view import build_view
from asz.view.kept import session_report
from asz.view.prices import PriceTable
from asz.view.records import CacheReport, CacheTotals, ViewDocument
from asz.web.prompts import Prompt, session_prompts
from asz.web.timeline import Timeline, timeline

__all__ = ["LARGE_KEPT", "LARGE_KINDS", "Library", "Listed", "Missing", "Tables"]

LARGE_KEPT = 4
"""Sessions whose view, report and timeline are kept in memory: the ones looked at last."""
LARGE_KINDS = ("view", "report", "timeline")

T = TypeVar("T")
_LIST_PATH = f"{STATE_DIR}/{SESSION_LIST_FILE}"
_LIST_FORMAT = "asz.session-list/1"


class Missing(LookupError):
    """What a page asked for is not in the root; its text says what (the 404 page's)."""


class Tables(Protocol):
    """What the analytics tables say of some sessions (``asz.analytics.tables.TableFacts``):
    a session's summary and report while they hold for its landed files, else None."""

    def summary(self, session: Session) -> SessionSummary | None: ...

    def report(self, session: str) -> CacheReport | None: ...


@dataclass(frozen=True, slots=True)
class Listed:
    """One session as the session list shows it."""

    summary: SessionSummary
    totals: CacheTotals
    """The cache report's totals (hit ratio, re-written tokens, cost and waste)."""
    prompts: list[Prompt]
    """The session's prompts, for the search box."""


@dataclass(frozen=True, slots=True)
class _Opened:
    """A kept session, the landed mark it was opened at, and the lock its users take."""

    session: Session
    mark: str
    lock: threading.RLock = field(default_factory=threading.RLock)


class Library:
    """The root, read for the pages (see the module)."""

    def __init__(
        self,
        store: Store,
        prices: PriceTable,
        tables: Callable[[list[str]], Tables | None] | None = None,
    ) -> None:
        self.store = store
        self.prices = prices
        self.tables = tables
        """The analytics tables' facts of the sessions asked for (``[analytics] url``): the
        list takes a session's summary and totals from them while they hold for it."""
        self._lock = threading.Lock()
        self._small: dict[tuple[str, str], tuple[str, Any]] = {}
        self._large: OrderedDict[tuple[str, str], tuple[str, Any]] = OrderedDict()
        self._opened: OrderedDict[str, _Opened] = OrderedDict()
        self._fresh = False
        """Whether this process made the list once: until then, the kept one may answer."""
        self._making: threading.Thread | None = None
        self._kept_list = b""

    def session(self, session_id: str) -> Session:
        """The landed session, the kept one while its landed files are the same; Missing for
        an id that is not one, or that the root lacks. The id is checked before any path is
        built from it."""
        if not is_session_id(session_id):
            raise Missing(f"{session_id!r} is not a session id")
        with self._lock:
            kept = self._opened.get(session_id)
        if kept is not None and kept.session.landed_mark() == kept.mark:
            with self._lock:
                if session_id in self._opened:
                    self._opened.move_to_end(session_id)
            return kept.session
        try:
            session = self.store.session(session_id)
        except UnknownSession:
            raise Missing(f"no session {session_id} has landed in this root") from None
        with self._lock:
            self._opened[session_id] = _Opened(session, session.landed_mark())
            while len(self._opened) > LARGE_KEPT:
                self._opened.popitem(last=False)
        return session

    def _using(self, session: Session) -> contextlib.AbstractContextManager[Any]:
        """The lock of a kept session (held while one page reads it); none for a session
        that is not kept, which no other page has."""
        with self._lock:
            kept = self._opened.get(session.id)
        if kept is not None and kept.session is session:
            return kept.lock
        return contextlib.nullcontext()

    def listed(self) -> list[Listed]:
        """Every landed session, as the list shows it (in no particular order): its summary
        and totals from the analytics tables where they hold for it, else from the root. On a
        start over a root whose derived state lives apart, the list as last made, when kept,
        while a fresh one is made behind it."""
        if not self._fresh and self.store.backend.derived_apart:
            kept = self._read_list()
            if kept is not None:
                self._make_behind()
                return kept
        return self._listed()

    def _make_behind(self) -> None:
        with self._lock:
            if self._making is not None:
                return
            self._making = threading.Thread(target=self._remake, daemon=True, name="list")
        self._making.start()

    def _remake(self) -> None:
        """The list made afresh behind the kept one; a failure leaves the next list to try
        again (the pages answer with the kept one meanwhile)."""
        try:
            self._listed()
        finally:
            with self._lock:
                self._making = None

    def _read_list(self) -> list[Listed] | None:
        """The list last kept, or None when there is none that reads."""
        try:
            data = self.store.backend.read(_LIST_PATH, 1 << 30)
            kept = orjson.loads(data)
            if kept["format"] != _LIST_FORMAT:
                return None
            found = [
                Listed(
                    SessionSummary.from_dict(entry["summary"]),
                    entry["totals"],
                    [
                        Prompt(text, text.lower(), time, said)
                        for text, time, said in entry["prompts"]
                    ],
                )
                for entry in kept["sessions"]
            ]
        except (OSError, ValueError, TypeError, KeyError):
            return None
        self._kept_list = data
        return found

    def _keep_list(self, found: list[Listed]) -> None:
        """Keeps the list where derived state lives apart from the root, when it changed."""
        entries = [
            {
                "summary": entry.summary.as_dict(),
                "totals": entry.totals,
                "prompts": [[p.text, p.time, p.message_id] for p in entry.prompts],
            }
            for entry in sorted(found, key=lambda entry: entry.summary.id)
        ]
        data = orjson.dumps({"format": _LIST_FORMAT, "sessions": entries})
        if data != self._kept_list:
            self.store.backend.replace_derived(_LIST_PATH, data)
            self._kept_list = data

    def _listed(self) -> list[Listed]:
        found = []
        ids = self.store.sessions()
        facts = self.tables(ids) if self.tables is not None else None
        for session_id in ids:
            session = self.store.session(session_id)
            mark = session.landed_mark()
            summary = facts.summary(session) if facts is not None else None
            report = facts.report(session_id) if facts is not None and summary else None
            found.append(
                Listed(
                    summary or self.summary(session, mark),
                    report["totals"]
                    if report is not None
                    else self._kept(
                        self._small, "totals", session, mark, partial(self._totals, session, mark)
                    ),
                    self._kept(
                        self._small, "prompts", session, mark, partial(session_prompts, session)
                    ),
                )
            )
        if self.store.backend.derived_apart:
            self._keep_list(found)
        self._fresh = True
        return found

    def summary(self, session: Session, mark: str | None = None) -> SessionSummary:
        """The session in one line, as the list shows it (its models, its counts), so that
        the session page says what the list says. ``mark``: its landed mark, when known."""
        mark = session.landed_mark() if mark is None else mark
        with self._using(session):
            return self._kept(self._small, "summary", session, mark, session.summary)

    def _totals(self, session: Session, mark: str) -> CacheTotals:
        return self.report(session, mark)["totals"]

    def view(self, session: Session) -> ViewDocument:
        """The session's view document (``asz view --json``)."""
        with self._using(session):
            return self._kept(
                self._large, "view", session, session.landed_mark(), lambda: build_view(session)
            )

    def report(self, session: Session, mark: str | None = None) -> CacheReport:
        """The session's cache report (``asz cache SESSION --json``): the root's kept one
        while it holds, else built; never kept in the root, but kept where the root's
        derived state lives apart from it (an archive's local cache). ``mark``: its landed
        mark, when known (the list knows it for every session, and each costs a listing)."""
        keep = self.store.backend.derived_apart
        with self._using(session):
            return self._kept(
                self._large,
                "report",
                session,
                session.landed_mark() if mark is None else mark,
                lambda: session_report(session, self.prices, keep=keep),
            )

    def timeline(self, session: Session) -> Timeline:
        """The session's calls and compactions in time, numbered (:mod:`.timeline`)."""
        with self._using(session):
            return self._kept(
                self._large,
                "timeline",
                session,
                session.landed_mark(),
                lambda: timeline(self.view(session), self.report(session)),
            )

    def body(self, session: Session, record_id: str) -> bytes:
        """A body's exact bytes; Missing for a record id the session does not hold (checked
        against its manifests before anything is read by it)."""
        try:
            with self._using(session):
                if record_id not in session.manifests():
                    raise Missing(f"session {session.id} holds no body {record_id}")
                return session.body(record_id)
        except (BodyNotFound, CodecError) as err:
            raise Missing(
                f"body {record_id} of session {session.id} does not read: {err}"
            ) from None

    def _kept(
        self,
        store: dict[tuple[str, str], tuple[str, Any]],
        kind: str,
        session: Session,
        mark: str,
        make: Callable[[], T],
    ) -> T:
        key = (kind, session.id)
        with self._lock:
            found = store.get(key)
            if found is not None and found[0] == mark:
                if isinstance(store, OrderedDict):
                    store.move_to_end(key)
                value: T = found[1]
                return value
        made = make()
        with self._lock:
            store[key] = (mark, made)
            if isinstance(store, OrderedDict):
                while len(store) > len(LARGE_KINDS) * LARGE_KEPT:
                    store.popitem(last=False)
        return made
