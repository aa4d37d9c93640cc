"""What this root has pushed to its archive, remembered locally as derived state.

The record is two files under ``_state``: a snapshot, written whole, and a journal of what
happened since, appended to as a push goes::

    archive-pushed.json    the snapshot: a derived file (``asz.store.DerivedFile``) whose
                           mark is the bucket's marker, holding every entry below as state
    archive-pushed.jsonl   the journal:
    {"format": "asz.archive-pushed/3", "archive": "s3://bucket/prefix",
     "endpoint": "https://...", "marker": "_archive/roots/<32 hex>.json",
     "snapshot": true}            first line: the snapshot holds what came before
    {"try": ["<path>"]}           being sent: not known to be in the bucket yet
    {"done": "<path>", "n": N, "p": "<policy>"}
                                  in the bucket with this root's bytes (N of them), redacted
                                  under the policy of that fingerprint (no "p": raw)
    {"claim": "<session>"}        the session's claim in the bucket is this root's
    {"extent": "<path>"}          a session's extent object is in the bucket
    {"unextent": "<path>"}        ... and was taken back (its session met a conflict)

The journal alone would grow by two lines for every object ever pushed and be read whole by
every push; so a push that ends with a journal larger than the snapshot folds the journal
into a new snapshot (:meth:`PushRecord.compact`): what the journal holds is then written about
once more in all, however long the root pushes. The snapshot is replaced first and the
journal cut back to its first line after it, so a crash between the two leaves a journal whose
entries, read again over the new snapshot, change nothing.

The record belongs to one bucket, not to its name: it names the endpoint as well as the
bucket and prefix (the same name at another endpoint is another bucket), and a marker object
the push created in the bucket when the record began. Every push looks for the marker first
(one ``HEAD``): a bucket emptied, replaced or restored from elsewhere behind the record's back
has lost it, and the record is then rebuilt rather than trusted.

A path is written as tried just before its bytes are sent, so a push that was killed looks
only for the few that were in flight before sending them again, and a body is never uploaded
twice. The record is derived: when the journal is missing, names another archive, or does not
read, or the snapshot it rests on is missing, not whole or of another marker, it is rebuilt by
listing the bucket (``asz.archive.push``), and every object found there is compared with the
local bytes before it counts as pushed. A torn last line (a push killed while appending) is
ignored. A journal of ``asz.archive-pushed/2`` (no snapshot) reads as before.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from asz.atomic import replace_derived
from asz.crashpoints import crash_point
from asz.store import (
    PUSH_RECORD_FILE,
    PUSH_SNAPSHOT_FILE,
    STATE_DIR,
    Backend,
    DerivedFile,
    Kept,
    LocalBackend,
)

__all__ = ["FORMAT", "MARKERS_DIR", "MARKER_FORMAT", "PushRecord", "new_marker"]

FORMAT = "asz.archive-pushed/3"
_FORMATS = (FORMAT, "asz.archive-pushed/2")
SNAPSHOT = DerivedFile(lambda _owner: f"{STATE_DIR}/{PUSH_SNAPSHOT_FILE}", schema=1, limit=1 << 31)
"""The record's snapshot: its mark is the marker of the bucket it was made for."""
MARKERS_DIR = "_archive/roots"
MARKER_FORMAT = "asz.archive-root/1"


def new_marker() -> tuple[str, bytes]:
    """A marker's path and bytes: a random name, so that no two records share one (it says
    nothing of the machine or the user)."""
    name = secrets.token_hex(16)
    data = orjson.dumps({"format": MARKER_FORMAT, "id": name}) + b"\n"
    return f"{MARKERS_DIR}/{name}.json", data


@dataclass(slots=True)
class _Owner:
    """Whom the snapshot belongs to, in the shape a derived file asks of its owner: one
    archive (its endpoint and URL), in this root."""

    id: str
    backend: Backend
    trusts_derived: bool = True
    made: dict[str, Kept] = field(default_factory=dict)


class PushRecord:
    """The record of one root for one bucket, loaded whole and appended to."""

    def __init__(self, path: Path, archive: str, endpoint: str) -> None:
        self.path = path
        self.archive = archive
        self.endpoint = endpoint
        self.marker = ""
        self.done: dict[str, int] = {}
        self.policy: dict[str, str] = {}
        """The fingerprint of the redaction policy each done path went under ("": raw)."""
        self.tried: set[str] = set()
        self._tried_as_read: set[str] = set()
        """Every path tried and not done as the files say, extents included."""
        self.claimed: set[str] = set()
        self.extents: set[str] = set()
        """The sessions' extent objects (``asz.store.extent_path``) in the bucket."""
        self.rebuilt = False
        """True when the record must be started afresh (lost, or another bucket's)."""
        self._owner = _Owner(f"{endpoint} {archive}", LocalBackend(path.parent.parent))
        self._lock = threading.Lock()

    @classmethod
    def for_root(cls, root: Path, archive: str, endpoint: str) -> PushRecord:
        record = cls(root / STATE_DIR / PUSH_RECORD_FILE, archive, endpoint)
        record.rebuilt = not record._load()
        return record

    def _head(self, *, snapshot: bool) -> dict[str, object]:
        return {
            "format": FORMAT,
            "archive": self.archive,
            "endpoint": self.endpoint,
            "marker": self.marker,
            "snapshot": snapshot,
        }

    def _load(self) -> bool:
        try:
            lines = self.path.read_bytes().split(b"\n")
        except OSError:
            return False
        try:
            head = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            return False
        if not isinstance(head, dict) or not isinstance(head.get("marker"), str):
            return False
        self.marker = head["marker"]
        ours = (head.get("archive"), head.get("endpoint")) == (self.archive, self.endpoint)
        if not ours or head.get("format") not in _FORMATS:
            return False
        if not self.marker.startswith(MARKERS_DIR + "/"):
            return False
        if head.get("snapshot") is True and not self._load_snapshot():
            return False
        for line in lines[1:]:
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line, or an empty one
            if isinstance(entry, dict):
                self._replay(entry)
        self.tried -= self.done.keys()
        # What a fold keeps: an extent taken back is tried again once it is no longer known.
        self._tried_as_read = set(self.tried)
        self.tried -= self.extents
        return True

    def _load_snapshot(self) -> bool:
        """Takes in the snapshot the journal rests on; False when it does not hold."""
        kept = SNAPSHOT.read(self._owner)
        if kept is None or kept.mark != self.marker or not isinstance(kept.value, dict):
            return False
        value = kept.value
        try:
            self.done = {str(path): int(size) for path, size in value["done"].items()}
            self.policy = {path: "" for path in self.done}
            self.policy.update({str(path): str(fp) for path, fp in value["policy"].items()})
            self.tried = {str(path) for path in value["tried"]}
            self.claimed = {str(session) for session in value["claimed"]}
            self.extents = {str(path) for path in value["extents"]}
        except (AttributeError, KeyError, TypeError, ValueError):
            return False
        return True

    def _replay(self, entry: dict[str, Any]) -> None:
        if isinstance(entry.get("done"), str) and isinstance(entry.get("n"), int):
            self.done[entry["done"]] = entry["n"]
            policy = entry.get("p")
            self.policy[entry["done"]] = policy if isinstance(policy, str) else ""
        elif isinstance(entry.get("try"), list):
            self.tried.update(p for p in entry["try"] if isinstance(p, str))
        elif isinstance(entry.get("claim"), str):
            self.claimed.add(entry["claim"])
        elif isinstance(entry.get("extent"), str):
            self.extents.add(entry["extent"])
        elif isinstance(entry.get("unextent"), str):
            self.extents.discard(entry["unextent"])
        elif isinstance(entry.get("gone"), list):
            self._forget(p for p in entry["gone"] if isinstance(p, str))

    def _forget(self, paths: Iterable[str]) -> None:
        for path in paths:
            self.done.pop(path, None)
            self.policy.pop(path, None)
            self.tried.discard(path)
            self.extents.discard(path)

    def start(self, marker: str) -> None:
        """Begins a new record tied to ``marker`` (the old one named another bucket, was
        lost, or its marker is gone from the bucket)."""
        self.done.clear()
        self.policy.clear()
        self.tried.clear()
        self.claimed.clear()
        self.extents.clear()
        self.marker = marker
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps(self._head(snapshot=False)) + b"\n")

    def compact(self) -> bool:
        """Folds the journal into a new snapshot when it has grown larger than the snapshot;
        whether it did. Called when a push or a prune ends (it holds the push lock): what the
        record says is read back from the files, so the snapshot holds exactly what a later
        push would read. A record that cannot be folded now (a full or read-only disk) is
        whole as it is, and the next push tries again."""
        try:
            return self._compact()
        except OSError:
            return False

    def _compact(self) -> bool:
        snapshot = self.path.with_name(PUSH_SNAPSHOT_FILE)
        try:
            journal = self.path.stat().st_size
        except OSError:
            return False
        try:
            kept = snapshot.stat().st_size
        except OSError:
            kept = 0
        head = len(orjson.dumps(self._head(snapshot=False))) + 1  # the longer first line
        if journal <= max(kept, head):
            return False
        read = PushRecord(self.path, self.archive, self.endpoint)
        if not read._load():
            return False
        value = {
            "done": read.done,
            "policy": {path: fp for path, fp in read.policy.items() if fp},
            "tried": sorted(read._tried_as_read),
            "claimed": sorted(read.claimed),
            "extents": sorted(read.extents),
        }
        SNAPSHOT.write(self._owner, read.marker, value)
        crash_point("push.compacted")
        replace_derived(self.path, orjson.dumps(read._head(snapshot=True)) + b"\n")
        return True

    def _append(self, entry: object) -> None:
        data = orjson.dumps(entry) + b"\n"
        with self._lock:  # workers say what they send, the push what went
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
            with os.fdopen(fd, "ab") as handle:
                handle.write(data)

    def sending(self, path: str) -> None:
        """Says, just before its bytes go, that ``path`` may be in the bucket from now on."""
        self._append({"try": [path]})

    def pushed(self, path: str, size: int, policy: str = "") -> None:
        """``path`` is in the bucket, ``size`` bytes redacted under ``policy`` ("": raw)."""
        self.done[path] = size
        self.policy[path] = policy
        self.tried.discard(path)
        self._append({"done": path, "n": size, **({"p": policy} if policy else {})})

    def claim(self, session: str) -> None:
        self.claimed.add(session)
        self._append({"claim": session})

    def extended(self, path: str) -> None:
        """The extent object at ``path`` is in the bucket: no later push sends it again."""
        self.extents.add(path)
        self.tried.discard(path)
        self._append({"extent": path})

    def unextended(self, path: str) -> None:
        """The extent object at ``path`` was removed from the bucket again."""
        self.extents.discard(path)
        self._append({"unextent": path})

    def forget(self, paths: list[str]) -> None:
        """``paths`` were removed from the bucket (``asz push --prune``): the record holds
        what is there, not every object a session ever had. A path the local root lists
        again would be sent again, but a prune removes only what a generation replaced,
        which the root no longer lists."""
        if paths:
            self._forget(paths)
            self._append({"gone": paths})
