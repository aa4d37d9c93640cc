"""What this root has pushed to its archive, remembered locally as derived state.

``_state/archive-pushed.jsonl`` is a journal, appended to and never rewritten::

    {"format": "asz.archive-pushed/1", "archive": "s3://bucket/prefix"}   first line
    {"try": ["<path>", ...]}      about to be sent: not known to be in the bucket yet
    {"done": "<path>", "n": N}    in the bucket with this root's bytes (N of them)
    {"claim": "<session>"}        the session's claim in the bucket is this root's

A path tried and not done (a push killed while sending it) is looked for before it is sent
again, so a body is never uploaded twice. The journal is derived: when it is missing, names
another archive, or does not read, it is rebuilt by listing the bucket (``asz.archive.push``),
and every object found there is compared with the local bytes before it counts as pushed. A
torn last line (a push killed while appending) is ignored.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

import orjson

from asz.store.layout import STATE_DIR

RECORD_FILE = "archive-pushed.jsonl"
FORMAT = "asz.archive-pushed/1"


class PushRecord:
    """The journal of one root for one archive, loaded whole and appended to."""

    def __init__(self, path: Path, archive: str) -> None:
        self.path = path
        self.archive = archive
        self.done: dict[str, int] = {}
        self.tried: set[str] = set()
        self.claimed: set[str] = set()
        self.rebuilt = False
        """True when the journal had to be started afresh (lost, or another archive's)."""

    @classmethod
    def for_root(cls, root: Path, archive: str) -> PushRecord:
        record = cls(root / STATE_DIR / RECORD_FILE, archive)
        record.rebuilt = not record._load()
        return record

    def _load(self) -> bool:
        try:
            lines = self.path.read_bytes().split(b"\n")
        except OSError:
            return False
        try:
            head = orjson.loads(lines[0])
        except orjson.JSONDecodeError:
            return False
        if head != {"format": FORMAT, "archive": self.archive}:
            return False
        for line in lines[1:]:
            try:
                entry = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue  # a torn last line, or an empty one
            if not isinstance(entry, dict):
                continue
            if isinstance(entry.get("done"), str) and isinstance(entry.get("n"), int):
                self.done[entry["done"]] = entry["n"]
            elif isinstance(entry.get("try"), list):
                self.tried.update(p for p in entry["try"] if isinstance(p, str))
            elif isinstance(entry.get("claim"), str):
                self.claimed.add(entry["claim"])
        self.tried -= self.done.keys()
        return True

    def start(self) -> None:
        """Begins a new journal (the old one named another archive, or was lost)."""
        self.done.clear()
        self.tried.clear()
        self.claimed.clear()
        self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
        with os.fdopen(fd, "wb") as handle:
            handle.write(orjson.dumps({"format": FORMAT, "archive": self.archive}) + b"\n")

    def _append(self, entries: Iterable[object]) -> None:
        data = b"".join(orjson.dumps(entry) + b"\n" for entry in entries)
        if not data:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW)
        with os.fdopen(fd, "ab") as handle:
            handle.write(data)

    def trying(self, paths: list[str]) -> None:
        """Says, before any is sent, which paths a push is about to send."""
        if paths:
            self._append([{"try": paths}])

    def pushed(self, path: str, size: int) -> None:
        self.done[path] = size
        self.tried.discard(path)
        self._append([{"done": path, "n": size}])

    def claim(self, session: str) -> None:
        self.claimed.add(session)
        self._append([{"claim": session}])
