"""A root opened so that nothing can be written to it, whatever a reader tries.

Readers of a root keep derived state where they may (a session's ``summary.json``, its
``facts.json``, its kept cache report) and carry on when the write fails, since a root may be
read-only. The web server must never write, even there: it runs beside the collector and
would race it for those files. Rather than passing ``keep=False`` through every reader and
trusting each to obey, the server opens the root on a backend whose writing calls all fail
with ``PermissionError``, which every reader already takes as "this root cannot be written".

Derived state a reader makes is kept in the server's memory instead (up to
``DERIVED_BYTES``, the least recently made going first): a session the collector has not
landed into since it started keeping a file (a body manifest index, say) would otherwise be
derived again from its landed files by every page. Of a file kept here and one on disk, the
one written last is read (the collector keeps the root's up to date as it lands). Every
reader checks derived state against the landed files, so one that has gone stale is made
again, never believed.
"""

from __future__ import annotations

import os
import threading
import time
from collections import OrderedDict
from pathlib import Path

from asz.store import LocalBackend, RefusesLanding, Store

__all__ = ["DERIVED_BYTES", "ReadOnlyBackend", "open_readonly"]

DERIVED_BYTES = 64 << 20
"""Derived state kept in memory, at most (see the module)."""


class ReadOnlyBackend(RefusesLanding, LocalBackend):
    """A local root whose writing calls fail, and whose derived state a reader makes is kept
    in memory (see the module); reading is :class:`LocalBackend`'s."""

    REFUSAL = "the web server never writes to the root"

    def __init__(self, path: Path, derived_bytes: int = DERIVED_BYTES) -> None:
        super().__init__(path)
        self.derived_bytes = derived_bytes
        self._derived: OrderedDict[str, tuple[int, bytes]] = OrderedDict()
        """Path -> when it was kept (ns since the epoch, as file times are) and its bytes."""
        self._lock = threading.Lock()  # pages read in worker threads

    def read(self, path: str, limit: int) -> bytes:
        with self._lock:
            kept = self._derived.get(path)
        if kept is not None and len(kept[1]) <= limit:
            try:
                written = os.stat(self.describe(path)).st_mtime_ns
            except FileNotFoundError:
                written = -1
            if written < kept[0]:
                return kept[1]
        return super().read(path, limit)

    def replace_derived(self, path: str, data: bytes) -> None:
        with self._lock:
            self._derived.pop(path, None)
            if len(data) > self.derived_bytes:
                return
            self._derived[path] = (time.time_ns(), bytes(data))
            while sum(len(data) for _, data in self._derived.values()) > self.derived_bytes:
                self._derived.popitem(last=False)


def open_readonly(location: str | os.PathLike[str]) -> Store:
    """The root at ``location``, readable and never written."""
    return Store(ReadOnlyBackend(Path(os.fspath(location))))
