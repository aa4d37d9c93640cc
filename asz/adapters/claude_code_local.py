"""The ``claude-code-local`` adapter: one pass landing every transcript Claude Code wrote.

Each pass rediscovers the projects directory (no list is kept), judges every session with the
session filter, and lands each collected session's sources from where they were last landed.
The pass keeps each session's derived facts up to date as its windows land, so the provider
adapter running next can claim a response by a message id that just landed. Sources that
discovery no longer finds are marked ``source_gone``: what landed of them stays.

The caller holds the root's collector lock.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from asz.adapters.discovery import DiscoveredSession, Discovery, discover
from asz.adapters.session_filter import SessionJudge, Verdict
from asz.config import Config
from asz.store.atomic import DirSyncs, fsync_dir
from asz.store.root import Root
from asz.store.session_facts import FactsBuilder, open_facts, save_facts
from asz.store.transcripts import (
    LandedWindow,
    SourceOutcome,
    TranscriptLander,
    mark_gone,
    stream_dirs,
    transcript_check,
)

__all__ = ["LocalResult", "collect_transcripts", "transcript_check"]

LANDING_THREADS = 4


@dataclass(slots=True)
class LocalResult:
    """What one pass did; a conflict, an error or a pending source makes the pass incomplete.

    ``sessions`` are those that landed something in this pass; ``source_bytes`` counts the
    transcript bytes landed and ``landed_bytes`` the bytes of the landed files written.
    """

    sessions: set[str] = field(default_factory=set)
    files_landed: int = 0
    lines_landed: int = 0
    source_bytes: int = 0
    landed_bytes: int = 0
    conflicts: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    pending: int = 0
    unattributed: int = 0
    excluded_sessions: int = 0

    def merge(self, other: LocalResult) -> None:
        """Adds the landing counts of ``other`` (one session's part of the pass)."""
        self.sessions |= other.sessions
        self.files_landed += other.files_landed
        self.lines_landed += other.lines_landed
        self.source_bytes += other.source_bytes
        self.landed_bytes += other.landed_bytes
        self.conflicts += other.conflicts
        self.errors += other.errors
        self.pending += other.pending

    def count(self, session: str, relpath: str, outcome: SourceOutcome) -> None:
        if outcome.files:
            self.sessions.add(session)
        self.files_landed += outcome.files
        self.lines_landed += outcome.lines
        self.source_bytes += outcome.source_bytes
        self.landed_bytes += outcome.landed_bytes
        self.pending += outcome.pending
        if outcome.conflict:
            self.conflicts.append(f"{relpath}: {outcome.conflict}")
        if outcome.error:
            self.errors.append(outcome.error)


class _SessionPass:
    """One session's landing: its sequence numbers and its facts, touched only if it lands."""

    def __init__(self, root: Root, session: str) -> None:
        self.root = root
        self.session = session
        self._next_seq: int | None = None
        self._facts: FactsBuilder | None = None

    def next_seq(self) -> int:
        if self._next_seq is None:
            # Before the session's first window of the pass lands: the facts catch up with
            # what landed earlier, and are then fed each window without reading it back.
            self._facts = open_facts(self.root, self.session)
            self._next_seq = self.root.next_seq(self.session)
        seq = self._next_seq
        self._next_seq += 1
        return seq

    def landed(self, window: LandedWindow) -> None:
        if self._facts is not None:
            self._facts.add_file(window.seq, [window])

    def finish(self) -> None:
        if self._next_seq is not None:
            self.root.remember_seq(self.session, self._next_seq - 1)
        if self._facts is not None:
            save_facts(self.root, self._facts)


def collect_transcripts(config: Config, root: Root) -> LocalResult:
    """One pass over the projects directory; lands what is new in every collected session.

    Sessions land side by side on a few threads: a session's files, sequence numbers and facts
    are its own, and most of the time of landing a small transcript is spent waiting for the
    disk. Results are merged in session order, so a pass reports the same way every time.
    """
    result = LocalResult()
    found = discover(config.projects_dir)
    result.errors += found.errors
    result.unattributed = len(found.unattributed)
    judge = SessionJudge(config, root, found.sessions)
    collected = []
    for session in sorted(found.sessions):
        if judge.judge(session) is Verdict.COLLECT:
            collected.append(found.sessions[session])
        else:
            result.excluded_sessions += 1
    syncs = DirSyncs()
    with ThreadPoolExecutor(LANDING_THREADS, thread_name_prefix="asz-transcripts") as pool:
        try:
            for landed in pool.map(lambda session: _land(config, root, session, syncs), collected):
                result.merge(landed)
        finally:
            # The directories of every file landed, each synced once and side by side: what
            # the pass reports as landed is durable when it returns.
            for _done in pool.map(fsync_dir, syncs.take()):
                pass
    _mark_gone(root, found, {session.session for session in collected})
    return result


def _land(config: Config, root: Root, session: DiscoveredSession, syncs: DirSyncs) -> LocalResult:
    result = LocalResult()
    step = _SessionPass(root, session.session)
    lander = TranscriptLander(
        root,
        compression=config.compression,
        max_delta_bytes=config.adapters.claude_code_local.max_delta_bytes,
        next_seq=step.next_seq,
        on_window=step.landed,
        syncs=syncs,
    )
    try:
        for source in session.sources:
            result.count(session.session, source.relpath, lander.land(source))
    finally:
        try:
            step.finish()
        except OSError as err:
            # What landed stays landed; the sequence file and the facts are derived.
            result.errors.append(f"{session.session}: {err.strerror or err}")
    return result


def _mark_gone(root: Root, found: Discovery, collected: set[str]) -> None:
    """Marks the landed streams whose source this pass did not find.

    Sessions the filter excluded are left alone: their sources were not looked at.
    """
    for session in root.sessions():
        discovered = found.sessions.get(session)
        if discovered is not None and session not in collected:
            continue
        present = {source.key for source in discovered.sources} if discovered else set()
        for directory in stream_dirs(root, session):
            if directory.name not in present:
                mark_gone(directory)
