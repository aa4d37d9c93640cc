"""One collection pass: transcripts first, then provider bodies, counted as one.

The transcript adapter runs first so that a response only a transcript names finds its
session in the same pass. ``asz collect --once`` is exactly one call of :func:`run_pass`, and
the long-running service runs the same function, so the two can never disagree.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection
from dataclasses import asdict, dataclass, field

from asz.adapters.claude_code_local import LocalResult, collect_transcripts
from asz.adapters.claude_code_provider import ProviderResult, ProviderState, collect_bodies
from asz.adapters.session_filter import SessionJudge
from asz.config import Config
from asz.store.bodies import BodyStore
from asz.store.root import Root

WRITE_FAILED = (OSError, sqlite3.Error)
"""What a write to the root raises when the disk is full or failing (the provider ledger is an
SQLite database, which says so in its own words)."""


@dataclass(slots=True)
class PassCounts:
    """What one pass did; the ``--json`` line and the metrics are made from this."""

    sessions: int = 0
    landed: int = 0
    records: int = 0
    bodies_landed: int = 0
    bodies_waiting: int = 0
    bodies_unreadable: int = 0
    bodies_excluded: int = 0
    transcript_lines_landed: int = 0
    transcripts_unattributed: int = 0
    sessions_excluded: int = 0
    source_bytes: int = 0
    landed_bytes: int = 0
    conflicts: int = 0
    conflict_sources: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def complete(self) -> bool:
        """Waiting and unreadable bodies never fail a pass; conflicts and errors do."""
        return self.conflicts == 0 and not self.errors

    @property
    def changed(self) -> bool:
        return self.landed > 0 or self.conflicts > 0 or bool(self.errors)

    def as_dict(self) -> dict:
        return {**asdict(self), "complete": self.complete}


def run_pass(
    config: Config,
    root: Root,
    store: BodyStore,
    now: float | None = None,
    *,
    provider: ProviderState | None = None,
    changed_bodies: Collection[str] | None = None,
    rescan: bool = False,
) -> PassCounts:
    """Lands everything new under the Claude Code directory; the caller holds the root lock.

    A long-running caller keeps ``provider`` from pass to pass, and may say which body files
    changed since its last pass (``changed_bodies``, names in the bodies directory) so that
    the bodies directory is not listed; on a ``rescan`` it is still listed when its mtime
    moved. ``asz collect --once`` gives none of these.
    """
    started = time.monotonic()
    counts = PassCounts()
    sessions: set[str] = set()
    if config.adapters.claude_code_local.enabled:
        try:
            local = collect_transcripts(config, root)
        except WRITE_FAILED as err:
            local = LocalResult(errors=[_stopped("landing transcripts", err)])
        sessions |= local.sessions
        counts.landed += local.files_landed
        counts.records += local.files_landed
        counts.transcript_lines_landed = local.lines_landed
        counts.transcripts_unattributed = local.unattributed
        counts.sessions_excluded = local.excluded_sessions
        counts.source_bytes += local.source_bytes
        counts.landed_bytes += local.landed_bytes
        counts.conflict_sources += local.conflicts
        counts.errors += local.errors
        if local.pending:
            counts.errors.append(f"{local.pending} transcript(s) have more than one pass lands")
    if config.adapters.claude_code_provider.enabled:
        # Judged after the transcripts landed, so sessions they just named can be judged.
        judge = SessionJudge(config, root)
        try:
            bodies = collect_bodies(
                config,
                root,
                store,
                judge,
                now=now,
                state=provider,
                changed=changed_bodies,
                rescan=rescan,
            )
        except WRITE_FAILED as err:
            bodies = ProviderResult(errors=[_stopped("landing bodies", err)])
        sessions |= bodies.sessions
        counts.landed += bodies.bodies_landed
        counts.records += bodies.records
        counts.bodies_landed = bodies.bodies_landed
        counts.bodies_waiting = bodies.waiting
        counts.bodies_unreadable = bodies.unreadable
        counts.bodies_excluded = bodies.excluded
        counts.source_bytes += bodies.source_bytes
        counts.landed_bytes += bodies.landed_bytes
        counts.conflict_sources += bodies.conflicts
        counts.errors += bodies.errors
    counts.conflicts = len(counts.conflict_sources)
    counts.sessions = len(sessions)
    counts.seconds = round(time.monotonic() - started, 6)
    return counts


def _stopped(part: str, err: Exception) -> str:
    """A write to the root failed (a full or failing disk): what the part had not landed waits
    for the next pass, which finds it from the landed files, and this pass says so."""
    return f"{part} stopped part way: {err}"


def pass_line(counts: PassCounts) -> str:
    """The one human line a pass prints."""
    fields = [
        f"sessions={counts.sessions}",
        f"landed={counts.landed}",
        f"records={counts.records}",
        f"lines={counts.transcript_lines_landed}",
        f"bodies_landed={counts.bodies_landed}",
        f"bodies_waiting={counts.bodies_waiting}",
        f"bodies_unreadable={counts.bodies_unreadable}",
        f"bodies_excluded={counts.bodies_excluded}",
        f"conflicts={counts.conflicts}",
        f"errors={len(counts.errors)}",
    ]
    return f"pass: {' '.join(fields)} ({counts.seconds:.3f}s)"
