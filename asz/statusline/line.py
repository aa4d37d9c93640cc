"""The status line in words, and the same figures as JSON for those who compose their own.

``cache 94% · 2 breaks $0.41 · last: tools (added mcp__x) 3m ago · $3.12``: the hit ratio so
far, the breaks and what they wasted, the last break's cause (or its size, when no cause is
known yet) and how long ago its call was, and what the session cost at asz's prices. The
last break is coloured when it is the session's latest call: the call just made broke the
cache. Everything that came from Claude Code's files is shown with control characters
escaped, so a transcript cannot drive the terminal.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asz.view.growing import Totals
from asz.view.timeline import escaped
from asz.zones import IN_UTC

__all__ = ["FIELDS", "MAX_DETAIL", "NEUTRAL_WORDS", "SEPARATOR", "figures", "words"]

FIELDS = ("cache", "breaks", "last", "cost")
SEPARATOR = " · "
MAX_DETAIL = 40
_RED = "\x1b[31m"
_RESET = "\x1b[0m"


def figures(
    totals: Totals,
    *,
    session: str | None,
    cause: dict[str, Any] | None,
    now: datetime,
    complete: bool,
    claude_code_cost_usd: float | None,
) -> dict[str, Any]:
    """What the line says, as JSON values (``asz statusline --json``)."""
    counts = totals.counts
    last_break = totals.last_break
    last_call = totals.last_call
    shown_break = None
    if last_break is not None:
        shown_break = {
            **last_break,
            # The kept report's cause (from the bodies, when they landed), else the lines'.
            "cause": cause["cause"] if cause else last_break.get("cause"),
            "detail": cause["detail"] if cause else last_break.get("detail"),
            "age_seconds": _age(last_break.get("time"), now),
        }
    return {
        "status": "ok" if counts["calls"] else "no_calls",
        "session": session,
        "calls": counts["calls"],
        "hit_ratio": totals.hit_ratio,
        "tokens": {
            "input": counts["input"],
            "output": counts["output"],
            "cache_read": counts["cache_read"],
            "cache_write_5m": counts["cache_write_5m"],
            "cache_write_1h": counts["cache_write_1h"],
        },
        "breaks": counts["breaks"],
        "rewritten_tokens": counts["rewritten_tokens"],
        "waste_usd": totals.waste_usd,
        "cost_usd": totals.cost_usd,
        "unpriced_models": totals.unpriced,
        "last_break": shown_break,
        "last_call_broke": bool(
            last_break and last_call and last_break["message_id"] == last_call["message_id"]
        ),
        "claude_code_cost_usd": claude_code_cost_usd,
        "complete": complete,
    }


def words(shown: dict[str, Any], fields: tuple[str, ...], *, color: bool) -> str:
    """The line: the chosen fields, in the order given."""
    if shown["status"] != "ok":
        return "cache: no calls yet"
    parts = []
    for name in fields:
        part = _FIELD[name](shown, color)
        if part:
            parts.append(part)
    if not shown["complete"]:
        parts.append("reading…")
    return SEPARATOR.join(parts)


NEUTRAL_WORDS = {
    "no_input": "asz: no session on stdin",
    "no_transcript": "asz: no transcript yet",
    "failed": "asz: status line failed",
    "config": "asz: the config file is not usable (asz sources says why)",
}


def _cache(shown: dict[str, Any], color: bool) -> str:
    ratio = shown["hit_ratio"]
    return "cache -" if ratio is None else f"cache {ratio:.0%}"


def _breaks(shown: dict[str, Any], color: bool) -> str:
    count = shown["breaks"]
    if not count:
        return "no breaks"
    said = f"{count} break{'s' if count != 1 else ''}"
    if shown["waste_usd"]:
        return f"{said} {_money(shown['waste_usd'])}"
    return f"{said} {_tokens(shown['rewritten_tokens'])} tokens"


def _last(shown: dict[str, Any], color: bool) -> str:
    last = shown["last_break"]
    if last is None:
        return ""
    if last["cause"]:
        what = escaped(last["cause"])
        if last["detail"]:
            detail = escaped(last["detail"])
            if len(detail) > MAX_DETAIL:
                detail = detail[: MAX_DETAIL - 1] + "…"
            what += f" ({detail})"
    else:
        what = f"{_tokens(last['rewritten_tokens'])} re-written"
    age = last["age_seconds"]
    said = f"last: {what}" + ("" if age is None else f" {_ago(age)}")
    return f"{_RED}{said}{_RESET}" if color and shown["last_call_broke"] else said


def _cost(shown: dict[str, Any], color: bool) -> str:
    unpriced = shown["unpriced_models"]
    if unpriced and not shown["cost_usd"]:
        return f"no price for {escaped(unpriced[0])}"
    return _money(shown["cost_usd"]) + ("+" if unpriced else "")


_FIELD = {"cache": _cache, "breaks": _breaks, "last": _last, "cost": _cost}


def _money(value: float) -> str:
    return f"${value:,.2f}"


def _tokens(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.0f}k"
    return str(count)


def _age(time: object, now: datetime) -> int | None:
    moment = IN_UTC.moment(time)
    if moment is None:
        return None
    return max(0, int((now - moment).total_seconds()))


def _ago(seconds: int) -> str:
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit} ago"
    return f"{seconds}s ago"
