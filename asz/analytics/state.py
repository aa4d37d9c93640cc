"""What a root wrote to one analytics target: ``_state/analytics/<target digest>.json``.

It holds the root's id (the ``<machine>`` of its file names), the number of the next pass, the
pass under way (``open``) and, per session, the keys of the rows written and the count of
landed files at which every row of the session was written (``files``; then the session is
not read again until more lands). A pass marks itself open before it writes any file and
closes with the sessions it wrote, in one durable replace; so after a crash the files of the
open pass (which no record counts) are removed before anything is written again, and a row is
written once. Lost or unreadable, the record is rebuilt from the root's own files in the
target (their keys and sessions rows), so nothing is written twice then either.

``_state/root-id`` is the root's id: 16 random hex digits made once, naming nothing of the
machine or its user. A copy of the root (moved to another machine) keeps it, as it keeps the
sessions whose rows it wrote.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import secrets
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from asz.atomic import AlreadyExists, publish_new, replace_durable
from asz.store import ANALYTICS_DIR, ROOT_ID_FILE, STATE_DIR

__all__ = ["FactsState", "Written", "root_id", "state_path"]

_SCHEMA = 1
_ID = re.compile(r"^[0-9a-f]{16}$")
_MAX_STATE = 1 << 30


def root_id(root: Path) -> str:
    """The root's id, made (once, never replaced) when it has none; ValueError when the file
    holds something else."""
    path = root / STATE_DIR / ROOT_ID_FILE
    with contextlib.suppress(AlreadyExists):
        publish_new(path, secrets.token_hex(8).encode() + b"\n")
    text = path.read_text("ascii", errors="replace").strip()
    if not _ID.match(text):
        raise ValueError(f"{path}: not a root id (16 hex digits)")
    return text


def state_path(root: Path, target: str) -> Path:
    digest = hashlib.sha256(target.encode()).hexdigest()[:16]
    return root / STATE_DIR / ANALYTICS_DIR / f"{digest}.json"


@dataclass(slots=True)
class Written:
    """What of one session is in the target."""

    keys: set[str] = field(default_factory=set)
    files: int | None = None
    """The landed files counted when every row of the session was written; None while some
    wait."""


@dataclass(slots=True)
class FactsState:
    path: Path
    target: str
    machine: str
    next: int = 1
    open: int | None = None
    sessions: dict[str, Written] = field(default_factory=dict)
    found: bool = False
    """Whether the record was read (else it is rebuilt from the target)."""

    @classmethod
    def load(cls, root: Path, target: str, machine: str) -> FactsState:
        state = cls(state_path(root, target), target, machine)
        try:
            value = orjson.loads(_read(state.path))
        except (OSError, orjson.JSONDecodeError):
            return state
        if (
            not isinstance(value, dict)
            or value.get("schema") != _SCHEMA
            or value.get("machine") != machine
            or value.get("target") != target
        ):
            return state
        try:
            state.next = int(value["next"])
            state.open = None if value["open"] is None else int(value["open"])
            for session, entry in dict(value["sessions"]).items():
                files = entry.get("files")
                state.sessions[str(session)] = Written(
                    {str(key) for key in entry["keys"]},
                    None if files is None else int(files),
                )
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls(state.path, target, machine)
        state.found = True
        return state

    def save(self) -> None:
        sessions = {
            session: {"files": written.files, "keys": sorted(written.keys)}
            for session, written in sorted(self.sessions.items())
        }
        data = orjson.dumps(
            {
                "schema": _SCHEMA,
                "target": self.target,
                "machine": self.machine,
                "next": self.next,
                "open": self.open,
                "sessions": sessions,
            }
        )
        replace_durable(self.path, data)
        self.found = True


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(_MAX_STATE)
