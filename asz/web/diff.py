"""Two texts side by side, line against line, with what changed marked and long runs of
equal lines folded, so that a 20 KB system prompt that changed one paragraph shows that
paragraph, not 20 KB.

``difflib`` finds the matching lines; long inputs are cut to ``MAX_LINES`` lines a side
first, since its cost grows faster than the input and a page must answer in well under a
second. What it shows is bounded too: a line past ``LINE`` characters (a 2 MB prompt is one
line) shows its start and how much it leaves out, and a comparison shows ``MAX_ROWS`` rows,
then says how many more there are; the exact bytes of both requests are linked beside it.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

__all__ = ["CONTEXT", "LINE", "MAX_LINES", "MAX_ROWS", "Row", "side_by_side"]

CONTEXT = 3
"""Equal lines shown around each change."""
MAX_LINES = 4000
LINE = 2000
"""Characters of one line a row shows."""
MAX_ROWS = 500


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
    shown = [_cut(row) for row in rows[:MAX_ROWS]]
    if len(rows) > MAX_ROWS:
        more = len(rows) - MAX_ROWS
        shown.append(Row("folded", None, f"{more:,} more rows not shown", None, ""))
    return shown


def _cut(row: Row) -> Row:
    if len(row.left) <= LINE and len(row.right) <= LINE:
        return row
    return Row(row.kind, row.left_number, _short(row.left), row.right_number, _short(row.right))


def _short(line: str) -> str:
    if len(line) <= LINE:
        return line
    return f"{line[:LINE]} … ({len(line) - LINE:,} more characters not shown)"


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
