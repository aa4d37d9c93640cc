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

Everything here is blocking work; the pages run it in worker threads.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

from asz.bodykeys import is_session_id
from asz.store import BodyNotFound, CodecError, Session, SessionSummary, Store, UnknownSession
from asz.view import build_view
from asz.view.kept import session_report
from asz.view.prices import PriceTable
from asz.web.prompts import prompt_texts

LARGE_KEPT = 4
"""Sessions whose view and report are kept in memory: the ones looked at last."""

T = TypeVar("T")


class Missing(LookupError):
    """What a page asked for is not in the root; its text says what (the 404 page's)."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One session as the session list shows it."""

    summary: SessionSummary
    totals: dict[str, Any]
    """The cache report's totals (hit ratio, re-written tokens, cost and waste)."""
    prompts: str
    """The session's prompt text, lower case, for the search box."""


class Library:
    """The root, read for the pages (see the module)."""

    def __init__(self, store: Store, prices: PriceTable) -> None:
        self.store = store
        self.prices = prices
        self._lock = threading.Lock()
        self._small: dict[tuple[str, str], tuple[str, Any]] = {}
        self._large: OrderedDict[tuple[str, str], tuple[str, Any]] = OrderedDict()

    def session(self, session_id: str) -> Session:
        """The landed session; Missing for an id that is not one, or that the root lacks.
        The id is checked before any path is built from it."""
        if not is_session_id(session_id):
            raise Missing(f"{session_id!r} is not a session id")
        try:
            return self.store.session(session_id)
        except UnknownSession:
            raise Missing(f"no session {session_id} has landed in this root") from None

    def listed(self) -> list[Listed]:
        """Every landed session, as the list shows it (in no particular order)."""
        found = []
        for session_id in self.store.sessions():
            session = self.store.session(session_id)
            mark = session.landed_mark()
            found.append(
                Listed(
                    self._kept(self._small, "summary", session, mark, session.summary),
                    self._kept(
                        self._small, "totals", session, mark, partial(self._totals, session)
                    ),
                    self._kept(self._small, "prompts", session, mark, partial(_prompts, session)),
                )
            )
        return found

    def _totals(self, session: Session) -> dict[str, Any]:
        totals: dict[str, Any] = self.report(session)["totals"]
        return totals

    def view(self, session: Session) -> dict[str, Any]:
        """The session's view document (``asz view --json``)."""
        return self._kept(
            self._large, "view", session, session.landed_mark(), lambda: build_view(session)
        )

    def report(self, session: Session) -> dict[str, Any]:
        """The session's cache report (``asz cache SESSION --json``): the root's kept one
        while it holds, else built; never kept in the root, but kept where the root's
        derived state lives apart from it (an archive's local cache)."""
        keep = bool(getattr(self.store.backend, "derived_apart", False))
        return self._kept(
            self._large,
            "report",
            session,
            session.landed_mark(),
            lambda: session_report(session, self.prices, keep=keep),
        )

    def body(self, session: Session, record_id: str) -> bytes:
        """A body's exact bytes; Missing for a record id the session does not hold (checked
        against its manifests before anything is read by it)."""
        if record_id not in session.manifests():
            raise Missing(f"session {session.id} holds no body {record_id}")
        try:
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
                while len(store) > 2 * LARGE_KEPT:
                    store.popitem(last=False)
        return made


def _prompts(session: Session) -> str:
    """The session's prompt text, lower case, as the search box compares it."""
    return "\n".join(prompt_texts(session)).lower()
