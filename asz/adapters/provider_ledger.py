"""The ledger of seen provider-body source files: what each earlier pass already judged.

Without it every pass would read and digest every body Claude Code ever wrote. With it, a file
whose size and modification time are unchanged is answered from one ``lstat``: landed,
unreadable and conflicting files are not opened again, and waiting or excluded files are judged
again from the keys stored here, since what claims them (a later request, a landed transcript,
the session filter) can change while the file does not.

It is an SQLite database (the standard library's): a pass holds in memory only the size, time,
state and session of each file, reads the rest of an entry when it needs it, and writes only
the entries it changed, in one transaction, and only when it changed any.

The ledger is derived: when it is missing or does not read it is rebuilt from the manifests of
the landed bodies, with their modification times unknown, so the next pass reads and digests
those files once more and the store reports them as repeats instead of landing them twice.
A rebuilt ledger is written under a temporary name and renamed into place whole.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import sqlite3
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import structlog

from asz.atomic import FILE_MODE, TEMP_PREFIX, fsync_dir, private_dir
from asz.bodykeys import BodyKeys
from asz.store import PROVIDER_LEDGER_FILE, Root, Store

__all__ = [
    "CONFLICTING",
    "FORMAT",
    "UNKNOWN_MTIME",
    "Ledger",
    "LedgerEntry",
    "State",
    "ledger_path",
    "load_ledger",
    "log",
    "open_ledger",
    "rebuild_ledger",
]

FORMAT = "asz.provider-ledger/1"
UNKNOWN_MTIME = -1
"""The modification time of an entry rebuilt from a manifest: never equal to a real one."""

log = structlog.get_logger(__name__)


class State(StrEnum):
    LANDED = "landed"
    """The session holds the file's bytes."""
    WAITING = "waiting"
    """No session claims it yet, or its session cannot be judged yet."""
    EXCLUDED = "excluded"
    """Its session is one the filter leaves out."""
    UNREADABLE = "unreadable"
    """Not one JSON value, long after it was last written."""
    TOO_LARGE = "too_large"
    """Larger than a body may be; never read."""
    CHANGED = "changed"
    """Its bytes changed after it landed; ``sha256`` is still the digest that landed."""
    CONFLICT = "conflict"
    """Its session holds a body of the same id with other bytes."""


CONFLICTING = frozenset({State.CHANGED, State.CONFLICT})
_STATES = {state.value: state for state in State}
_NO_KEYS = BodyKeys()
_REQUEST = ".request.json"

_SCHEMA = (
    "CREATE TABLE ledger_format (format TEXT NOT NULL)",
    "CREATE TABLE entries ("
    " name TEXT PRIMARY KEY, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,"
    " sha256 TEXT NOT NULL, state TEXT NOT NULL, session TEXT NOT NULL,"
    " key_model TEXT, key_session TEXT, key_prompt TEXT, key_prev_request TEXT,"
    " key_message_id TEXT, key_request_id TEXT"
    ") WITHOUT ROWID",
    "CREATE TABLE facts_marks (session TEXT PRIMARY KEY, mark TEXT NOT NULL,"
    " taken_ns INTEGER NOT NULL) WITHOUT ROWID",
)
_SELECT = (
    "SELECT name, size, mtime_ns, sha256, state, session, key_model, key_session, key_prompt,"
    " key_prev_request, key_message_id, key_request_id FROM entries WHERE name = ?"
)
_SeenRow = tuple[str, int, int, str, str]
"""What the ledger keeps in memory of an entry: name, size, mtime_ns, state, session."""
_UPSERT = "INSERT OR REPLACE INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_REQUESTS = "SELECT key_session, key_prev_request, mtime_ns FROM entries WHERE name LIKE ?"


@dataclass(slots=True)
class LedgerEntry:
    """One source file as last judged; ``size``/``mtime_ns`` are the stat it was judged at."""

    name: str
    size: int
    mtime_ns: int
    sha256: str
    state: State
    session: str = ""
    keys: BodyKeys = _NO_KEYS

    @property
    def role(self) -> str:
        return "request" if self.name.endswith(_REQUEST) else "response"

    def same_stat(self, size: int, mtime_ns: int) -> bool:
        return self.size == size and self.mtime_ns == mtime_ns

    def as_row(self) -> tuple[object, ...]:
        return (
            self.name,
            self.size,
            self.mtime_ns,
            self.sha256,
            self.state.value,
            self.session,
            *self.keys.as_tuple(),
        )

    @classmethod
    def from_row(cls, row: tuple[object, ...]) -> LedgerEntry:
        """An entry from its stored row; ValueError when a field does not hold."""
        name, size, mtime_ns, sha256, state, session, *keys = row
        key_texts = [key for key in keys if key is None or isinstance(key, str)]
        if (
            type(name) is not str
            or type(size) is not int
            or type(mtime_ns) is not int
            or type(sha256) is not str
            or type(session) is not str
            or state not in _STATES
            or len(key_texts) != len(keys)
        ):
            raise ValueError(f"ledger row {name!r} has a field of the wrong type")
        return cls(name, size, mtime_ns, sha256, _STATES[state], session, BodyKeys(*key_texts))


class Ledger:
    """Entries by source file name, over one open database.

    What every pass compares (size, time, state, session) is read once when the ledger opens;
    an entry's digest and keys are read when asked for. Changes go straight into one open
    transaction, so a pass over any backlog holds no more than that per file in memory;
    ``save`` commits them, and closing without saving forgets them.
    """

    def __init__(self, db: sqlite3.Connection, readonly: bool = False) -> None:
        self._db = db
        self._readonly = readonly
        # States and sessions repeat across many entries: one string each, not one per row,
        # since a long-running collector holds these for as long as it runs.
        shared: dict[str, str] = {}
        share = shared.setdefault
        self._seen: dict[str, _SeenRow] = {
            name: (name, size, mtime_ns, share(state, state), share(session, session))
            for name, size, mtime_ns, state, session in db.execute(
                "SELECT name, size, mtime_ns, state, session FROM entries"
            )
        }
        self._marks: dict[str, tuple[str, int]] | None = None
        self.dirty = False
        self.rebuilt = False
        self.problems: list[str] = []

    def __len__(self) -> int:
        return len(self._seen)

    def __iter__(self) -> Iterator[LedgerEntry]:
        for name in sorted(self._seen):
            entry = self.get(name)
            if entry is not None:
                yield entry

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Closes the database; changes not saved are rolled back."""
        self._db.close()

    def names(self) -> set[str]:
        return set(self._seen)

    def landed_sessions(self) -> set[str]:
        """The sessions some landed entry says hold its bodies."""
        landed = State.LANDED.value
        return {row[4] for row in self._seen.values() if row[3] == landed}

    def judged_at(self, name: str, size: int, mtime_ns: int) -> tuple[str, str] | None:
        """``(state, session)`` of the entry if it was judged at exactly this size and time
        (an idle pass asks this of every file, so it is one dict lookup)."""
        row = self._seen.get(name)
        if row is None or row[1] != size or row[2] != mtime_ns:
            return None
        return row[3], row[4]

    def get(self, name: str) -> LedgerEntry | None:
        if name not in self._seen:
            return None
        row: tuple[object, ...] = self._db.execute(_SELECT, (name,)).fetchone()
        try:
            return LedgerEntry.from_row(row)
        except (TypeError, ValueError):
            # A row that does not hold is forgotten, so its file is read and judged again.
            self.drop(name)
            return None

    def put(self, entry: LedgerEntry) -> None:
        if self.get(entry.name) != entry:
            self._write(_UPSERT, entry.as_row())
            self._seen[entry.name] = (
                entry.name,
                entry.size,
                entry.mtime_ns,
                entry.state.value,
                entry.session,
            )

    def drop(self, name: str) -> None:
        if name in self._seen:
            del self._seen[name]
            self._write("DELETE FROM entries WHERE name = ?", (name,))

    def requests(self) -> Iterator[tuple[str | None, str | None, int]]:
        """``(session, prev_request, mtime_ns)`` of every request: the claim rules need what
        every request names, on every pass that claims anything."""
        for session, prev_request, mtime_ns in self._db.execute(_REQUESTS, ("%" + _REQUEST,)):
            if type(mtime_ns) is int:
                yield (
                    session if type(session) is str else None,
                    prev_request if type(prev_request) is str else None,
                    mtime_ns,
                )

    def facts_marks(self) -> dict[str, tuple[str, int]]:
        """Per session, the mark of its transcript facts when responses were last searched
        for in them, and when (ns): what lets an unclaimed response skip a search that would
        find what it found before."""
        if self._marks is None:
            self._marks = {
                session: (mark, taken_ns)
                for session, mark, taken_ns in self._db.execute(
                    "SELECT session, mark, taken_ns FROM facts_marks"
                )
            }
        return self._marks

    def set_facts_mark(self, session: str, mark: str, taken_ns: int) -> None:
        marks = self.facts_marks()
        if marks.get(session) != (mark, taken_ns):
            marks[session] = (mark, taken_ns)
            self._write(
                "INSERT OR REPLACE INTO facts_marks VALUES (?, ?, ?)", (session, mark, taken_ns)
            )

    def save(self) -> bool:
        """Commits what changed; says whether anything had."""
        if not self.dirty:
            return False
        self._db.commit()
        self.dirty = False
        return True

    def _write(self, statement: str, values: tuple[object, ...]) -> None:
        if not self._readonly:
            self._db.execute(statement, values)
            self.dirty = True


def ledger_path(root: Root) -> Path:
    return root.state_dir / PROVIDER_LEDGER_FILE


def open_ledger(path: Path, readonly: bool = False) -> Ledger:
    """The ledger at ``path``; raises sqlite3.Error or ValueError when it is not one this
    version wrote (or, read-only, when there is none).

    A long-running collector keeps it open across passes, each on whichever worker thread is
    free; passes never overlap, so the connection is not tied to the thread that opened it.
    """
    if readonly:
        db = sqlite3.connect(
            f"{path.absolute().as_uri()}?mode=ro", uri=True, check_same_thread=False
        )
    else:
        db = sqlite3.connect(path, check_same_thread=False)
    try:
        found = db.execute("SELECT format FROM ledger_format").fetchall()
        if found != [(FORMAT,)]:
            raise ValueError(f"not a ledger in the {FORMAT} format")
        db.execute("SELECT session, mark, taken_ns FROM facts_marks LIMIT 0")
        return Ledger(db, readonly)
    except BaseException:
        db.close()
        raise


def load_ledger(store: Store, root: Root) -> Ledger:
    """The ledger as last saved, or rebuilt from the landed manifests when it does not read."""
    path = ledger_path(root)
    if path.exists():
        try:
            return open_ledger(path)
        except (sqlite3.Error, ValueError) as err:
            # Derived data: rebuilding it loses nothing, so this is a notice, not a pass error.
            log.warning("provider ledger rebuilt", path=str(path), why=str(err))
    return rebuild_ledger(store, root)


def rebuild_ledger(store: Store, root: Root) -> Ledger:
    """A ledger of every landed body, from the manifests of every session's files, written
    whole under a temporary name and renamed into place.

    Modification times are unknown, so each entry is read and digested again by the next pass.
    A landed file that does not read is named in ``problems`` and the rest still count.
    """
    path = ledger_path(root)
    private_dir(path.parent)
    entries, problems = _landed_entries(store)
    temp = path.with_name(f"{TEMP_PREFIX}{secrets.token_hex(8)}-{PROVIDER_LEDGER_FILE}")
    try:
        _create(temp, entries)
        for leftover in ("-journal", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(f"{path}{leftover}")
        os.replace(temp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()
    fsync_dir(path.parent)
    ledger = open_ledger(path)
    ledger.rebuilt = True
    ledger.problems = problems
    return ledger


def _create(path: Path, entries: Iterable[LedgerEntry]) -> None:
    os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE))
    db = sqlite3.connect(path)
    try:
        with db:
            for statement in _SCHEMA:
                db.execute(statement)
            db.execute("INSERT INTO ledger_format VALUES (?)", (FORMAT,))
            db.executemany(_UPSERT, (entry.as_row() for entry in entries))
    finally:
        db.close()


def _landed_entries(store: Store) -> tuple[list[LedgerEntry], list[str]]:
    entries: dict[str, LedgerEntry] = {}
    problems: list[str] = []
    for session_id in store.sessions():
        session = store.open_session(session_id)
        for manifest in session.manifests().values():
            if os.path.basename(manifest.src) != manifest.src:
                problems.append(f"{manifest.file}: row {manifest.row}: no provider-body source")
                continue
            entries.setdefault(
                manifest.src,
                LedgerEntry(
                    manifest.src,
                    manifest.size,
                    UNKNOWN_MTIME,
                    manifest.sha256,
                    State.LANDED,
                    session_id,
                    manifest.keys,
                ),
            )
        problems += [f"damaged landed file skipped: {problem}" for problem in session.problems]
    return list(entries.values()), problems
