"""The collector's side of the kept cache reports: keep those of the sessions that landed,
and say what each gained, for the service's counters.

A session that keeps landing (a long conversation in progress) would have its report built
again after every pass; it is built at most once per ``interval`` (``service.report_interval``)
instead, and a session left waiting is built by a later pass (the service's rescans come at
least once per ``service.rescan_interval``). What a
report gained is counted against what was counted for it before: in memory once this keeper
counted it, else its kept report, else nothing (a session never reported counts whole).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from asz.store import Store, UnknownSession
from asz.view.families import CacheCounts
from asz.view.kept import reported
from asz.view.prices import PriceTable
from asz.view.spend import counts_between


class ReportKeeper:
    def __init__(self, store: Store, prices: PriceTable, interval: float):
        self.store = store
        self.prices = prices
        self.interval = interval
        self.pending: set[str] = set()
        self._built_at: dict[str, float] = {}
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
            if now - self._built_at.get(session_id, -math.inf) < self.interval:
                continue
            self.pending.discard(session_id)
            self._built_at[session_id] = now
            try:
                self.gained.append(self._refresh(session_id))
            except UnknownSession:
                continue
            except Exception as err:  # a bug in one report must not stop the others
                failed = err
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
