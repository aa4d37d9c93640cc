"""The ledger of seen provider-body source files: what each earlier pass already judged.

Without it every pass would read and digest every body Claude Code ever wrote. With it, a file
whose size and modification time are unchanged is answered from one ``lstat``: landed,
unreadable and conflicting files are not opened again, and waiting or excluded files are judged
again from the keys stored here, since what claims them (a later request, a landed transcript,
the session filter) can change while the file does not.

The ledger is derived: when it is missing or does not read it is rebuilt from the manifests of
the landed bodies, with their modification times unknown, so the next pass reads and digests
those files once more and the store reports them as repeats instead of landing them twice.
It is written atomically, and only when a pass changed it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson
import structlog

from asz.bodykeys import BodyKeys
from asz.store.atomic import replace_file
from asz.store.framing import LandedFileError, read_file
from asz.store.root import Root

LEDGER_NAME = "provider-ledger.json"
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

    def as_row(self) -> list:
        return [
            self.name,
            self.size,
            self.mtime_ns,
            self.sha256,
            self.state.value,
            self.session,
            self.keys.as_dict(),
        ]

    @classmethod
    def from_row(cls, row: list) -> LedgerEntry:
        """An entry from its saved row; ValueError when a field has the wrong type.

        Kept to exact type tests and dict lookups: an idle pass reads every row."""
        name, size, mtime_ns, sha256, state, session, keys = row
        if (
            type(name) is not str
            or type(size) is not int
            or type(mtime_ns) is not int
            or type(sha256) is not str
            or type(session) is not str
            or type(keys) is not dict
            or state not in _STATES
            or any(type(value) is not str for value in keys.values())
        ):
            raise ValueError(f"ledger row {name!r} has a field of the wrong type")
        return cls(
            name,
            size,
            mtime_ns,
            sha256,
            _STATES[state],
            session,
            BodyKeys(**keys) if keys else _NO_KEYS,
        )


class Ledger:
    """Entries by source file name; remembers whether anything changed since it was read.

    Saved rows are turned into entries only when a file needs more than its stat compared
    (``judged_at``), since an idle pass looks at every row and changes none; a row that does not
    hold is forgotten, so its file is read again.
    """

    def __init__(self, rows: dict[str, list] | None = None) -> None:
        self._rows = rows if rows is not None else {}
        self._entries: dict[str, LedgerEntry] = {}
        self.dirty = False
        self.rebuilt = False
        self.problems: list[str] = []

    def __len__(self) -> int:
        return len(self._rows) + len(self._entries)

    def __iter__(self) -> Iterator[LedgerEntry]:
        for name in list(self._rows):
            self.get(name)
        return iter(list(self._entries.values()))

    def names(self) -> set[str]:
        return self._rows.keys() | self._entries.keys()

    def judged_at(self, name: str, size: int, mtime_ns: int) -> tuple[str, str] | None:
        """``(state, session)`` of the entry if it was judged at exactly this size and time,
        without making it an entry (an idle pass asks this of every file)."""
        row = self._rows.get(name)
        if row is not None:
            return (row[4], row[5]) if row[1] == size and row[2] == mtime_ns else None
        entry = self._entries.get(name)
        if entry is not None and entry.size == size and entry.mtime_ns == mtime_ns:
            return entry.state.value, entry.session
        return None

    def get(self, name: str) -> LedgerEntry | None:
        entry = self._entries.get(name)
        if entry is not None:
            return entry
        row = self._rows.pop(name, None)
        if row is None:
            return None
        try:
            entry = LedgerEntry.from_row(row)
        except (TypeError, ValueError):
            self.dirty = True
            return None
        self._entries[name] = entry
        return entry

    def put(self, entry: LedgerEntry) -> None:
        if self.get(entry.name) != entry:
            self._entries[entry.name] = entry
            self.dirty = True

    def drop(self, name: str) -> None:
        if self._entries.pop(name, None) is not None or self._rows.pop(name, None) is not None:
            self.dirty = True

    def requests(self) -> Iterator[tuple[str, str | None, str | None, int]]:
        """``(name, session, prev_request, mtime_ns)`` of every request, read from the rows
        directly: the claim rules need what every request names, on every pass."""
        for entry in self._entries.values():
            if entry.role == "request":
                keys = entry.keys
                yield entry.name, keys.session, keys.prev_request, entry.mtime_ns
        for name, row in self._rows.items():
            keys = row[6]
            if name.endswith(_REQUEST) and type(keys) is dict and type(row[2]) is int:
                session, prev_request = keys.get("session"), keys.get("prev_request")
                yield (
                    name,
                    session if type(session) is str else None,
                    prev_request if type(prev_request) is str else None,
                    row[2],
                )

    def encode(self) -> bytes:
        rows = dict(self._rows)
        rows.update((name, entry.as_row()) for name, entry in self._entries.items())
        return orjson.dumps({"format": FORMAT, "entries": [rows[name] for name in sorted(rows)]})

    def save(self, root: Root) -> bool:
        """Writes the ledger if it changed; says whether it wrote."""
        if not self.dirty:
            return False
        replace_file(ledger_path(root), self.encode())
        self.dirty = False
        return True


_REQUEST = ".request.json"


def ledger_path(root: Root) -> Path:
    return root.state_dir / LEDGER_NAME


def decode_ledger(data: bytes) -> Ledger:
    """Parses a ledger; raises ValueError when it is not one this version wrote.

    Each row's fields are checked when the row is first needed (see ``Ledger``)."""
    try:
        document = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise ValueError(f"the ledger is not JSON: {err}") from None
    if not isinstance(document, dict) or document.get("format") != FORMAT:
        raise ValueError("the ledger is not in this version's format")
    rows = document.get("entries")
    if not isinstance(rows, list):
        raise ValueError("the ledger has no entries")
    by_name: dict[str, list] = {}
    for row in rows:
        if type(row) is not list or len(row) != 7 or type(row[0]) is not str:
            raise ValueError("the ledger holds a malformed row")
        by_name[row[0]] = row
    return Ledger(by_name)


def load_ledger(root: Root) -> Ledger:
    """The ledger as last saved, or rebuilt from the landed manifests when it does not read."""
    try:
        data = ledger_path(root).read_bytes()
    except FileNotFoundError:
        return rebuild_ledger(root)
    try:
        return decode_ledger(data)
    except ValueError as err:
        # Derived data: rebuilding it loses nothing, so this is a notice, not a pass error.
        log.warning("provider ledger rebuilt", path=str(ledger_path(root)), why=str(err))
        return rebuild_ledger(root)


def rebuild_ledger(root: Root) -> Ledger:
    """A ledger of every landed body, read from the manifests of every session's files.

    Modification times are unknown, so each entry is read and digested again by the next pass.
    A landed file that does not read is named in ``problems`` and the rest still count.
    """
    ledger = Ledger()
    for session in root.sessions():
        for landed in root.landed(root.bodies_dir(session)):
            try:
                landed_file = read_file(landed.path)
            except LandedFileError as err:
                ledger.problems.append(f"damaged landed file skipped: {err}")
                continue
            for record in landed_file.records:
                entry = _entry_from_manifest(record.meta, session)
                if entry is None:
                    ledger.problems.append(
                        f"{landed.path}: row {record.row}: no provider-body manifest"
                    )
                elif ledger.get(entry.name) is None:
                    ledger.put(entry)
    ledger.dirty = True
    ledger.rebuilt = True
    return ledger


def _entry_from_manifest(meta: dict, session: str) -> LedgerEntry | None:
    src, size, sha256, keys = (
        meta.get("src"),
        meta.get("size"),
        meta.get("sha256"),
        meta.get("keys"),
    )
    if not (isinstance(src, str) and isinstance(size, int) and isinstance(sha256, str)):
        return None
    if os.path.basename(src) != src:
        return None
    if not isinstance(keys, dict):
        keys = {}
    clean = {
        name: value for name, value in keys.items() if name in _KEY_NAMES and isinstance(value, str)
    }
    return LedgerEntry(src, size, UNKNOWN_MTIME, sha256, State.LANDED, session, BodyKeys(**clean))


_KEY_NAMES = frozenset(BodyKeys.__dataclass_fields__)
