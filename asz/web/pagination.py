"""Pages of a long list: which slice a page shows and the links around it.

A session of a thousand calls is a table of a thousand rows; the browser stays responsive
when the server sends a few hundred at a time, and a page number in the URL keeps each page
a stable link.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

__all__ = ["BadQuery", "Page", "page_items", "page_of"]

T = TypeVar("T")
_NUMBER = re.compile(r"[0-9]{1,18}")


class BadQuery(ValueError):
    """A query parameter holding a value no page offers; its text says which and why (the
    400 page's). A link that asks for what is not there is told so, not shown something else
    as if it were the answer."""


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
    """The page ``asked`` names (the ``page`` parameter, text) of ``total`` items, the first
    when none is asked; BadQuery for anything that is not one of the pages."""
    count = max(1, -(-total // size))
    number = int(asked) if asked and _NUMBER.fullmatch(asked) else 0 if asked else 1
    if not 1 <= number <= count:
        pages = "1 page" if count == 1 else f"pages 1 to {count}"
        raise BadQuery(f"page={asked!r} is not a page of this list, which has {pages}")
    start = (number - 1) * size
    return Page(number, count, start, min(total, start + size), total)


def page_items(items: Sequence[T], page: Page) -> Sequence[T]:
    return items[page.start : page.end]
