"""The cache report in words: its rows as table cells, and the lines of totals after them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from asz.view.causes import show
from asz.view.ranking import calls_by_cause
from asz.view.records import CacheReport

__all__ = ["COLUMNS", "SIDE", "dollars", "money_said", "percent", "report_cells", "report_summary"]

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


def report_cells(report: CacheReport, shown: Mapping[str, str] | None = None) -> list[list[str]]:
    """The report's rows as text cells under ``COLUMNS``. ``shown`` maps body ids to the
    prefixes that name them in the session (``asz body`` takes them); an id it lacks, and
    every message id, is shown whole: an id is never cut so that it cannot be pasted."""
    table = []
    for n, row in enumerate(report["rows"], start=1):
        request_id = row["request_id"]
        cells = {
            **row,
            "n": n,
            "request_id": (shown or {}).get(request_id, request_id) if request_id else None,
        }
        line = [_cell(cells.get(key)) for key in _KEYS]
        line[_KEYS.index("waste_usd")] = dollars(row["waste_usd"])
        if row["also"]:
            line[-1] += f" (also {', '.join(row['also'])})"
        if row["reported_miss_reason"] is not None:
            line[-1] += f" [reported: {_cell(row['reported_miss_reason'])}]"
        table.append(line)
    return table


def report_summary(report: CacheReport) -> list[str]:
    """The lines after the table: the session's totals, each cause with its calls and the
    dollars it wasted, and why the report says nothing when it does not."""
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
    lines += _evidence_lines(totals)
    lines += _cause_lines(report)
    if empty_because:
        lines.append(empty_because)
    return lines


def _evidence_lines(totals: Mapping[str, Any]) -> list[str]:
    """How many breaks have a cause, by the evidence that names it, and how often the API's
    verdict agrees with the other evidence: a cause from usage only locates a change."""
    sources = totals.get("breaks_by_evidence")
    if not totals["breaks"] or sources is None:  # a report kept before causes had sources
        return []
    named = totals["breaks"] - sources["none"]
    by = ", ".join(f"{source} {count}" for source, count in sources.items() if count)
    lines = [f"breaks named: {named} of {totals['breaks']} ({by})"]
    agreement = totals.get("api_agreement")
    if agreement:
        compared = sum(entry["compared"] for entry in agreement.values())
        agreed = sum(entry["agreed"] for entry in agreement.values())
        lines.append(f"the API's verdict agrees with the other evidence in {agreed} of {compared}")
    return lines


def _cause_lines(report: CacheReport) -> list[str]:
    """The report's calls per cause, most waste first, each with the tokens it wrote and
    re-wrote and the dollars it wasted; then the requests joined to no call on a line of
    their own. Most of those are side requests (a session's title, a compaction summary):
    they carry no usage, and counted under the cause their comparison found they would pass
    for breaks that cost nothing."""
    causes = calls_by_cause(report)
    lines = [_cause_line("cause", "calls", "written", "rewritten", "waste $")] if causes else []
    for entry in causes:
        lines.append(
            _cause_line(
                entry["cause"],
                f"{entry['calls']:,}",
                f"{entry['cache_creation_input_tokens']:,}",
                f"{entry['rewritten_tokens']:,}",
                dollars(entry["waste_usd"]),
            )
        )
    side = sum(
        row["message_id"] is None and row["request_id"] is not None for row in report["rows"]
    )
    if side:
        lines.append(
            f"  {SIDE:<13}{side:>6}  {'request' if side == 1 else 'requests'} joined to no call, "
            "such as side requests (a title, a compaction summary): no usage, nothing wasted"
        )
    return lines


SIDE = "no call"
"""The line of the requests joined to no call, apart from the causes of calls."""


def _cause_line(cause: str, calls: str, written: str, rewritten: str, waste: str) -> str:
    return f"  {cause:<13}{calls:>6}{written:>12}{rewritten:>12}{waste:>10}"


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


def _cell(value: object) -> str:
    if value is None:
        return "-"
    return value if isinstance(value, str) else show(value)
