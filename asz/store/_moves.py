"""Reads of a session that start again when a repack moves the session under them.

A repack may publish a new generation of a session while a reader reads it, and retire the
files the reader counted (``asz.store._generation``). A file found gone then, or a sequence
listed half way through its retiring, is no problem: the read asked for (a body, a transcript,
the lines, the facts...) starts again once from the newest generation, which holds the same
bytes, and the problems said on the way are taken back. Only a second such move within the
same read is said as a problem, so a read is never repeated without end.

:class:`MovedReads` is that machinery, apart from what it retries: the session's files
(``asz.store._session_files``) say when they moved and how they are read afresh.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Concatenate, ParamSpec, TypeVar

from asz.store._errors import Problem

__all__ = ["MovedReads", "SessionMoved", "retried_when_moved"]

P = ParamSpec("P")
R = TypeVar("R")
S = TypeVar("S", bound="MovedReads")


class SessionMoved(Exception):
    """A file the session counted is gone, and a newer generation of the session was
    published meanwhile: a repack retired what the read had listed."""


def retried_when_moved(
    read: Callable[Concatenate[S, P], R],
) -> Callable[Concatenate[S, P], R]:
    """A method of a session that reads it, read once more from the session's newest
    generation when a repack moved the session under it (:meth:`MovedReads.again_when_moved`)."""

    def again(session: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
        return session.again_when_moved(lambda: read(session, *args, **kwargs))

    functools.update_wrapper(again, read)
    return again


class MovedReads:
    """What starts a session's reads again when a repack moved it; the session says whether
    it moved (:meth:`moved`) and forgets what it read (:meth:`renew`)."""

    problems: list[Problem]

    def __init__(self) -> None:
        self._renewals = 0
        """How many times the session was read afresh (``renew``)."""
        self._moves: int | None = None
        """Within a read that starts again when the session moves (``again_when_moved``):
        how many more times it may; None outside one."""

    def renew(self) -> None:
        """Forgets what was read of the session, so that it is read again from its newest
        generation."""
        raise NotImplementedError

    def moved(self) -> bool:
        """Whether a generation other than the one read counts now."""
        raise NotImplementedError

    def renewed(self) -> None:
        """Counts a renewal: an iteration under way starts again from there."""
        self._renewals += 1

    def within_retry(self) -> bool:
        """Whether a read that starts again when moved is under way (then it retries, not
        the reads within it)."""
        return self._moves is not None

    def again_when_moved(self, read: Callable[[], R]) -> R:
        """``read()``, run once more from the session's newest generation when a repack moved
        the session under it (:class:`SessionMoved`: a file it counted is gone, or its sequence was
        listed half way through their removing), with the problems said on the way taken
        back. Reads within it leave the retrying to it; the second time round a move is a
        problem, so a read is never repeated without end."""
        if self._moves is not None:
            return read()
        said = len(self.problems)
        self._moves = 1
        try:
            try:
                return read()
            except SessionMoved:
                del self.problems[said:]
                self.renew()
            self._moves = 0
            return read()
        finally:
            self._moves = None

    def iterated_when_moved(self, start: Callable[[], Iterator[R]]) -> Iterator[R]:
        """The items of ``start()``, an iteration over the session, made again once by
        ``start()`` from the session's newest generation when a repack moved the session
        under it, with the problems said on the way taken back: ``start`` skips what was
        given before (the caller keeps that). As :meth:`again_when_moved`, but only while an
        item is being made: the caller may read the session otherwise between two items, and
        when such a read found the session moved and read it afresh, the iteration starts
        again from there too (what it listed is gone)."""
        said = len(self.problems)
        items = start()
        renewals = self._renewals
        moves = 1
        while True:
            outer = self._moves is None
            if outer and moves and self._renewals != renewals:
                moves = 0
                del self.problems[said:]
                items, renewals = start(), self._renewals
            if outer:
                self._moves = moves
            try:
                item = next(items)
            except StopIteration:
                return
            except SessionMoved:
                if not outer or not moves:
                    raise
                moves = 0
                del self.problems[said:]
                self.renew()
                items, renewals = start(), self._renewals
                continue
            finally:
                if outer:
                    self._moves = None
            yield item

    def gone(self) -> None:
        """A file counted is gone, or what a read looks for is not in the files it listed:
        raises :class:`SessionMoved` when a repack moved the session since and the read may
        start again (:func:`retried_when_moved`)."""
        if self._moves and self.moved():
            raise SessionMoved
