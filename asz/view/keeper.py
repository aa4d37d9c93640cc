"""The collector's side of the kept cache reports: keep those of the sessions that landed,
and say what each gained, for the service's counters.

A session that keeps landing (a long conversation in progress) would have its report built
again after every pass; it is built at most once per ``interval`` (``service.report_interval``)
instead, and a session left waiting is built by a later pass (the service's rescans come at
least once per ``service.rescan_interval``). A report costs what its session's landed records
hold, a few seconds for thousands of calls, so a session is also built no sooner than
``BUILD_SHARE`` times its last build took: however long a conversation grows, keeping its
report takes at most one part in ``BUILD_SHARE`` of a core. What a
report gained is counted against what was counted for it before: in memory once this keeper
counted it, else its kept report, else nothing (a session never reported counts whole).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable
from typing import Any

from asz.store import Store, UnknownSession
from asz.view.families import CacheCounts
from asz.view.kept import reported
from asz.view.prices import PriceTable
from asz.view.spend import counts_between

__all__ = ["BUILD_SHARE", "ReportKeeper"]

BUILD_SHARE = 20
"""A session's report is built again no sooner than this many times its last build took."""


class ReportKeeper:
    def __init__(
        self,
        store: Store,
        prices: PriceTable,
        interval: float,
        clock: Callable[[], float] = time.perf_counter,
    ):
        self.store = store
        self.prices = prices
        self.interval = interval
        self.clock = clock
        """What times a build (the caller says what time it is for ``refresh``)."""
        self.pending: set[str] = set()
        self._built_at: dict[str, float] = {}
        self._due_after: dict[str, float] = {}
        """Seconds after its last build that a session is due: the interval, or more."""
        self._counted: dict[str, dict[str, Any]] = {}
        self.gained: list[CacheCounts] = []
        """What the reports built gained, until the caller takes it (``take_gained``)."""

    def landed(self, sessions: Iterable[str]) -> None:
        """Sessions a pass landed something of: their reports are behind."""
        self.pending.update(sessions)

    def take_gained(self) -> list[CacheCounts]:
        taken, self.gained = self.gained, []
        return taken

    def refresh(self, now: float) -> None:
        """Builds and keeps the reports that are due, adding what each gained since it was
        last counted to ``gained``. Raises what building a report raises, after keeping the
        others."""
        failed: Exception | None = None
        for session_id in sorted(self.pending):
            due = self._due_after.get(session_id, self.interval)
            if now - self._built_at.get(session_id, -math.inf) < due:
                continue
            self.pending.discard(session_id)
            self._built_at[session_id] = now
            started = self.clock()
            try:
                self.gained.append(self._refresh(session_id))
            except UnknownSession:
                continue
            except Exception as err:  # a bug in one report must not stop the others
                failed = err
            finally:
                took = self.clock() - started
                self._due_after[session_id] = max(self.interval, BUILD_SHARE * took)
        if failed is not None:
            raise failed

    def _refresh(self, session_id: str) -> CacheCounts:
        session = self.store.session(session_id)
        found = reported(session, self.prices)
        before = self._counted.get(session_id)
        if before is None and found.before is not None:
            before = found.before["totals"]["by_family"]
        after = found.report["totals"]["by_family"]
        self._counted[session_id] = after
        return counts_between(before, after)
