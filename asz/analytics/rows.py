"""A session's rows for the three tables, from the same computation ``asz cache`` makes.

The cache report (``asz.view.kept.reported``, the kept one while it holds) gives every figure
of a call: tokens, cause, detail, cost and waste; the facts kept beside it
(:class:`asz.view.records.CallFacts`, made by the same reading of the session) give what the
report leaves out, as the view document says it: the call's number, its model and Claude Code
version, its response body and a side request's place in time (the end of the call before it
in its chain, as ``asz export otlp`` places it). Nothing is computed afresh, so a sum over the
tables is the sum ``asz cache`` makes, and a session whose report is kept is written without
reading its transcripts.

A row is written once, when nothing that lands later can change it (:func:`final_keys`): a
call once a later call of its stream landed, every row of a session once the session has
landed nothing for ``quiet_seconds``. Rows are keyed by their message id (a side request by
``request:<body id>``) so that a later pass writes only the rows it has not written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from asz.store import SessionSummary
from asz.view.prices import DIGITS
from asz.view.records import CacheReport, CallFacts
from asz.view.spend import NO_REQUEST
from asz.zones import IN_UTC

__all__ = ["SessionRows", "final_keys", "row_key", "session_rows", "to_time", "usd"]

_SIDE = "request:"


def usd(value: float | None) -> Decimal | None:
    """A report's dollars (a float rounded to a millionth) as the exact decimal it stands
    for."""
    return None if value is None else Decimal(f"{value:.{DIGITS}f}")


def to_time(text: str | None) -> datetime | None:
    """A time as Claude Code writes it, in UTC, to the millisecond the tables keep."""
    moment = IN_UTC.moment(text)
    if moment is None:
        return None
    return moment.replace(microsecond=moment.microsecond // 1000 * 1000).astimezone(UTC)


@dataclass(slots=True)
class SessionRows:
    """A session's rows: every call row with its key, its break rows, and its sessions row."""

    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    breaks: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Key of the call -> its break row, for the calls that re-wrote cached tokens."""
    session: dict[str, Any] = field(default_factory=dict)


def session_rows(
    summary: SessionSummary,
    report: CacheReport,
    facts: CallFacts,
    *,
    machine: str,
    landed_files: int,
    priced_by: str,
    updated: datetime,
    redact: Callable[[str], str],
) -> SessionRows:
    """Every row of one session, from its summary, cache report and the facts kept beside
    it; each break's detail (what changed between two requests, which may quote them)
    through ``redact``, the ``[redact]`` policy's ``Redactor.text``, as every export's."""
    who = {"session": summary.id, "project": summary.project, "machine": machine}
    found = SessionRows()
    for row, extra in zip(report["rows"], facts["rows"], strict=True):
        side = row["message_id"] is None
        named: Mapping[str, Any] = row
        fact = {
            **who,
            "stream": row["stream"],
            "call": extra["call"],
            "message_id": row["message_id"],
            "time": to_time(extra["placed"] if side else row["time"]),
            "model": extra["model"],
            "version": extra["version"],
            "side": side,
            "request_body": row["request_id"],
            "response_body": extra["response_id"],
            **{name: named[name] for name in _COPIED},
            "detail": None if row["detail"] is None else redact(row["detail"]),
            "cost_usd": usd(row["cost_usd"]),
            "waste_usd": usd(row["waste_usd"]),
        }
        key = row_key(fact)
        found.calls.append((key, fact))
        if row["rewritten_tokens"] and not side:
            found.breaks[key] = _break(fact, row)
    found.session = _session(
        summary, report, who, landed_files=landed_files, priced_by=priced_by, updated=updated
    )
    return found


_COPIED = (
    "input_tokens",
    "output_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cache_write_5m_input_tokens",
    "cache_write_1h_input_tokens",
    "expected_read",
    "rewritten_tokens",
    "cause",
    "cause_from",
    "stop_reason",
)
"""The report row's fields a call row holds as they are."""


def row_key(fact: Mapping[str, Any]) -> str:
    """What the analytics state records of a written call row: its message id, or
    ``request:<body id>`` for a side request."""
    return f"{_SIDE}{fact['request_body']}" if fact["side"] else str(fact["message_id"])


def _break(fact: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    ttl = (
        "1h"
        if (row["cache_write_1h_input_tokens"] or 0) > (row["cache_write_5m_input_tokens"] or 0)
        else "5m"
    )
    return {
        **{name: fact[name] for name in ("session", "project", "machine", "stream", "call")},
        **{name: fact[name] for name in ("message_id", "time", "model", "cause_from", "detail")},
        "cause": row["cause"] or NO_REQUEST,
        "rewritten_tokens": row["rewritten_tokens"],
        "expected_read": row["expected_read"],
        "cache_creation_input_tokens": row["cache_creation_input_tokens"],
        "write_ttl": ttl,
        "cost_usd": fact["cost_usd"],
        "waste_usd": fact["waste_usd"],
    }


def _session(
    summary: SessionSummary,
    report: Mapping[str, Any],
    who: Mapping[str, Any],
    *,
    landed_files: int,
    priced_by: str,
    updated: datetime,
) -> dict[str, Any]:
    totals = report["totals"]
    return {
        **who,
        "project_dir": summary.project_dir,
        "cwd": summary.cwd,
        "first_activity": to_time(summary.first_activity),
        "last_activity": to_time(summary.last_activity),
        "models": list(summary.models),
        "calls": summary.calls,
        "requests": totals["requests"],
        "bodies": summary.bodies,
        "transcript_lines": summary.transcript_lines,
        "landed_bytes": summary.landed_bytes,
        "landed_files": landed_files,
        "breaks": totals["breaks"],
        "rewritten_tokens": totals["rewritten_tokens"],
        "input_tokens": totals["input_tokens"],
        "output_tokens": sum(row["output_tokens"] or 0 for row in report["rows"]),
        "cache_read_input_tokens": totals["cache_read_input_tokens"],
        "cache_creation_input_tokens": totals["cache_creation_input_tokens"],
        "cost_usd": usd(totals["cost_usd"]),
        "waste_usd": usd(totals["waste_usd"]),
        "unpriced_models": list(totals["unpriced_models"]),
        "priced_by": priced_by,
        "updated": updated,
    }


def final_keys(rows: SessionRows, quiet: bool) -> set[str]:
    """The keys of the rows nothing landing later can change: all of them once the session
    is quiet, else each call's that a later call of its stream follows."""
    if quiet:
        return {key for key, _ in rows.calls}
    last: dict[str | None, str] = {}
    for key, fact in rows.calls:
        if not fact["side"]:
            last[fact["stream"]] = key
    return {key for key, fact in rows.calls if not fact["side"] and last[fact["stream"]] != key}
