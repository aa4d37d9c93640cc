"""What a root wrote to one analytics target: ``_state/analytics/<target digest>.json`` and,
beside it, the keys of each session's written rows in ``<target digest>/<session>-<pass>.json``.

The record holds the root's id (the ``<machine>`` of its file names), the number of the next
pass, the pass under way (``open``) and, per session, the count of landed files at which every
row of the session was written (``files``; then the session is not read again until more
lands) and the pass whose key file holds the keys of its rows (``keys``). A pass marks itself
open before it writes any file; it writes the key files of the sessions it wrote under its own
number, then closes in one durable replace of the record, which is what makes them count. So
after a crash the files of the open pass, tables and keys (which no record counts), are
removed before anything is written again, and a row is written once.

The record stays the size of the session list and a pass reads and writes the keys of the
sessions it reads only: a root's history (about 100,000 calls a developer a year) costs no
pass anything. The key files are not synced to disk: one that does not read (a power cut) is
rebuilt from the root's own files in the target, as the whole record is when it is lost.

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

from asz.atomic import AlreadyExists, private_dir, publish_new, replace_derived, replace_durable
from asz.store import ANALYTICS_DIR, ROOT_ID_FILE, STATE_DIR

__all__ = ["FactsState", "Written", "root_id", "state_path"]

_SCHEMA = 2
_ID = re.compile(r"^[0-9a-f]{16}$")
_SESSION = r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
_KEYS_FILE = re.compile(rf"^(?P<session>{_SESSION})-(?P<pass>[0-9]{{8,}})\.json$")
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

    files: int | None = None
    """The landed files counted when every row of the session was written; None while some
    wait."""
    keys_pass: int | None = None
    """The pass whose key file holds the keys of the session's rows; None when none is."""
    keys: set[str] | None = None
    """The keys of the rows written, once read (or rebuilt); None while unread."""


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

    @property
    def keys_dir(self) -> Path:
        return self.path.with_suffix("")

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
                files, keys_pass = entry["files"], entry["keys"]
                state.sessions[str(session)] = Written(
                    None if files is None else int(files),
                    None if keys_pass is None else int(keys_pass),
                )
        except (KeyError, TypeError, ValueError, AttributeError):
            return cls(state.path, target, machine)
        state.found = True
        return state

    def keys_of(self, session: str) -> set[str] | None:
        """The keys of ``session``'s written rows: none when nothing of it was written; None
        when its key file does not read (then the caller rebuilds them from the target)."""
        written = self.sessions.get(session)
        if written is None:
            return set()
        if written.keys is not None:
            return written.keys
        if written.keys_pass is None:
            return set()
        try:
            value = orjson.loads(_read(self._keys_path(session, written.keys_pass)))
            if value["session"] != session or value["pass"] != written.keys_pass:
                return None
            written.keys = {str(key) for key in value["keys"]}
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return written.keys

    def write_keys(self, number: int, written: dict[str, Written]) -> None:
        """Writes the key files of the sessions pass ``number`` wrote, under its number, and
        points the sessions at them (counted once the record is saved)."""
        private_dir(self.keys_dir)
        for session, entry in sorted(written.items()):
            if not entry.keys or not re.fullmatch(_SESSION, session):
                continue  # only a session id of the UUID form names a file
            data = orjson.dumps({"session": session, "pass": number, "keys": sorted(entry.keys)})
            replace_derived(self._keys_path(session, number), data)
            entry.keys_pass = number

    def sweep_keys(self) -> None:
        """Removes the key files no session of the record points at: those of a pass that
        never closed, and those a later pass superseded."""
        try:
            names = os.listdir(self.keys_dir)
        except OSError:
            return
        for name in names:
            found = _KEYS_FILE.match(name)
            if found is None:
                continue
            written = self.sessions.get(found["session"])
            if written is None or written.keys_pass != int(found["pass"]):
                with contextlib.suppress(OSError):
                    (self.keys_dir / name).unlink()

    def save(self) -> None:
        sessions = {
            session: {"files": written.files, "keys": written.keys_pass}
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

    def _keys_path(self, session: str, number: int) -> Path:
        """Only a session id of the UUID form names a file."""
        name = f"{session}-{number:08d}.json"
        if not _KEYS_FILE.match(name):
            raise ValueError(f"not a session id: {session!r}")
        return self.keys_dir / name


def _read(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd, "rb") as handle:
        return handle.read(_MAX_STATE)
