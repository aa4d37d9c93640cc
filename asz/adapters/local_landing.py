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
from functools import partial

from asz.adapters.discovery import DiscoveredSession
from asz.adapters.transcript_landing import TranscriptLander
from asz.atomic import DirSyncs
from asz.config import Config
from asz.progress import Progress
from asz.store import Batch, FactsBuilder, LandedWindow, Store, open_facts, save_facts
from asz.tally import Tally

__all__ = ["BATCH_BYTES", "BATCH_FILES", "land_sessions"]

BATCH_FILES = 64
BATCH_BYTES = 32 * 1024 * 1024


class _SessionPass:
    """One session's landing: its writer and its facts, touched only if it lands."""

    def __init__(self, store: Store, session: str, batch: Batch) -> None:
        self.session = store.open_session(session)
        self.writer = store.writer(session, batch)
        self._facts: FactsBuilder | None = None

    def landed(self, window: LandedWindow) -> None:
        if self._facts is None:
            # Before the session's first window of the pass is added: the facts catch up with
            # what landed earlier, and are then fed each window without reading it back.
            self._facts = open_facts(self.session)
        self._facts.add_file(window.seq, [window])

    def finish(self, tally: Tally) -> None:
        tally.errors += self.writer.errors
        if self._facts is not None:
            try:
                save_facts(self.session, self._facts)
            except OSError as err:
                # What landed stays landed; the facts are derived.
                tally.errors.append(f"{self.session.id}: {err.strerror or err}")


def land_sessions(
    config: Config,
    store: Store,
    sessions: Iterable[DiscoveredSession],
    before_commit: Callable[[], None] | None = None,
    progress: Progress | None = None,
) -> dict[str, Tally]:
    """Lands what is new in each of ``sessions``; session id -> what its landing did.

    ``before_commit`` runs before each batch is published (a worker process checks there that
    the collector that started it still runs). Every directory that got a new file is flushed
    before this returns, so what it reports as landed is durable.
    """
    syncs = DirSyncs()
    batch = store.batch(syncs)
    results: dict[str, Tally] = {}
    waiting: list[str] = []

    def commit() -> None:
        if before_commit is not None:
            before_commit()
        try:
            batch.commit()
        except OSError as err:
            # The cursors did not move: these sessions land again from them.
            why = err.strerror or str(err)
            for session in waiting:
                results[session].errors.append(f"{session}: its new windows did not land: {why}")
        waiting.clear()

    try:
        for session in sessions:
            before = len(batch)
            results[session.session] = _stage_session(config, store, session, batch)
            if progress is not None:
                progress.advance(len(session.sources), session.size)
            if len(batch) > before:
                waiting.append(session.session)
            if len(batch) >= BATCH_FILES or batch.size >= BATCH_BYTES:
                commit()
        commit()
    finally:
        syncs.flush()
    return results


def _stage_session(config: Config, store: Store, session: DiscoveredSession, batch: Batch) -> Tally:
    """Stages what is new in every source of one session."""
    tally = Tally()
    step = _SessionPass(store, session.session, batch)
    lander = TranscriptLander(
        step.session,
        step.writer,
        max_delta_bytes=config.adapters.claude_code_local.max_delta_bytes,
        on_window=step.landed,
    )
    for source in session.sources:
        lander.land(source, tally)
    batch.then(partial(step.finish, tally))
    return tally
