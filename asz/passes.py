"""One collection pass: transcripts first, then provider bodies, counted as one.

The transcript adapter runs first so that a response only a transcript names finds its
session in the same pass. ``asz collect --once`` is exactly one call of :func:`run_pass`, and
the long-running service runs the same function, so the two can never disagree.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.claude_code_provider import ProviderState, collect_bodies
from asz.adapters.session_filter import SessionJudge
from asz.config import Config
from asz.store.bodies import BodyLander
from asz.store.root import Root
from asz.tally import Tally

WRITE_FAILED = (OSError, sqlite3.Error)
"""What a write to the root raises when the disk is full or failing (the provider ledger is an
SQLite database, which says so in its own words)."""


def run_pass(
    config: Config,
    root: Root,
    lander: BodyLander,
    now: float | None = None,
    *,
    provider: ProviderState | None = None,
    changed_bodies: Collection[str] | None = None,
    rescan: bool = False,
) -> Tally:
    """Lands everything new under the Claude Code directory; the caller holds the root lock.

    A long-running caller keeps ``provider`` from pass to pass, and may say which body files
    changed since its last pass (``changed_bodies``, names in the bodies directory) so that
    the bodies directory is not listed; on a ``rescan`` it is still listed when its mtime
    moved. ``asz collect --once`` gives none of these.
    """
    started = time.monotonic()
    counts = Tally()
    store = lander.store
    if config.adapters.claude_code_local.enabled:
        try:
            local = collect_transcripts(config, store)
        except WRITE_FAILED as err:
            local = Tally(errors=[_stopped("landing transcripts", err)])
        counts.add(local)
        if local.pending:
            counts.errors.append(f"{local.pending} transcript(s) have more than one pass lands")
    if config.adapters.claude_code_provider.enabled:
        # Judged after the transcripts landed, so sessions they just named can be judged.
        judge = SessionJudge(config, store)
        try:
            bodies = collect_bodies(
                config,
                root,
                lander,
                judge,
                now=now,
                state=provider,
                changed=changed_bodies,
                rescan=rescan,
            )
        except WRITE_FAILED as err:
            bodies = Tally(errors=[_stopped("landing bodies", err)])
        counts.add(bodies)
    counts.seconds = round(time.monotonic() - started, 6)
    return counts


def _stopped(part: str, err: Exception) -> str:
    """A write to the root failed (a full or failing disk): what the part had not landed waits
    for the next pass, which finds it from the landed files, and this pass says so."""
    return f"{part} stopped part way: {err}"


def pass_line(counts: Tally) -> str:
    """The one human line a pass prints."""
    fields = [
        f"sessions={len(counts.sessions)}",
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
