"""Rebuilt bodies kept in memory while a session's records are cut or read."""

from __future__ import annotations

from collections import OrderedDict

__all__ = ["CACHE_BYTES", "BodyCache"]

CACHE_BYTES = 64 * 1024 * 1024
"""Rebuilt bodies kept besides the chain tips, so a copy rarely rebuilds its base again."""


class BodyCache:
    """Rebuilt bodies: the chain tips' for as long as they are tips, others within a budget.

    Tips are what the next body of each chain copies from, so they stay; other bodies are kept
    least recently used first out, and the latest one is kept even when it alone is over budget.
    """

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._pinned: dict[str, bytes | None] = {}
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        self._recent_bytes = 0

    def get(self, record_id: str) -> bytes | None:
        body = self._pinned.get(record_id)
        if body is None and record_id in self._recent:
            self._recent.move_to_end(record_id)
            body = self._recent[record_id]
        return body

    def put(self, record_id: str, body: bytes) -> None:
        if record_id in self._pinned:
            self._pinned[record_id] = body
        else:
            self._remember(record_id, body)

    def pin(self, record_id: str) -> None:
        body = self._recent.pop(record_id, None)
        if body is not None:
            self._recent_bytes -= len(body)
        self._pinned[record_id] = body

    def unpin(self, record_id: str) -> None:
        body = self._pinned.pop(record_id, None)
        if body is not None:
            self._remember(record_id, body)

    def _remember(self, record_id: str, body: bytes) -> None:
        old = self._recent.pop(record_id, None)
        if old is not None:
            self._recent_bytes -= len(old)
        self._recent[record_id] = body
        self._recent_bytes += len(body)
        while self._recent_bytes > self._budget and len(self._recent) > 1:
            _, dropped = self._recent.popitem(last=False)
            self._recent_bytes -= len(dropped)
