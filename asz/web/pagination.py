"""Pages of a long list: which slice a page shows and the links around it.

A session of a thousand calls is a table of a thousand rows; the browser stays responsive
when the server sends a few hundred at a time, and a page number in the URL keeps each page
a stable link.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Page:
    number: int
    """From 1; a number past the last is the last."""
    count: int
    """How many pages there are (at least 1)."""
    start: int
    end: int
    total: int

    @property
    def previous(self) -> int | None:
        return self.number - 1 if self.number > 1 else None

    @property
    def next(self) -> int | None:
        return self.number + 1 if self.number < self.count else None


def page_of(total: int, size: int, asked: str | None) -> Page:
    """The page ``asked`` names (the ``page`` parameter, text) of ``total`` items; the first
    for anything that is not a page number."""
    count = max(1, -(-total // size))
    number = int(asked) if asked and asked.isdigit() and len(asked) < 9 else 1
    number = min(max(1, number), count)
    start = (number - 1) * size
    return Page(number, count, start, min(total, start + size), total)


def page_items(items: Sequence[T], page: Page) -> Sequence[T]:
    return items[page.start : page.end]
