"""The words counts are said in, so that every command says the same thing the same way.

``asz collect --once``, the service's log and status, ``asz demo`` and ``asz verify`` count
bodies, transcripts, transcript lines, index lines, sessions and bytes: a person reading two
of them should never have to translate one into the other.
"""

from __future__ import annotations

__all__ = ["CONFLICT_ADVICE", "count", "listing", "size"]

_PLURALS = {"body": "bodies"}

CONFLICT_ADVICE = (
    "nothing more lands from a source that changed after it landed until you put the bytes "
    "that landed back or move the file away; `asz restore SESSION --to DIR` gives a "
    "transcript's landed copy back, `asz body SESSION ID` a body's"
)
"""What to do about a conflict, said once wherever conflicts are reported."""


def count(number: int, noun: str) -> str:
    """``1 body``, ``92 bodies``, ``1,234 transcript lines``: the last word of ``noun`` agrees
    with the number."""
    return f"{number:,} {noun if number == 1 else _plural(noun)}"


def _plural(noun: str) -> str:
    head, _, last = noun.rpartition(" ")
    many = _PLURALS.get(last, last + "s")
    return f"{head} {many}" if head else many


def size(number: int) -> str:
    """Bytes as people read them: ``512 bytes``, ``133.0 kB``, ``5.6 MB`` (powers of 1000,
    as file managers and ``ls -h --si`` count)."""
    if number < 1000:
        return count(number, "byte")
    value = float(number)
    for unit in ("kB", "MB", "GB"):
        value /= 1000
        if value < 999.95:
            return f"{value:.1f} {unit}"
    return f"{value / 1000:.1f} TB"


def listing(items: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    if len(items) < 2:
        return "".join(items)
    return f"{', '.join(items[:-1])} and {items[-1]}"
