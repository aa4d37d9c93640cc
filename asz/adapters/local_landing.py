"""Landing the transcripts of a list of sessions in this process, a batch at a time.

A session's files, sequence numbers and facts are its own, so sessions land one after another
and any number of processes may land disjoint lists of them side by side. The windows of the
sessions taken are staged and published together once ``BATCH_FILES`` files or
``BATCH_BYTES`` bytes wait, after one flush for the whole batch: a backlog of thousands of
small transcripts then does not wait for the disk once per file. A session's landed counts,
its sequence file and its facts follow once the batch holding its windows is published.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial

from asz.adapters.discovery import DiscoveredSession
from asz.config import Config
from asz.store.atomic import DirSyncs, StagedFiles
from asz.store.root import Root
from asz.store.session_facts import FactsBuilder, open_facts, save_facts
from asz.store.transcripts import LandedWindow, SourceOutcome, TranscriptLander

BATCH_FILES = 64
BATCH_BYTES = 32 * 1024 * 1024


@dataclass(slots=True)
class LocalResult:
    """What one pass did; a conflict, an error or a pending source makes the pass incomplete.

    ``sessions`` are those that landed something in this pass; ``source_bytes`` counts the
    transcript bytes landed and ``landed_bytes`` the bytes of the landed files written.
    ``new_conflicts`` are the (source, reason) of conflicts found in this pass, for the log.
    """

    sessions: set[str] = field(default_factory=set)
    files_landed: int = 0
    lines_landed: int = 0
    source_bytes: int = 0
    landed_bytes: int = 0
    conflicts: list[str] = field(default_factory=list)
    new_conflicts: list[tuple[str, str]] = field(default_factory=list)
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
        self.new_conflicts += other.new_conflicts
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
            if outcome.new_conflict:
                self.new_conflicts.append((relpath, outcome.conflict))
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

    def finish(self, result: LocalResult) -> None:
        try:
            if self._next_seq is not None:
                self.root.remember_seq(self.session, self._next_seq - 1)
            if self._facts is not None:
                save_facts(self.root, self._facts)
        except OSError as err:
            # What landed stays landed; the sequence file and the facts are derived.
            result.errors.append(f"{self.session}: {err.strerror or err}")


def land_sessions(
    config: Config,
    root: Root,
    sessions: Iterable[DiscoveredSession],
    before_commit: Callable[[], None] | None = None,
) -> dict[str, LocalResult]:
    """Lands what is new in each of ``sessions``; session id -> what its landing did.

    ``before_commit`` runs before each batch is published (a worker process checks there that
    the collector that started it still runs). Every directory that got a new file is flushed
    before this returns, so what it reports as landed is durable.
    """
    syncs = DirSyncs()
    staged = StagedFiles(syncs)
    results: dict[str, LocalResult] = {}
    waiting: list[str] = []

    def commit() -> None:
        if before_commit is not None:
            before_commit()
        try:
            staged.commit()
        except OSError as err:
            # The cursors did not move: these sessions land again from them.
            why = err.strerror or str(err)
            for session in waiting:
                results[session].errors.append(f"{session}: its new windows did not land: {why}")
        waiting.clear()

    try:
        for session in sessions:
            before = len(staged)
            results[session.session] = _stage_session(config, root, session, staged)
            if len(staged) > before:
                waiting.append(session.session)
            if len(staged) >= BATCH_FILES or staged.size >= BATCH_BYTES:
                commit()
        commit()
    finally:
        syncs.flush()
    return results


def _stage_session(
    config: Config, root: Root, session: DiscoveredSession, staged: StagedFiles
) -> LocalResult:
    """Stages what is new in every source of one session."""
    result = LocalResult()
    step = _SessionPass(root, session.session)
    lander = TranscriptLander(
        root,
        compression=config.compression,
        max_delta_bytes=config.adapters.claude_code_local.max_delta_bytes,
        next_seq=step.next_seq,
        on_window=step.landed,
        staged=staged,
    )
    for source in session.sources:
        outcome = lander.land(source)
        if outcome.files:
            staged.then(partial(result.count, session.session, source.relpath, outcome))
        else:
            result.count(session.session, source.relpath, outcome)
    staged.then(partial(step.finish, result))
    return result
