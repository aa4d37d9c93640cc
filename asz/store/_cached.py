"""Values read back from a file of derived state, each checked for its kind.

Derived files (a session's summary, facts and manifest index) are rebuilt from the landed
files whenever they cannot be used, so a reader trusts nothing in one: a value of the wrong
kind raises TypeError, which every reader of such a file takes as "made again from the
landed files".
"""

from __future__ import annotations

__all__ = ["count", "optional_text", "text"]


def optional_text(value: object) -> str | None:
    """``value`` when it is a string or None."""
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{value!r} is not a string")


def text(value: object) -> str:
    """``value`` when it is a string."""
    found = optional_text(value)
    if found is None:
        raise TypeError("a string is missing")
    return found


def count(value: object) -> int:
    """``value`` when it is a whole number from 0 (JSON gives exact ints; a bool is none)."""
    if type(value) is not int or value < 0:
        raise TypeError(f"{value!r} is not a count")
    return value
