"""The files of a table and which of them a reader counts.

``<table>/day=<YYYY-MM-DD>/part-<machine>-<first>[-<last>].parquet``: hive style, one
directory per UTC day, so DuckDB, Athena, Trino and Spark prune by ``day``. ``<machine>`` is
the writing root's id (``asz.analytics.state.root_id``) and ``<first>``/``<last>`` the numbers
of the passes whose rows the file holds: a pass writes ``part-<machine>-<n>``, and compacting
a day's files writes one ``part-<machine>-<first>-<last>`` holding the rows of passes first to
last, then removes them. A machine only ever writes, compacts and removes files bearing its
own id, so two machines never touch each other's files.

A reader counts a file unless another file of the same machine and day covers its passes
(:func:`counted`): between the compacted file's write and the removal of what it replaces
(or after a crash between the two) the rows are counted once, from the compacted file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import NamedTuple

__all__ = ["NO_DAY", "TABLE_NAMES", "Part", "counted", "parse_part", "part_path"]

TABLE_NAMES = ("calls", "sessions", "breaks")

_PART = re.compile(
    r"^([^/]*)/day=(\d{4}-\d{2}-\d{2})/part-([0-9a-f]{16})-(\d{8,})(?:-(\d{8,}))?\.parquet$"
)
"""A part's whole path in one match: a reader parses every file of a team's prefix (146,000 a
year for 200 developers) before each query."""
NO_DAY = "1970-01-01"
"""The day of a row no time is known for (a side request with no call before it)."""


class Part(NamedTuple):
    """One file of a table. A tuple: a reader makes one for every file of a team's prefix
    before each query, and a frozen dataclass costs several times as much to make."""

    table: str
    day: str
    machine: str
    first: int
    last: int

    @property
    def path(self) -> str:
        return part_path(self.table, self.day, self.machine, self.first, self.last)

    def covers(self, other: Part) -> bool:
        """Whether this file holds every pass ``other`` holds (and is not ``other``)."""
        return (
            self != other
            and (self.table, self.day, self.machine) == (other.table, other.day, other.machine)
            and self.first <= other.first
            and other.last <= self.last
        )


def part_path(table: str, day: str, machine: str, first: int, last: int | None = None) -> str:
    passes = f"{first:08d}" if last is None or last == first else f"{first:08d}-{last:08d}"
    return f"{table}/day={day}/part-{machine}-{passes}.parquet"


def parse_part(path: str) -> Part | None:
    """The part at ``path`` (relative to the target), or None for any other file."""
    found = _PART.match(path)
    if found is None:
        return None
    table, day, machine, first_text, last_text = found.groups()
    first = int(first_text)
    last = int(last_text) if last_text else first
    if last < first:
        return None
    return Part(table, day, machine, first, last)


def counted(parts: Iterable[Part]) -> list[Part]:
    """The parts a reader counts: those no other part of their machine and day covers."""
    by_place: dict[tuple[str, str, str], set[Part]] = {}
    for part in parts:
        by_place.setdefault((part.table, part.day, part.machine), set()).add(part)
    found: list[Part] = []
    for same in by_place.values():
        if len(same) == 1:
            found.extend(same)
        else:
            found.extend(part for part in same if not any(o.covers(part) for o in same))
    return found
