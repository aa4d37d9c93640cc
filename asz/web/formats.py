"""How the pages write figures and times: the templates' filters, one place for each form."""

from __future__ import annotations

from datetime import datetime
from typing import Any


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
