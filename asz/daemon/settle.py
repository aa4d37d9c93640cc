"""The settle queue: when a file the watcher saw change is ready for a pass to take.

Claude Code writes a body with one asynchronous write, without a temporary name, so an event
can arrive while the body is half written; and it appends to a transcript a line at a time. A
pass over a half-written body wastes a read and a parse and lands nothing, so the queue holds
a file until it has been quiet for ``settle_seconds``:

- a body that then parses as one JSON value is taken;
- a body that does not is parked until it changes again (its writer is still busy) or until
  ``unreadable_after`` seconds after its last write, when it is taken anyway so that a pass
  counts it unreadable;
- a transcript (or ``index.jsonl``) is taken when quiet, or ``max_wait`` after its first
  change if it never goes quiet, so a busy session still lands as it goes (a pass lands only
  whole lines).

The queue itself does no I/O and reads no clock: callers pass ``now`` (monotonic seconds) and
run :func:`check_body` in a worker thread, so the event loop never waits on a disk.
"""

from __future__ import annotations

import enum
import heapq
import itertools
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from asz.adapters.provider_index import INDEX_NAME
from asz.adapters.provider_source import (
    TooLarge,
    is_one_json_value,
    parse_body_name,
    read_body,
)
from asz.adapters.source_files import NotReadable

__all__ = [
    "UNREADABLE_MARGIN",
    "BodyCheck",
    "Kind",
    "Readiness",
    "SettleQueue",
    "SourcePaths",
    "check_body",
]

UNREADABLE_MARGIN = 0.1
"""Seconds added to a parked body's deadline, so the pass it triggers is sure to find it old
enough to count unreadable."""


class Kind(enum.Enum):
    BODY = "body"
    """Written whole, once: a request or a response."""
    LINES = "lines"
    """Appended a line at a time: a transcript, or the bodies directory's ``index.jsonl``."""


class Readiness(enum.Enum):
    TAKE = "take"
    """Parses, or is for the pass to judge (too large, not a regular file)."""
    WAIT = "wait"
    """Not one JSON value yet."""
    GONE = "gone"


@dataclass(frozen=True, slots=True)
class BodyCheck:
    readiness: Readiness
    age: float = 0.0
    """Seconds since the body's last write, by the wall clock."""


def check_body(path: Path) -> BodyCheck:
    """Reads a body once and says whether it is complete; blocking, so not on the loop."""
    try:
        read = read_body(path.parent, path.name)
    except NotReadable as err:
        if err.kind == "gone":
            return BodyCheck(Readiness.GONE)
        # Still being written, and its next write is an event; anything else is the pass's.
        return BodyCheck(Readiness.WAIT if err.kind == "changing" else Readiness.TAKE)
    except TooLarge:
        return BodyCheck(Readiness.TAKE)
    if is_one_json_value(read.data):
        return BodyCheck(Readiness.TAKE)
    return BodyCheck(Readiness.WAIT, age=time.time() - read.mtime_ns / 1e9)


@dataclass(frozen=True, slots=True)
class SourcePaths:
    """Which watched paths are sources, and of what kind.

    Every projects and bodies directory is compared as the watcher reports paths: resolved,
    so a Claude Code directory reached through a symbolic link still matches.
    """

    projects: tuple[str, ...]
    bodies: frozenset[str]

    @classmethod
    def resolve(cls, projects: Sequence[Path], bodies: Sequence[Path]) -> SourcePaths:
        return cls(
            tuple(os.path.realpath(path) + os.sep for path in projects),
            frozenset(os.path.realpath(path) for path in bodies),
        )

    def kind_of(self, path: str) -> Kind | None:
        directory, name = os.path.split(path)
        if directory in self.bodies:
            if name == INDEX_NAME:
                return Kind.LINES
            return Kind.BODY if parse_body_name(name) else None
        if name.endswith(".jsonl") and directory.startswith(self.projects):
            return Kind.LINES
        return None


@dataclass(slots=True)
class _Entry:
    kind: Kind
    first_change: float
    last_change: float
    version: int
    checking: bool = False
    parked: bool = False


class SettleQueue:
    """Files waiting to be quiet, ordered by when each is next due."""

    def __init__(self, settle_seconds: float, unreadable_after: float, max_wait: float) -> None:
        self.settle_seconds = settle_seconds
        self.unreadable_after = unreadable_after
        self.max_wait = max(max_wait, settle_seconds)
        self._entries: dict[str, _Entry] = {}
        self._heap: list[tuple[float, int, str]] = []
        self._versions = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def changed(self, path: str, kind: Kind, now: float) -> None:
        """The file was written (or appeared); it is due once quiet again."""
        entry = self._entries.get(path)
        if entry is None:
            entry = _Entry(kind, now, now, 0)
            self._entries[path] = entry
        entry.last_change = now
        entry.checking = False
        entry.parked = False
        due = now + self.settle_seconds
        if kind is Kind.LINES:
            due = min(due, entry.first_change + self.max_wait)
        self._schedule(path, entry, due)

    def forget(self, path: str) -> None:
        """The file is gone: nothing of it is left to take."""
        self._entries.pop(path, None)

    def next_deadline(self) -> float | None:
        """When :meth:`take_due` next has something to give; None when nothing waits."""
        while self._heap:
            due, version, path = self._heap[0]
            entry = self._entries.get(path)
            if entry is not None and entry.version == version and not entry.checking:
                return due
            heapq.heappop(self._heap)
        return None

    def take_due(self, now: float) -> tuple[int, list[str]]:
        """Files due by ``now``: how many are taken outright, and which bodies need a check.

        A body handed out for a check stays in the queue, so a write that lands while it is
        being checked makes the check's answer stale instead of lost.
        """
        taken = 0
        to_check: list[str] = []
        while (deadline := self.next_deadline()) is not None and deadline <= now:
            _due, _version, path = heapq.heappop(self._heap)
            entry = self._entries[path]
            if entry.kind is Kind.LINES or entry.parked:
                del self._entries[path]
                taken += 1
            else:
                entry.checking = True
                to_check.append(path)
        return taken, to_check

    def judge(self, path: str, check: BodyCheck, checked_at: float) -> bool:
        """Applies a body's check, made at ``checked_at``; True when the body is taken."""
        entry = self._entries.get(path)
        if entry is None or not entry.checking or entry.last_change > checked_at:
            return False
        if check.readiness is Readiness.GONE:
            del self._entries[path]
            return False
        remaining = min(max(self.unreadable_after - check.age, 0.0), self.unreadable_after)
        if check.readiness is Readiness.TAKE or remaining == 0.0:
            del self._entries[path]
            return True
        entry.checking = False
        entry.parked = True
        self._schedule(path, entry, checked_at + remaining + UNREADABLE_MARGIN)
        return False

    def _schedule(self, path: str, entry: _Entry, due: float) -> None:
        entry.version = next(self._versions)
        heapq.heappush(self._heap, (due, entry.version, path))
