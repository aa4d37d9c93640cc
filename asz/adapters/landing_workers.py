"""Landing a large backlog of sessions in worker processes.

Most of the time of landing is Python work (finding the facts in each line, framing) that
holds the interpreter lock, so threads of one process share about one core. A first pass over
months of transcripts, or over a new root, lands gigabytes; there the pass starts one worker
process per core (at most ``MAX_WORKERS``) and hands each a share of whole sessions. Starting
them costs a fraction of a second, so it is done only when the sessions with nothing landed
yet hold at least ``WORKER_MIN_BYTES``; a pass of the running service lands a few lines, in
the collector's own process.

The collector holds the root's lock for its workers, and each session is landed by one worker
only, so no two processes ever write the same session. A worker whose collector is gone must
not write on (another collector may hold the lock by then), nor wait forever on a result
nobody reads: it is killed with its collector where the system can do that (Linux), and
elsewhere ends within a second, and before publishing anything, by its own check.
A worker that dies leaves what a crash leaves; the sessions it had not finished are errors of
this pass, land in the next one, and its temporary files are removed once every worker is
gone.
"""

from __future__ import annotations

import contextlib
import ctypes
import multiprocessing
import os
import signal
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from functools import partial
from pathlib import Path

import structlog

from asz.adapters.discovery import DiscoveredSession
from asz.adapters.local_landing import land_sessions
from asz.atomic import remove_stale_temps
from asz.config import Config
from asz.progress import Progress, Silent
from asz.store import Store
from asz.tally import Tally

__all__ = [
    "MAX_WORKERS",
    "ORPHAN_CHECK_SECONDS",
    "SHARE_BYTES",
    "SHARE_SESSIONS",
    "WORKER_MIN_BYTES",
    "backlog_bytes",
    "land_in_workers",
    "log",
    "worker_count",
]

WORKER_MIN_BYTES = 64 * 1024 * 1024
MAX_WORKERS = 4
SHARE_BYTES = 32 * 1024 * 1024
SHARE_SESSIONS = 256
log = structlog.get_logger(__name__)

ORPHAN_CHECK_SECONDS = 1.0
_PR_SET_PDEATHSIG = 1


def backlog_bytes(store: Store, sessions: list[DiscoveredSession]) -> int:
    """The bytes of the sources of sessions that have nothing landed yet (one stat each).

    Sessions that have landed before are not looked into: a pass of the running service must
    not pay for the estimate, and their growth since the last pass is small.
    """
    return sum(session.size for session in sessions if not store.has_landed(session.session))


def worker_count(backlog: int, sessions: int) -> int:
    """How many worker processes a pass with ``backlog`` new bytes should start (0: none)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    workers = min(cores or 1, MAX_WORKERS, sessions)
    return workers if backlog >= WORKER_MIN_BYTES and workers > 1 else 0


def land_in_workers(
    config: Config,
    store: Store,
    sessions: list[DiscoveredSession],
    workers: int,
    progress: Progress | None = None,
) -> dict[str, Tally]:
    """Lands ``sessions`` in ``workers`` processes; session id -> what its landing did.

    Where worker processes cannot start (no process-shared semaphores in a container without
    ``/dev/shm``, a process limit reached), the sessions land in this process instead.
    """
    shown = progress or Silent()
    pool = _start_pool(workers)
    if pool is None:
        return land_sessions(config, store, sessions, progress=shown)
    results: dict[str, Tally] = {}
    pending: dict[Future[dict[str, Tally]], list[DiscoveredSession]] = {}
    broken = False
    with pool:
        for share in _shares(sessions):
            pending[pool.submit(_land_share, config, store, share, os.getpid())] = share
        for future, share in pending.items():
            try:
                results.update(future.result())
                shown.advance(sum(len(s.sources) for s in share), sum(s.size for s in share))
            except BrokenProcessPool:
                broken = True
                for session in share:
                    results[session.session] = Tally(
                        errors=[
                            f"{session.session}: the worker landing it stopped; it lands next pass"
                        ]
                    )
    if broken:
        # Every worker is gone: what they left half-written is nobody's any more.
        remove_stale_temps(Path(store.location))
    return results


def _start_pool(workers: int) -> ProcessPoolExecutor | None:
    """A pool whose ``workers`` processes have started, or None when they cannot start.

    Each is started by a task of its own before any landing is handed out, so a failure to
    start leaves nothing half given away.
    """
    try:
        pool = ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("spawn"),
            initializer=_start_worker,
            initargs=(os.getpid(),),
        )
    except (OSError, ImportError, NotImplementedError) as err:
        log.warning("landing in this process: no worker processes", why=str(err))
        return None
    try:
        for started in [pool.submit(os.getpid) for _ in range(workers)]:
            started.result()
    except (OSError, BrokenProcessPool) as err:
        pool.shutdown(cancel_futures=True)
        log.warning("landing in this process: worker processes did not start", why=str(err))
        return None
    return pool


def _shares(sessions: list[DiscoveredSession]) -> list[list[DiscoveredSession]]:
    """Sessions cut into shares of about ``SHARE_BYTES``, the largest first, so that the
    workers finish at about the same time."""
    shares: list[list[DiscoveredSession]] = []
    share: list[DiscoveredSession] = []
    size = 0
    sized = sorted(((s.size, s) for s in sessions), key=lambda pair: -pair[0])
    for session_bytes, session in sized:
        if share and (size + session_bytes > SHARE_BYTES or len(share) >= SHARE_SESSIONS):
            shares.append(share)
            share, size = [], 0
        share.append(session)
        size += session_bytes
    if share:
        shares.append(share)
    return shares


def _start_worker(collector: int) -> None:
    """Ties the worker to its collector, and leaves signals to the collector: a stop lets the
    pass in flight finish, and a terminal's Ctrl-C reaches the collector, which then ends."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        prctl = ctypes.CDLL(None, use_errno=True).prctl
        prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    _stop_if_orphaned(collector)
    threading.Thread(target=_watch, args=(collector,), name="asz-orphan-check", daemon=True).start()


def _watch(collector: int) -> None:
    while True:
        time.sleep(ORPHAN_CHECK_SECONDS)
        _stop_if_orphaned(collector)


def _stop_if_orphaned(collector: int) -> None:
    """Ends the worker at once when the collector that started it is gone."""
    if os.getppid() != collector:
        os._exit(1)


def _land_share(
    config: Config, store: Store, share: list[DiscoveredSession], collector: int
) -> dict[str, Tally]:
    return land_sessions(config, store, share, before_commit=partial(_stop_if_orphaned, collector))
