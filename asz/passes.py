"""One collection pass: transcripts first, then provider bodies, counted as one.

The transcript adapter runs first so that a response only a transcript names finds its
session in the same pass. ``asz collect --once`` is exactly one call of :func:`run_pass`, and
the long-running service runs the same function, so the two can never disagree.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Collection
from typing import TYPE_CHECKING

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.claude_code_provider import collect_bodies
from asz.adapters.provider_state import ProviderState
from asz.adapters.session_filter import SessionJudge
from asz.config import Config
from asz.progress import Progress
from asz.store import BodyLander, Root, landing_lock
from asz.tally import Tally
from asz.words import count, listing, size

if TYPE_CHECKING:
    from asz.view.keeper import ReportKeeper

__all__ = ["WRITE_FAILED", "pass_line", "run_pass"]

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
    progress: Progress | None = None,
    reports: ReportKeeper | None = None,
) -> Tally:
    """Lands everything new under the Claude Code directories; the caller holds the root lock.

    A long-running caller keeps ``provider`` from pass to pass, and may say which body files
    changed since its last pass (``changed_bodies``, file names in any bodies directory) so
    that the bodies directories are not listed; on a ``rescan`` they are still listed when an
    mtime moved. ``asz collect --once`` gives none of these. ``progress`` is told of the
    transcripts as they land (bodies are told to the lander's own). ``reports`` keeps the
    cache reports of the sessions that landed (``asz.view.keeper``). A pass holds the
    landing lock, so no generation is published under it (``asz.store._generation``).
    """
    with landing_lock(root.path):
        return _run_pass(
            config,
            root,
            lander,
            now,
            provider=provider,
            changed_bodies=changed_bodies,
            rescan=rescan,
            progress=progress,
            reports=reports,
        )


def _run_pass(
    config: Config,
    root: Root,
    lander: BodyLander,
    now: float | None,
    *,
    provider: ProviderState | None,
    changed_bodies: Collection[str] | None,
    rescan: bool,
    progress: Progress | None,
    reports: ReportKeeper | None,
) -> Tally:
    started = time.monotonic()
    counts = Tally()
    store = lander.store
    if config.adapters.claude_code_local.enabled:
        try:
            local = collect_transcripts(config, store, progress)
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
    if reports is not None:
        reports.landed(counts.sessions)
        try:
            reports.refresh(time.monotonic())
        except Exception as err:  # derived: what landed stays landed, the next pass retries
            # By its type alone: a report's exception may quote the body it was reading.
            said = type(err).__name__
            counts.errors.append(f"keeping cache reports stopped part way: {said}")
    counts.seconds = round(time.monotonic() - started, 6)
    return counts


def _stopped(part: str, err: Exception) -> str:
    """A write to the root failed (a full or failing disk): what the part had not landed waits
    for the next pass, which finds it from the landed files, and this pass says so."""
    return f"{part} stopped part way: {err}"


def pass_line(counts: Tally, held: str = "", *, timed: bool = True) -> str:
    """The one human line a pass says, in the words every command counts in: what landed (or
    that nothing new did, and then ``held``, what the root already holds), what is left
    waiting and why, and what went wrong; ``timed`` adds how long it took."""
    if counts.landed or counts.index_lines:
        said = _landed(counts)
    elif counts.conflicts or counts.errors:
        said = "nothing landed"
    else:
        said = f"nothing new: {held}" if held else "nothing new"
    left = [
        (counts.bodies_waiting, "body", _WAITING),
        (counts.bodies_settling, "body", " still being written"),
        (counts.bodies_unreadable, "unreadable body", ""),
        (counts.bodies_excluded, "body", _FILTERED),
        (counts.sessions_excluded, "session", _FILTERED),
        (counts.transcripts_unattributed, "transcript", " naming no session"),
        (counts.conflicts, "conflict", ""),
        (len(counts.errors), "error", ""),
    ]
    line = "; ".join([said, *(count(number, noun) + tail for number, noun, tail in left if number)])
    return f"{line} ({counts.seconds:.3f} s)" if timed else line


_FILTERED = " left out by the session filter"
_WAITING = " waiting for their session, as a few always are (see docs/operations.md#waiting-bodies)"
"""Said of waiting bodies, which every pass over a real capture has (a session's title and
compaction responses name no session): where it is said why, so that a person does not take
them for something lost."""


def _landed(counts: Tally) -> str:
    what = [
        count(number, noun)
        for number, noun in (
            (counts.bodies_landed, "body"),
            (counts.transcript_lines_landed, "transcript line"),
            (counts.index_lines, "index line"),
        )
        if number
    ]
    return (
        f"landed {listing(what)} of {count(len(counts.sessions), 'session')}: "
        f"{size(counts.source_bytes)} read, {size(counts.landed_bytes)} stored in "
        f"{count(counts.files, 'landed file')}"
    )
