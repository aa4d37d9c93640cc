"""The cause of a break, from the cache report the service keeps for the session.

Usage says a call broke the cache and by how much; only the request bodies say why, and
comparing them is the cache report's work (``docs/view.md``). The status line never builds
that report: it reads the one the collector keeps (:func:`asz.view.kept.kept_report`), read
only, through :func:`asz.store.open_store`, and takes the row of the break's call. When no
report is kept, or the kept one has no cause for that call yet (its request has not landed),
the line shows the break without a cause, and asks again no sooner than
:data:`RETRY_SECONDS` later and at most :data:`MAX_TRIES` times: loading the store is most
of a slow run's cost, so a session whose bodies never land does not pay it on every message.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["MAX_REPORT", "MAX_TRIES", "RETRY_SECONDS", "kept_cause", "should_ask"]

RETRY_SECONDS = 30.0
MAX_TRIES = 20
MAX_REPORT = 64 << 20
"""A kept report larger than this (a session of tens of thousands of calls) is not read: it
would cost more than a status line may."""


def should_ask(asked: dict[str, Any] | None, message_id: str, now: float) -> bool:
    """Whether to look the break of ``message_id`` up, given the last look-up (``asked``:
    ``message_id``, ``tries``, ``at``)."""
    if asked is None or asked.get("message_id") != message_id:
        return True
    tries, at = asked.get("tries"), asked.get("at")
    if not isinstance(tries, int) or not isinstance(at, int | float):
        return True
    return tries < MAX_TRIES and now - at >= RETRY_SECONDS


def kept_cause(root: Path, session: str, message_id: str) -> dict[str, Any] | None:
    """``cause`` and ``detail`` the kept report gives the call ``message_id``, or None when
    there is no root, no such session, no report kept, or no cause for the call in it."""
    if not root.is_dir():
        return None
    from asz.store import NotASession, StoreError, open_store, report_path
    from asz.view.kept import kept_report

    try:
        store = open_store(root)
        landed = store.session(session)
        if store.backend.size(report_path(landed.id)) > MAX_REPORT:
            return None
        report = kept_report(landed)
    except (StoreError, NotASession, OSError):
        return None
    for row in report["rows"] if report else []:
        if isinstance(row, dict) and row.get("message_id") == message_id and row.get("cause"):
            detail = row.get("detail")
            return {
                "cause": str(row["cause"]),
                "detail": detail if isinstance(detail, str) else None,
            }
    return None
