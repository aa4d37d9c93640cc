"""A session's cache report kept as derived state, so readers never rebuild an unchanged one.

Building a report reads every landed body of the session; ``asz cache`` over every session,
and the web view, would do that for each session each time. So a report is kept in
``<session>/cache.json`` with what it was made from: the mark of the session's landed files
(``Session.landed_mark``; landed files never change once published) and the fingerprint of
the price table. While both are the same the kept report is the report. The collector keeps
the reports of the sessions it lands after each pass, and a reader that finds one missing,
behind or unreadable builds it again (and keeps it, where it may write). A report that met
problems is not kept, so the next reader meets them again instead of a report hiding them.
"""

from __future__ import annotations

import contextlib
from typing import Any

import orjson

from asz.store import Session
from asz.store.layout import session_dir
from asz.view.cache import cache_report
from asz.view.prices import PriceTable

REPORT_FILE = "cache.json"
_SCHEMA = 1
_MAX_KEPT = 1 << 30


def report_path(session: str) -> str:
    """Where a session's kept report is, relative to the root."""
    return f"{session_dir(session)}/{REPORT_FILE}"


def kept_report(session: Session, prices: PriceTable) -> dict[str, Any] | None:
    """The kept report when it was made from the session's landed files as they are and
    priced by ``prices``; None otherwise."""
    value = _read_kept(session)
    if value is None:
        return None
    fresh = value.get("landed") == session.landed_mark()
    return value["report"] if fresh and value.get("prices") == prices.fingerprint() else None


def last_kept(session: Session) -> dict[str, Any] | None:
    """The report kept last, whatever it was made from (None when there is none)."""
    value = _read_kept(session)
    return value["report"] if value is not None else None


def session_report(session: Session, prices: PriceTable, *, keep: bool = True) -> dict[str, Any]:
    """The session's report: the kept one while it holds, else built (and kept, with
    ``keep``, where the root may be written)."""
    found = kept_report(session, prices)
    if found is not None:
        return found
    mark = session.landed_mark()
    report = cache_report(session, prices)
    if keep and not report["problems"] and mark == session.landed_mark():
        kept = {"schema": _SCHEMA, "landed": mark, "prices": prices.fingerprint(), "report": report}
        # A reader may not be able to write (a read-only root); the report holds regardless.
        with contextlib.suppress(OSError):
            session.store.backend.replace_derived(report_path(session.id), orjson.dumps(kept))
    return report


def _read_kept(session: Session) -> dict[str, Any] | None:
    try:
        value = orjson.loads(session.store.backend.read(report_path(session.id), _MAX_KEPT))
    except (OSError, orjson.JSONDecodeError):
        return None
    if not isinstance(value, dict) or value.get("schema") != _SCHEMA:
        return None
    report = value.get("report")
    if not isinstance(report, dict) or report.get("session") != session.id:
        return None
    return value
