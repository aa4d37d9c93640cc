"""Two texts side by side, line against line, with what changed marked and long runs of
equal lines folded, so that a 20 KB system prompt that changed one paragraph shows that
paragraph, not 20 KB.

``difflib`` finds the matching lines; long inputs are cut to ``MAX_LINES`` lines a side
first, since its cost grows faster than the input and a page must answer in well under a
second.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

CONTEXT = 3
"""Equal lines shown around each change."""
MAX_LINES = 4000


@dataclass(frozen=True, slots=True)
class Row:
    """One row of the side-by-side table. ``kind``: ``same``, ``changed``, ``removed``,
    ``added``, or ``folded`` (``left`` then says how many equal lines are not shown)."""

    kind: str
    left_number: int | None
    left: str
    right_number: int | None
    right: str


def side_by_side(old: str, new: str) -> list[Row]:
    """The rows comparing ``old`` (left) with ``new`` (right)."""
    left, right = old.splitlines()[:MAX_LINES], new.splitlines()[:MAX_LINES]
    rows: list[Row] = []
    matcher = difflib.SequenceMatcher(None, left, right, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            rows += _equal(left, i1, i2, j1, first=not rows, last=i2 == len(left))
            continue
        for k in range(max(i2 - i1, j2 - j1)):
            a, b = i1 + k, j1 + k
            has_left, has_right = a < i2, b < j2
            kind = "changed" if has_left and has_right else "removed" if has_left else "added"
            rows.append(
                Row(
                    kind,
                    a + 1 if has_left else None,
                    left[a] if has_left else "",
                    b + 1 if has_right else None,
                    right[b] if has_right else "",
                )
            )
    return rows


def _equal(lines: list[str], i1: int, i2: int, j1: int, *, first: bool, last: bool) -> list[Row]:
    """A run of equal lines: the ``CONTEXT`` lines next to a change, the rest folded."""
    shown_head = 0 if first else CONTEXT
    shown_tail = 0 if last else CONTEXT
    count = i2 - i1
    if count <= shown_head + shown_tail + 1:
        keep = list(range(count))
        folded = 0
    else:
        keep = [*range(shown_head), *range(count - shown_tail, count)]
        folded = count - shown_head - shown_tail
    rows = [_same(lines, i1 + k, j1 + k) for k in keep if k < shown_head or not folded]
    if folded:
        rows.append(Row("folded", None, f"{folded:,} equal lines", None, ""))
        rows += [_same(lines, i1 + k, j1 + k) for k in keep if k >= shown_head]
    return rows


def _same(lines: list[str], i: int, j: int) -> Row:
    return Row("same", i + 1, lines[i], j + 1, lines[i])
