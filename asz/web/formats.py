"""How the pages write figures, times and text: the templates' filters, one place for each
form, and :func:`visible`, which every value a template writes passes."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any

__all__ = ["FILTERS", "clock", "dollars", "kilobytes", "minute", "percent", "tokens", "visible"]

_HIDING = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e"
    "\u2028\u2029\u2060-\u2064\u2066-\u2069\ufeff]"
)
"""What a page must not write raw: control characters but tab and newline (NUL, ESC and
the rest), and the invisible ones that reorder or hide text (the bidi controls U+202A-E and
U+2066-9, the marks U+200E-F and U+061C, zero-width characters, line separators)."""


def visible(value: Any) -> Any:
    """A text with each character of ``_HIDING`` replaced by a marker naming it
    (``⟨U+202E⟩``): written raw, U+202E shows what follows it reversed, and NUL or ESC write
    nothing a reader sees. Markup (what a macro or a filter already made) passes as it is.
    The environment's ``finalize``, so that no value reaches a page without it."""
    if type(value) is not str or _HIDING.search(value) is None:
        return value
    return _HIDING.sub(lambda match: f"⟨U+{ord(match.group()):04X}⟩", value)


def tokens(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def dollars(value: float | None) -> str:
    """Dollars to the cent, to a ten-thousandth below a cent (a break on a small model)."""
    if value is None:
        return "-"
    return f"${value:,.2f}" if value == 0 or abs(value) >= 0.01 else f"${value:.4f}"


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def kilobytes(value: int) -> str:
    return f"{value:,} B" if value < 1024 else f"{value / 1024:,.1f} KB"


def minute(value: str | None) -> str:
    """A Claude Code time (UTC) to the minute."""
    moment = _moment(value)
    return "-" if moment is None else moment.strftime("%Y-%m-%d %H:%M")


def clock(value: str | None) -> str:
    moment = _moment(value)
    return "-" if moment is None else moment.strftime("%H:%M:%S")


def _moment(value: Any) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


FILTERS = {
    "tokens": tokens,
    "dollars": dollars,
    "percent": percent,
    "kilobytes": kilobytes,
    "minute": minute,
    "clock": clock,
}
