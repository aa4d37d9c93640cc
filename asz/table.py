"""Tables for people: as wide as the terminal on one, plain aligned text anywhere else.

On a terminal the table is drawn by rich (the library the progress bars use too), which
measures cells, wraps the columns that may wrap to fit the terminal's width and styles the
header, so none of that is hand-drawn here. Columns that must not be cut (an id to paste, a
time, a number) are never wrapped; a column that names something long (a project's path, a
session's models) is shortened instead, the way its ``shorten`` says, so that a row stays one
line. When the terminal is too narrow for all of them even with the others wrapped and
shortened, the columns that may be left out go, least wanted first, and if that is not enough
the table is drawn at the width it needs and the terminal wraps its lines: an id is never
cut. Anywhere else (a pipe, a file) every column is printed whole as plain text: no colour,
columns two spaces apart, no trailing blanks, and no width limit, so each row is one line
that ``grep`` and ``cut`` can take.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.table import Table

__all__ = ["Column", "print_lines", "print_table"]

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
    shorten: Callable[[str, int], str] | None = None
    """For a column that neither wraps nor must stay whole: a cell made to fit a width, or
    as near as it can come, in a form a person still reads (a path from the left, a model as
    its family); given 0, the shortest form there is."""


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
        kept = [columns[i] for i in shown]
        cells = _shortened(kept, [[row[i] for i in shown] for row in rows], console.width)
        kept = [replace(column, shorten=None) for column in kept]  # shortened: now whole
        needed = _narrowest(kept, cells, list(range(len(kept))))
        if console.width < needed:
            console = Console(file=out, highlight=False, emoji=False, width=needed)
        console.print(_table(kept, cells))
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
    width = _GAP * (len(shown) - 1)
    for i in shown:
        column = columns[i]
        if column.shorten is not None:
            width += _width(column, [column.shorten(row[i], 0) for row in rows])
        elif column.wraps:
            width += min(_width(column, [row[i] for row in rows]), column.narrowest)
        else:
            width += _width(column, [row[i] for row in rows])
    return width


def _width(column: Column, cells: Sequence[str]) -> int:
    """The width of a column drawn whole: its widest cell, or its header."""
    from rich.cells import cell_len  # a cell's width on screen, wide characters counted twice

    return max([cell_len(column.header), *(cell_len(cell) for cell in cells)])


def _shortened(
    columns: Sequence[Column], table: Sequence[Sequence[str]], width: int
) -> list[list[str]]:
    """The rows with the cells of the columns that shorten made short enough for the table
    to fit ``width``, none shorter than it needs: on a wide terminal a path stays whole. The
    widest is shortened first, and only down to the next widest, so that two long columns
    give up their width in turn rather than one of them all of it."""
    rows = [list(row) for row in table]
    every = list(range(len(columns)))
    shortening = {i: column.shorten for i, column in enumerate(columns) if column.shorten}
    settled = [replace(column, shorten=None) for column in columns]
    while shortening and (excess := _narrowest(settled, rows, every) - width) > 0:
        widths = {i: _width(columns[i], [row[i] for row in rows]) for i in shortening}
        widest = max(widths, key=lambda i: widths[i])
        others = [widths[i] for i in widths if i != widest]
        budget = max(widths[widest] - excess, min(max(others, default=0), widths[widest] - 1))
        for row in rows:
            row[widest] = shortening[widest](row[widest], budget)
        if _width(columns[widest], [row[widest] for row in rows]) >= widths[widest]:
            del shortening[widest]  # as short as it gets: the next column's turn
    return rows


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
