"""What was sent to an OTLP endpoint, per session: the export cursor.

``_state/otlp/<endpoint digest>/<session>.json`` lists the span ids of the session that the
endpoint took, and the session's landed mark (``Session.landed_mark``) once every span of it
was final and taken: while the mark holds, the session has nothing new and is not read again.
A cursor is derived state like the others under ``_state/``: written whole
(``replace_derived``, 0600, atomic) after each batch the endpoint took, so a crash or a stop
between a batch and its cursor sends that batch again, and nothing else. Span ids are digests
of the session and message ids, so a span sent again is the same span, which backends that
key spans by id (Phoenix) keep once. An endpoint has cursors of its own: pointing the
export at another one sends everything there.

One export per root runs at a time (:func:`export_lock`), the service's or a command's, so two
never send the same batch.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from contextlib import AbstractContextManager
from pathlib import Path

import orjson

from asz.store import EXPORT_CURSORS_DIR, EXPORT_LOCK_FILE, STATE_DIR, Store, state_lock

__all__ = ["CURSOR_DIR", "Cursors", "ExportBusy", "endpoint_key", "export_lock"]

CURSOR_DIR = f"{STATE_DIR}/{EXPORT_CURSORS_DIR}"
_SCHEMA = 1
_MAX_CURSOR = 1 << 28


class ExportBusy(Exception):
    """Another export from this root is running."""


def endpoint_key(endpoint: str) -> str:
    """The directory of an endpoint's cursors: a digest, so no URL (or a token in one) is a
    file name."""
    return hashlib.sha256(endpoint.encode()).hexdigest()[:16]


class Cursors:
    """The cursors of one endpoint in one root."""

    def __init__(self, store: Store, endpoint: str) -> None:
        self.store = store
        self.directory = f"{CURSOR_DIR}/{endpoint_key(endpoint)}"
        self._sent: dict[str, set[str]] = {}
        self._marks: dict[str, str | None] = {}

    def _path(self, session: str) -> str:
        return f"{self.directory}/{session}.json"

    def sent(self, session: str) -> set[str]:
        """The span ids (hex) of the session the endpoint took; empty when the cursor is
        missing or unreadable (then everything is sent again, once)."""
        if session not in self._sent:
            self._read(session)
        return self._sent[session]

    def done_at(self, session: str) -> str | None:
        """The landed mark at which every span of the session was final and taken."""
        if session not in self._marks:
            self._read(session)
        return self._marks[session]

    def _read(self, session: str) -> None:
        self._sent[session], self._marks[session] = set(), None
        try:
            value = orjson.loads(self.store.backend.read(self._path(session), _MAX_CURSOR))
        except (OSError, orjson.JSONDecodeError):
            return
        if not isinstance(value, dict) or value.get("schema") != _SCHEMA:
            return
        spans = value.get("sent")
        if isinstance(spans, list):
            self._sent[session] = {span for span in spans if isinstance(span, str)}
        mark = value.get("done_at")
        self._marks[session] = mark if isinstance(mark, str) else None

    def add(self, session: str, keys: Iterable[str], done_at: str | None = None) -> None:
        """Records spans the endpoint took (and, with ``done_at``, that the session was
        wholly sent at that landed mark), and writes the session's cursor."""
        sent = self.sent(session)
        sent.update(keys)
        self._marks[session] = done_at
        data = orjson.dumps(
            {"schema": _SCHEMA, "session": session, "done_at": done_at, "sent": sorted(sent)}
        )
        self.store.backend.replace_derived(self._path(session), data)


def export_lock(root: Path) -> AbstractContextManager[None]:
    """Holds the root's export lock; raises ExportBusy at once when another export holds it,
    and ``UnsafeRoot`` where ``_state`` would be reached through a link or another user's
    directory."""
    return state_lock(
        root, EXPORT_LOCK_FILE, lambda: ExportBusy(f"another export from {root} is running")
    )
