"""What one push did and left (``PushTally``), and the lines a person reads of it.

``asz push`` prints them, the service logs them and counts them in its metrics, so the words
and the figures are made once, here, beside the push that fills the tally
(``asz.archive.push``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asz.words import count, size

__all__ = ["PushTally", "push_line", "stop_line"]


@dataclass(slots=True)
class PushTally:
    """What one push did and left; ``complete`` when nothing failed, conflicts or stopped."""

    archive: str
    sessions: int = 0
    """Sessions the filter admits (pushed now or before)."""
    files: int = 0
    """Objects created by this pass."""
    bytes: int = 0
    already_there: int = 0
    """Objects found in the bucket holding this root's bytes (a push that stopped, a lost
    record)."""
    conflicts: list[str] = field(default_factory=list)
    """Object keys holding other bytes than this root's file of that path."""
    held_elsewhere: list[str] = field(default_factory=list)
    """Sessions another root claimed first: none of their files are pushed from here."""
    sessions_excluded: int = 0
    sessions_waiting: int = 0
    left_out: list[str] = field(default_factory=list)
    """The sessions the filter leaves out (``sessions_excluded`` of them)."""
    not_judged: list[str] = field(default_factory=list)
    """The sessions waiting for the filter to judge them (``sessions_waiting`` of them)."""
    waiting_files: int = 0
    """Landed files of admitted sessions not in the bucket after the pass."""
    waiting_bytes: int = 0
    retries: int = 0
    rebuilt: bool = False
    """The record was (with ``dry_run``: would be) rebuilt by listing the bucket."""
    marker_lost: bool = False
    """The record's marker object is not in the bucket: emptied or replaced behind it."""
    would_push: list[tuple[str, int]] = field(default_factory=list)
    """With ``dry_run``: every path that would go, and its size."""
    errors: list[str] = field(default_factory=list)
    stopped: str = ""
    """Why the push ended before its end: a failure no retry mends, the breaker, or a stop
    asked for (``interrupted``); what it did not send waits for the next push."""
    interrupted: bool = False
    seconds: float = 0.0
    policy: str = ""
    """The fingerprint of the redaction policy files go under; empty: they go raw."""
    redactions: dict[str, int] = field(default_factory=dict)
    """Markers by rule in the files this push redacted (made now)."""
    redacted_by_session: dict[str, dict[str, int]] = field(default_factory=dict)
    """Markers by rule in the files of each session that go (with ``dry_run``: would go)."""
    redaction_failed: list[str] = field(default_factory=list)
    """``<path>: <why>`` of each file whose redaction failed: neither it nor the rest of its
    session goes."""
    other_policy: list[str] = field(default_factory=list)
    """Paths the archive counts that went redacted under another policy (or raw): their
    sessions get nothing more until re-redacted (``reredacted``)."""
    would_differ: list[str] = field(default_factory=list)
    """Of the paths under another policy, those whose records this policy makes differ (or
    that cannot be compared here)."""
    reredacted: list[str] = field(default_factory=list)
    """Sessions that go (with ``dry_run``: would go) re-redacted as a new generation."""
    replaced: list[str] = field(default_factory=list)
    """Object keys a generation this push completed made readers stop counting: left in the
    archive for ``asz push --prune`` once ``prune_after`` has passed."""

    @property
    def complete(self) -> bool:
        return not (
            self.conflicts
            or self.held_elsewhere
            or self.errors
            or self.stopped
            or self.redaction_failed
            or self.other_policy
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "archive": self.archive,
            "sessions": self.sessions,
            "files": self.files,
            "bytes": self.bytes,
            "already_there": self.already_there,
            "conflicts": self.conflicts,
            "held_elsewhere": self.held_elsewhere,
            "sessions_excluded": self.sessions_excluded,
            "sessions_waiting": self.sessions_waiting,
            "waiting_files": self.waiting_files,
            "waiting_bytes": self.waiting_bytes,
            "retries": self.retries,
            "rebuilt": self.rebuilt,
            "marker_lost": self.marker_lost,
            "errors": self.errors,
            "stopped": self.stopped,
            "interrupted": self.interrupted,
            "complete": self.complete,
            "seconds": self.seconds,
            "policy": self.policy,
            "redactions": self.redactions,
            "redacted_by_session": self.redacted_by_session,
            "redaction_failed": self.redaction_failed,
            "other_policy": self.other_policy,
            "would_differ": self.would_differ,
            "reredacted": self.reredacted,
            "replaced": self.replaced,
        }


def push_line(tally: PushTally) -> str:
    """The one human line a push says (the service logs it too)."""
    if tally.files:
        said = f"pushed {count(tally.files, 'landed file')} ({size(tally.bytes)})"
    elif tally.stopped:
        said = "pushed nothing"
    else:
        said = "nothing new to push"
    left = [
        count(number, noun) + tail
        for number, noun, tail in (
            (tally.already_there, "file", " already there"),
            (tally.sessions_excluded, "session", " left out by the session filter"),
            (tally.sessions_waiting, "session", " waiting for the filter to judge it"),
            (len(tally.held_elsewhere), "session", " held by another root"),
            (len(tally.conflicts), "conflict", ""),
            (len(tally.errors), "error", ""),
            (len(tally.redaction_failed), "file", " not redacted (its session waits)"),
            (len(tally.other_policy), "file", " in the archive under another redaction policy"),
            (len(tally.reredacted), "session", " re-redacted as a new generation"),
            (len(tally.replaced), "object", " replaced, left for --prune"),
            (tally.waiting_files, "file", " still to push"),
        )
        if number
    ]
    markers = sum(tally.redactions.values())
    if markers:
        left.append(f"{count(markers, 'value')} redacted")
    rebuilt = ""
    if tally.marker_lost:
        rebuilt = "; the archive no longer holds this root's marker: it was listed again"
    elif tally.rebuilt:
        rebuilt = "; no local record of what was pushed to this bucket: the archive was listed"
    return f"{'; '.join([f'{said} to {tally.archive}', *left])}{rebuilt} ({tally.seconds:.3f} s)"


def stop_line(tally: PushTally) -> str:
    """Why a push stopped, what it left, and that the next one resumes: one line."""
    return (
        f"push to {tally.archive} stopped: {tally.stopped}; "
        f"{count(tally.waiting_files, 'file')} still to push, the next push resumes"
    )
