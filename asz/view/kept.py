"""A session's cache report kept as derived state, so readers never rebuild an unchanged one.

Building a report reads every landed body of the session; ``asz cache`` over every session,
and the web view, would do that for each session each time. So a report is kept in
``<session>/cache.json``, with the facts the analytics tables take of its rows besides (the
same reading of the session gives them), and with what it was made from
(``asz.store._derived``): the mark of the session's landed files (``Session.landed_mark``;
landed files never change once published) and the fingerprint of the price table. While
both are the same, and the file is whole, the kept report is the report. The collector keeps
the reports of the sessions it lands after each pass, and a reader that finds one missing,
behind or unreadable builds it again (and keeps it, where it may write). A report that met
problems is not kept, so the next reader meets them again instead of a report hiding them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asz.store import DerivedFile, LandedName, Problem, Session, check_derived, report_path
from asz.view.cache import report_and_facts
from asz.view.prices import PriceTable
from asz.view.records import CacheReport, CallFacts

__all__ = ["KEPT_REPORT", "Reported", "check_kept", "kept_report", "reported", "session_report"]

KEPT_REPORT = DerivedFile(report_path, schema=5, limit=1 << 30)
"""Schema 3: rows carry ``output_tokens``, the cache writes by lifetime and ``stop_reason``.
Schema 5: the report's :class:`asz.view.records.CallFacts` are kept beside it (``facts``), so
writing a session's analytics rows reads no transcript; a report kept without them (schema 4)
is built again once."""


@dataclass(frozen=True, slots=True)
class Reported:
    report: CacheReport
    """The session's report as its landed files are now."""
    facts: CallFacts
    """What the analytics tables take of its rows besides."""
    before: CacheReport | None
    """The report kept before, whatever it was made from (None when there was none): what
    the collector counted already."""


def session_report(session: Session, prices: PriceTable, *, keep: bool = True) -> CacheReport:
    """The session's report: the kept one while it holds, else built (and kept, with
    ``keep``, where the root may be written)."""
    return reported(session, prices, keep=keep).report


def kept_report(session: Session) -> CacheReport | None:
    """The report kept for the session, whatever it was made from, or None; never builds
    one (``asz statusline`` takes the causes from it and may not wait for a build)."""
    kept = KEPT_REPORT.read(session)
    if kept is None or not _is_kept(kept.value, session):
        return None
    report: CacheReport = kept.value["report"]
    return report


def reported(
    session: Session,
    prices: PriceTable,
    *,
    keep: bool = True,
    landed: list[LandedName] | None = None,
) -> Reported:
    """The session's report and the one kept before it, the kept file read once.
    ``landed``: the session's landed files as the caller listed them just now, so that they
    are not listed again."""
    kept = KEPT_REPORT.read(session) if session.trusts_derived else None
    value = kept.value if kept is not None and _is_kept(kept.value, session) else None
    before = value["report"] if value is not None else None
    mark = _mark(session, prices, landed)
    if value is not None and kept is not None and kept.mark == mark:
        return Reported(value["report"], value["facts"], before)
    report, facts = report_and_facts(session, prices)
    if keep and not report["problems"] and mark == _mark(session, prices):
        KEPT_REPORT.keep(session, mark, {"report": report, "facts": facts})
    return Reported(report, facts, before)


def _mark(session: Session, prices: PriceTable, landed: list[LandedName] | None = None) -> str:
    """What a kept report holds for: the landed files (listed now unless given), priced by
    this table."""
    return f"{session.landed_mark(landed)} {prices.fingerprint()}"


def _is_kept(value: Any, session: Session) -> bool:
    if not isinstance(value, dict):
        return False
    report, facts = value.get("report"), value.get("facts")
    return (
        isinstance(report, dict)
        and report.get("session") == session.id
        and isinstance(facts, dict)
        and isinstance(facts.get("rows"), list)
        and len(facts["rows"]) == len(report.get("rows") or ())
    )


def check_kept(session: Session, prices: PriceTable, problems: list[Problem]) -> None:
    """``asz verify`` of the session's kept report, when it has one: made again from the
    landed files, a problem when the kept one was not whole or does not hold what they give
    (``asz.store._verify.check_derived``)."""
    if session.backend.exists(report_path(session.id)):
        check_derived(session, [KEPT_REPORT], lambda fresh: reported(fresh, prices), problems)
