"""The service's repacks: quiet sessions merged into few files, in a low-priority thread.

After each landing pass (a rescan every ``service.rescan_interval`` at the latest) the loop is
woken; it looks for sessions that landed nothing for ``service.repack_after`` seconds and
repacks each (``asz.store._repack``, the same code as ``asz repack``) in a thread of its own,
at the lowest CPU priority the system gives a thread, so landing and the status endpoints
never wait for its CPU. A session is repacked under the landing lock, so a pass waits for one
session's repack at most and never lands into a session half way; a session judged once is
not read again until it lands again. Stopping the service ends the thread wherever it is: a
repack is safe to stop at any instant (its files count only once its manifest is published).
"""

from __future__ import annotations

import contextlib
import os
import threading
import time

from structlog.typing import FilteringBoundLogger

from asz.adapters.transcript_cursors import renumber_cursors
from asz.config import Config
from asz.store import (
    RepackBusy,
    Store,
    budgets_of,
    landed_at,
    landing_lock,
    repack_lock,
    repack_session,
)

__all__ = ["RepackLoop"]

_LOWEST = 19


class RepackLoop:
    """Repacks the root's quiet sessions whenever a pass wakes it (see the module)."""

    def __init__(self, config: Config, store: Store, log: FilteringBoundLogger) -> None:
        self.config = config
        self.store = store
        self.log = log
        self._wake = threading.Event()
        self._judged: dict[str, float] = {}
        """Session -> the time of its ``seq`` file when it was last repacked or judged."""
        self._thread = threading.Thread(target=self._run, name="asz-repack", daemon=True)
        self.repacked = 0

    def start(self) -> None:
        self._thread.start()

    def passed(self) -> None:
        """A landing pass ended: look for quiet sessions (from any thread)."""
        self._wake.set()

    def _run(self) -> None:
        _lower_priority()
        while True:
            self._wake.wait()
            self._wake.clear()
            try:
                self.repack_quiet()
            except Exception as err:  # a bug: said, and the next wake tries again
                self.log.error("repack_crashed", error=repr(err), exc_info=err)

    def repack_quiet(self) -> int:
        """Repacks every quiet session not judged since it last landed; the number repacked."""
        root = self.config.root
        after = self.config.service.repack_after
        done = 0
        for session in self.store.sessions():
            landed = landed_at(root, session)
            if time.time() - landed < after or self._judged.get(session) == landed:
                continue
            try:
                with repack_lock(root):
                    outcome = repack_session(
                        self.store,
                        session,
                        budgets_of(self.config),
                        landing=lambda: landing_lock(root),
                        published=renumber_cursors,
                    )
            except RepackBusy:
                return done  # an asz repack runs: the next wake looks again
            except OSError as err:
                self.log.warning("repack_failed", session=session, error=str(err))
                continue
            self._judged[session] = landed
            if outcome.state == "repacked":
                done += 1
                self.repacked += 1
                self.log.info("repacked", **outcome.as_dict())
            elif outcome.state == "damaged":
                self.log.warning("repack_refused", **outcome.as_dict())
        return done


def _lower_priority() -> None:
    """This thread at the lowest CPU priority: on Linux a thread has its own nice value."""
    with contextlib.suppress(OSError, AttributeError):
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), _LOWEST)
