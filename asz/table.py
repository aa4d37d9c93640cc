"""Tables for people: as wide as the terminal on one, plain aligned text anywhere else.

On a terminal the table is drawn by rich (the library the progress bars use too), which
measures cells, wraps the columns that may wrap to fit the terminal's width and styles the
header, so none of that is hand-drawn here. Columns that must not be cut (an id to paste, a
time, a number) are never wrapped; when the terminal is too narrow for all of them even with
the others wrapped, the columns that may be left out go, least wanted first, and if that is
not enough the table is drawn at the width it needs and the terminal wraps its lines: nothing
is ever cut. Anywhere else (a pipe, a file) every column is printed as plain text: no colour,
columns two spaces apart, no trailing blanks, and no width limit, so each row is one line
that ``grep`` and ``cut`` can take.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.table import Table

_GAP = 2
"""Blanks between two columns (rich's padding of one on each side)."""
_WRAPPED_MIN = 12
"""The narrowest a wrapping column is drawn."""


@dataclass(frozen=True, slots=True)
class Column:
    """A column: its header, whether it holds numbers (right-aligned), whether it may wrap to
    fit a narrow terminal (else it is always whole), and when it may be left out there: the
    column with the highest ``drop`` goes first; one whose ``drop`` is None always stays."""

    header: str
    numeric: bool = False
    wraps: bool = False
    drop: int | None = None
    narrowest: int = _WRAPPED_MIN
    """For a column that wraps: the narrowest it is drawn (prose wants more than a name)."""


def print_table(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], out: TextIO | None = None
) -> None:
    """Prints the rows under their columns to ``out`` (stdout when None)."""
    from rich.console import Console

    out = sys.stdout if out is None else out
    if out.isatty():
        console = Console(file=out, highlight=False, emoji=False)
        shown = list(range(len(columns)))
        droppable = sorted(
            (i for i, column in enumerate(columns) if column.drop is not None),
            key=lambda i: columns[i].drop or 0,
        )
        while droppable and _narrowest(columns, rows, shown) > console.width:
            shown.remove(droppable.pop())
        needed = _narrowest(columns, rows, shown)
        if console.width < needed:
            console = Console(file=out, highlight=False, emoji=False, width=needed)
        kept = [columns[i] for i in shown]
        console.print(_table(kept, [[row[i] for i in shown] for row in rows]))
        return
    out.write(_plain(columns, rows))
    out.flush()


def print_lines(lines: Sequence[str], out: TextIO | None = None) -> None:
    """Prints lines of prose to ``out`` (stdout when None): on a terminal each is wrapped at
    its width, between words, its continuation indented under its text; anywhere else each is
    one line, whatever its length."""
    import shutil
    import textwrap

    out = sys.stdout if out is None else out
    if not out.isatty():
        out.write("".join(f"{line}\n" for line in lines))
        out.flush()
        return
    width = shutil.get_terminal_size().columns
    for line in lines:
        indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
        wrapped = textwrap.wrap(line, width, subsequent_indent=indent, break_on_hyphens=False)
        out.write("\n".join(wrapped or [""]) + "\n")
    out.flush()


def _plain(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> str:
    """The table as aligned text: aligning cells needs no layout engine, and rich takes a
    second to lay out a few thousand rows that a pipe does not need laid out."""
    from rich.cells import cell_len

    lines = [[column.header for column in columns], *rows]
    widths = [max(cell_len(line[i]) for line in lines) for i in range(len(columns))]
    text = []
    for line in lines:
        cells = []
        for column, width, cell in zip(columns, widths, line, strict=True):
            pad = " " * (width - cell_len(cell))
            cells.append(pad + cell if column.numeric else cell + pad)
        text.append((" " * _GAP).join(cells).rstrip() + "\n")
    return "".join(text)


def _narrowest(columns: Sequence[Column], rows: Sequence[Sequence[str]], shown: list[int]) -> int:
    """The width below which a column that must stay whole would be cut, of the columns
    ``shown`` (their indexes)."""
    from rich.cells import cell_len  # a cell's width on screen, wide characters counted twice

    width = _GAP * (len(shown) - 1)
    for i in shown:
        column = columns[i]
        natural = max([cell_len(column.header), *(cell_len(row[i]) for row in rows)])
        width += min(natural, column.narrowest) if column.wraps else natural
    return width


def _table(columns: Sequence[Column], rows: Sequence[Sequence[str]]) -> Table:
    from rich.table import Table
    from rich.text import Text

    table = Table(box=None, pad_edge=False, header_style="bold")
    for column in columns:
        table.add_column(
            column.header,
            justify="right" if column.numeric else "left",
            no_wrap=not column.wraps,
            min_width=column.narrowest if column.wraps else None,
            overflow="fold",
        )
    for row in rows:
        # Text, not a string: a cell is shown as it is, never read as rich markup.
        table.add_row(*(Text(cell) for cell in row))
    return table
