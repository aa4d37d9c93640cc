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
from dataclasses import dataclass
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


@dataclass(frozen=True, slots=True)
class Reported:
    report: dict[str, Any]
    """The session's report as its landed files are now."""
    before: dict[str, Any] | None
    """The report kept before, whatever it was made from (None when there was none): what
    the collector counted already."""


def session_report(session: Session, prices: PriceTable, *, keep: bool = True) -> dict[str, Any]:
    """The session's report: the kept one while it holds, else built (and kept, with
    ``keep``, where the root may be written)."""
    return reported(session, prices, keep=keep).report


def kept_report(session: Session) -> dict[str, Any] | None:
    """The report kept for the session, whatever it was made from, or None; never builds
    one (``asz statusline`` takes the causes from it and may not wait for a build)."""
    value = _read_kept(session)
    return value["report"] if value is not None else None


def reported(session: Session, prices: PriceTable, *, keep: bool = True) -> Reported:
    """The session's report and the one kept before it, the kept file read once."""
    value = _read_kept(session)
    before = value["report"] if value is not None else None
    mark = session.landed_mark()
    if value is not None and (value.get("landed"), value.get("prices")) == (
        mark,
        prices.fingerprint(),
    ):
        return Reported(value["report"], before)
    report = cache_report(session, prices)
    if keep and not report["problems"] and mark == session.landed_mark():
        kept = {"schema": _SCHEMA, "landed": mark, "prices": prices.fingerprint(), "report": report}
        # A reader may not be able to write (a read-only root); the report holds regardless.
        with contextlib.suppress(OSError):
            session.store.backend.replace_derived(report_path(session.id), orjson.dumps(kept))
    return Reported(report, before)


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
