"""A report's tokens, money and breaks by model family: what the service's counters count.

The cache report's totals carry ``by_family``: per family (:func:`asz.view.families.
model_family`), the calls, their tokens by kind, what they cost, and the breaks found from
usage with what they re-wrote and wasted, by cause. A break's cause is its request's cause
where the request landed, else ``no_request``. The service adds what a session's report
gained since it was last kept (:func:`counts_between`) to its counters, so the counters equal
the sum of the reports of what landed while it ran.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from asz.view.families import CacheCounts, model_family
from asz.view.prices import DIGITS, writes
from asz.view.usage import Usage

__all__ = ["NO_REQUEST", "by_family", "counts_between"]

NO_REQUEST = "no_request"
"""The cause of a break nothing names: the usage says it broke, not why."""


def by_family(rows: Iterable[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """Family -> ``calls``, ``tokens`` (by kind), ``cost_usd``, and ``breaks``,
    ``rewritten_tokens`` and ``waste_usd`` by cause, of rows carrying their ``model`` and
    ``usage`` (a :class:`Usage` or None)."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if row["message_id"] is None:
            continue
        entry = found.setdefault(model_family(row["model"]), _empty())
        entry["calls"] += 1
        usage: Usage | None = row["usage"]
        if usage is not None:
            write_5m, write_1h = writes(usage)
            for kind, count in (
                ("input", usage.input),
                ("output", usage.output),
                ("cache_read", usage.cache_read),
                ("cache_write_5m", write_5m),
                ("cache_write_1h", write_1h),
            ):
                entry["tokens"][kind] += count or 0
        if row["cost_usd"] is not None:
            entry["cost_usd"] = round(entry["cost_usd"] + row["cost_usd"], DIGITS)
        if row["rewritten_tokens"]:
            cause = row["cause"] or NO_REQUEST
            _add(entry["breaks"], cause, 1)
            _add(entry["rewritten_tokens"], cause, row["rewritten_tokens"])
            if row["waste_usd"] is not None:
                _add(entry["waste_usd"], cause, row["waste_usd"])
    return found


def _empty() -> dict[str, Any]:
    kinds = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
    return {
        "calls": 0,
        "tokens": dict.fromkeys(kinds, 0),
        "cost_usd": 0.0,
        "breaks": {},
        "rewritten_tokens": {},
        "waste_usd": {},
    }


def _add(by_cause: dict[str, Any], cause: str, value: float) -> None:
    by_cause[cause] = round(by_cause.get(cause, 0) + value, DIGITS)


def counts_between(before: Mapping[str, Any] | None, after: Mapping[str, Any]) -> CacheCounts:
    """What ``after`` (a report's ``by_family``) adds to ``before`` (None: nothing counted)."""
    old = before or {}
    calls: dict[str, int] = {}
    tokens: dict[tuple[str, str], int] = {}
    cost: dict[str, float] = {}
    breaks: dict[tuple[str, str], int] = {}
    rewritten: dict[tuple[str, str], int] = {}
    waste: dict[tuple[str, str], float] = {}
    for family, now in after.items():
        was = old.get(family) or _empty()
        calls[family] = now["calls"] - was["calls"]
        cost[family] = now["cost_usd"] - was["cost_usd"]
        for kind, count in now["tokens"].items():
            tokens[(family, kind)] = count - was["tokens"].get(kind, 0)
        for target, key in (
            (breaks, "breaks"),
            (rewritten, "rewritten_tokens"),
            (waste, "waste_usd"),
        ):
            for cause, value in now[key].items():
                target[(family, cause)] = value - was[key].get(cause, 0)
    return CacheCounts(calls, tokens, cost, breaks, rewritten, waste)
