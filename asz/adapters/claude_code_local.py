"""The ``claude-code-local`` adapter: one pass landing every transcript Claude Code wrote.

Each pass rediscovers the projects directories (no list is kept), judges every session with the
session filter, and lands each collected session's sources from where they were last landed.
The pass keeps each session's derived facts up to date as its windows land, so the provider
adapter running next can claim a response by a message id that just landed. Sources that
discovery no longer finds are marked ``source_gone``: what landed of them stays.

The caller holds the root's collector lock.
"""

from __future__ import annotations

import structlog

from asz.adapters.discovery import Discovery, discover
from asz.adapters.landing_workers import backlog_bytes, land_in_workers, worker_count
from asz.adapters.local_landing import land_sessions
from asz.adapters.session_filter import SessionJudge, Verdict
from asz.adapters.transcript_cursors import mark_gone
from asz.config import Config
from asz.progress import Progress, Silent
from asz.store import Store
from asz.tally import Tally

__all__ = ["collect_transcripts", "log"]

log = structlog.get_logger(__name__)


def collect_transcripts(config: Config, store: Store, progress: Progress | None = None) -> Tally:
    """One pass over the projects directories; lands what is new in every collected session.

    A large backlog lands in worker processes, anything else in this one (see
    :mod:`asz.adapters.landing_workers`). Results are merged in session order, so a pass
    reports the same way every time.
    """
    result = Tally()
    found = discover(*config.projects_dirs)
    result.errors += found.errors
    result.transcripts_unattributed = len(found.unattributed)
    judge = SessionJudge(config, store, found.sessions)
    collected = []
    for session in sorted(found.sessions):
        if judge.judge(session) is Verdict.COLLECT:
            collected.append(found.sessions[session])
        else:
            result.sessions_excluded += 1
    shown = progress or Silent()
    shown.grow(sum(len(s.sources) for s in collected), sum(s.size for s in collected))
    backlog = backlog_bytes(store, collected)
    workers = worker_count(backlog, len(collected))
    if workers:
        log.info("landing a backlog in worker processes", workers=workers, backlog_bytes=backlog)
        landed = land_in_workers(config, store, collected, workers, shown)
    else:
        landed = land_sessions(config, store, collected, progress=shown)
    for session in sorted(landed):
        result.add(landed[session])
    _mark_gone(store, found, {session.session for session in collected})
    return result


def _mark_gone(store: Store, found: Discovery, collected: set[str]) -> None:
    """Marks the landed streams whose source this pass did not find.

    Sessions the filter excluded are left alone: their sources were not looked at.
    """
    for session_id in store.sessions():
        discovered = found.sessions.get(session_id)
        if discovered is not None and session_id not in collected:
            continue
        present = {source.key for source in discovered.sources} if discovered else set()
        session = store.open_session(session_id)
        for directory in session.ordinary_stream_dirs():
            if directory.rsplit("/", 1)[-1] not in present:
                mark_gone(session, directory)
