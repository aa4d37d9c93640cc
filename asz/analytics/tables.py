"""A session's figures from the tables, while they hold for its landed files: what
``asz cache`` over every session reads instead of building or reading each report.

A session's latest ``sessions`` row holds while its ``landed_files`` is the count of the
session's landed files now and its ``priced_by`` is the price table's fingerprint (landed
files are only ever added, so the same count is the same files); then its summary and its
report's totals come from that row, and its call rows from ``calls``, which are the report's
rows as they were written. Any other session is read from its landed files as before, so the
answer is the same either way, only faster where the tables hold.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from asz.analytics.query import connect, local_tables
from asz.config import Config
from asz.store import Session, SessionSummary
from asz.view.usage import hit_ratio

if TYPE_CHECKING:
    from asz.view.records import CacheReport

__all__ = ["TableFacts", "table_facts"]

_SESSION_COLUMNS = (
    "session, project_dir, cwd, first_activity, last_activity, models, calls, requests, "
    "bodies, transcript_lines, landed_bytes, landed_files, breaks, rewritten_tokens, "
    "input_tokens, cache_read_input_tokens, cache_creation_input_tokens, cost_usd, waste_usd, "
    "unpriced_models, priced_by"
)
_CALL_COLUMNS = ", ".join(
    f"calls.{name}"
    for name in (
        "session",
        "message_id",
        "time",
        "rewritten_tokens",
        "input_tokens",
        "cache_read_input_tokens",
        "cache_creation_input_tokens",
        "cost_usd",
        "waste_usd",
        "cause",
    )
)


class TableFacts:
    """The tables' rows of the sessions asked for, read once."""

    def __init__(self, directory: Path, sessions: list[str], priced_by: str) -> None:
        # Here: every `asz cache` over all sessions asks for the tables, and a root without
        # them should not load pyarrow to learn so.
        import pyarrow as pa

        self.priced_by = priced_by
        con = connect(directory)
        try:
            con.register("_wanted", pa.table({"id": pa.array(sessions, pa.string())}))
            found = con.sql(
                f"SELECT {_SESSION_COLUMNS} FROM sessions "  # noqa: S608 (our own columns)
                "WHERE session IN (SELECT id FROM _wanted)"
            ).to_arrow_table()
            self._sessions = {row["session"]: row for row in found.to_pylist()}
            # The calls the latest row's machine wrote: a session two roots hold (reported by
            # the archive) is counted as one of them has it, not as both.
            calls = con.sql(
                f"SELECT {_CALL_COLUMNS} FROM calls JOIN sessions USING (session, machine) "  # noqa: S608
                "WHERE NOT side AND session IN (SELECT id FROM _wanted) ORDER BY session, call"
            ).to_arrow_table()
        finally:
            con.close()
        self._calls: dict[str, list[dict[str, Any]]] = {}
        for row in calls.to_pylist():
            self._calls.setdefault(row["session"], []).append(row)
        self._current: set[str] = set()

    def summary(self, session: Session) -> SessionSummary | None:
        """The session's summary from its row, when the row holds for its landed files now
        and was priced as this reader prices; else None."""
        row = self._sessions.get(session.id)
        if (
            row is None
            or row["priced_by"] != self.priced_by
            or row["landed_files"] != len(session.landed())
        ):
            return None
        self._current.add(session.id)
        return SessionSummary(
            id=row["session"],
            project_dir=row["project_dir"],
            cwd=row["cwd"],
            first_activity=_text(row["first_activity"]),
            last_activity=_text(row["last_activity"]),
            models=tuple(row["models"] or ()),
            calls=row["calls"],
            bodies=row["bodies"],
            transcript_lines=row["transcript_lines"],
            landed_bytes=row["landed_bytes"],
        )

    def report(self, session: str) -> CacheReport | None:
        """The session's report as far as the tables keep it: the totals and call rows that
        ``asz.view.ranking.Ranking.add`` and the session list read (the figures that add up
        across sessions). What the tables do not keep (a row's evidence and the totals'
        agreement counts) is not in it: it is a ranking's report, not one to print. None
        unless :meth:`summary` found the row current."""
        if session not in self._current:
            return None
        row = self._sessions[session]
        read, written = row["cache_read_input_tokens"], row["cache_creation_input_tokens"]
        totals = {
            "requests": row["requests"],
            "breaks": row["breaks"],
            "rewritten_tokens": row["rewritten_tokens"],
            "input_tokens": row["input_tokens"],
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "hit_ratio": hit_ratio(read, written, row["input_tokens"]),
            "cost_usd": _dollars(row["cost_usd"]),
            "waste_usd": _dollars(row["waste_usd"]),
            "unpriced_models": list(row["unpriced_models"] or ()),
        }
        rows = [
            {
                **call,
                "time": _text(call["time"]),
                "cost_usd": _dollars(call["cost_usd"]),
                "waste_usd": _dollars(call["waste_usd"]),
            }
            for call in self._calls.get(session, [])
        ]
        found = {
            "session": session,
            "rows": rows,
            "totals": totals,
            "empty_because": None,
            "problems": [],
        }
        return cast("CacheReport", found)


def _dollars(value: Decimal | None) -> float | None:
    """The exact decimal as the float the report held (the nearest to it)."""
    return None if value is None else float(value)


def _text(moment: datetime | None) -> str | None:
    """A time as Claude Code writes it: UTC, to the millisecond, with a ``Z``."""
    if moment is None:
        return None
    moment = moment.astimezone(UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def table_facts(config: Config, sessions: list[str], priced_by: str) -> TableFacts | None:
    """The facts of ``sessions`` in the tables at ``[analytics] url`` (a bucket's copy
    brought up to date first); None when none is named or none is there yet."""
    if not config.analytics.url:
        return None
    directory = local_tables(config.analytics.url, config.archive)
    if not directory.is_dir():
        return None
    return TableFacts(directory, sessions, priced_by)
