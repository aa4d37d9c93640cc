"""The cache report in words: its rows as table cells, and the lines of totals after them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asz.view.causes import FIRST, PRECEDENCE, UNKNOWN, UNREADABLE, show

COLUMNS = (
    "#",
    "request",
    "message",
    "stream",
    "cause",
    "input",
    "read",
    "written",
    "rewritten",
    "waste $",
    "detail",
)
"""The headers of the cells :func:`report_cells` gives, in order."""
_KEYS = (
    "n",
    "request_id",
    "message_id",
    "stream",
    "cause",
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "rewritten_tokens",
    "waste_usd",
    "detail",
)


def report_cells(report: dict[str, Any], shown: Mapping[str, str] | None = None) -> list[list[str]]:
    """The report's rows as text cells under ``COLUMNS``. ``shown`` maps body ids to the
    prefixes that name them in the session (``asz body`` takes them); an id it lacks, and
    every message id, is shown whole: an id is never cut so that it cannot be pasted."""
    table = []
    for n, row in enumerate(report["rows"], start=1):
        cells = {
            **row,
            "n": n,
            "request_id": (shown or {}).get(row["request_id"], row["request_id"]),
        }
        line = [_cell(cells.get(key)) for key in _KEYS]
        line[_KEYS.index("waste_usd")] = dollars(row["waste_usd"])
        if row["also"]:
            line[-1] += f" (also {', '.join(row['also'])})"
        if row["reported_miss_reason"] is not None:
            line[-1] += f" [reported: {_cell(row['reported_miss_reason'])}]"
        table.append(line)
    return table


def report_summary(report: dict[str, Any]) -> list[str]:
    """The lines after the table: the session's totals, each cause's share, and why the
    report says nothing when it does not."""
    empty_because = report["empty_because"]
    if not report["rows"]:
        return [f"session {report['session']}: nothing to report: {empty_because}"]
    totals = report["totals"]
    calls = sum(row["message_id"] is not None for row in report["rows"])
    lines = [
        f"session {report['session']}: {calls} calls, {totals['requests']} requests landed, "
        f"{totals['with_usage']} with usage",
        f"hit ratio {percent(totals['hit_ratio'])}: "
        f"{totals['cache_read_input_tokens']:,} tokens read from the cache, "
        f"{totals['cache_creation_input_tokens']:,} written to it, "
        f"{totals['input_tokens']:,} not cached",
        money_said(totals),
    ]
    for cause, entry in sorted(totals["by_cause"].items(), key=lambda kv: _rank(kv[0])):
        count = entry["requests"]
        noun = "request" if count == 1 else "requests"
        lines.append(
            f"  {cause:<11} {count:>5} {noun:<8}  "
            f"{entry['cache_creation_input_tokens']:>10,} tokens written"
        )
    if empty_because:
        lines.append(empty_because)
    return lines


def money_said(totals: Mapping[str, Any]) -> str:
    """What the breaks re-wrote and what the calls cost, of a report's ``totals`` or of
    any sum with the same fields (``breaks``, ``rewritten_tokens``, ``cost_usd``,
    ``waste_usd``, ``unpriced_models``): one sentence for one session or for many."""
    breaks = totals["breaks"]
    said = (
        f"from usage: {breaks} {'break' if breaks == 1 else 'breaks'} re-wrote "
        f"{totals['rewritten_tokens']:,} tokens; cost ${dollars(totals['cost_usd'])}, "
        f"of which ${dollars(totals['waste_usd'])} wasted on breaks"
    )
    if totals["unpriced_models"]:
        said += f"; no price for {', '.join(totals['unpriced_models'])} (tokens only)"
    return said


def dollars(value: float | None) -> str:
    """US dollars to the cent from one up, to a hundredth of a cent below; ``-`` unknown."""
    if value is None:
        return "-"
    if value == 0:
        return "0"
    return f"{value:,.4f}" if value < 1 else f"{value:,.2f}"


def percent(ratio: float | None) -> str:
    """A hit ratio as ``63.6%``; ``-`` when there was nothing to hit."""
    return "-" if ratio is None else f"{ratio:.1%}"


def _rank(cause: str) -> int:
    order = (FIRST, *PRECEDENCE, UNKNOWN, UNREADABLE)
    return order.index(cause) if cause in order else len(order)


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else show(value)
