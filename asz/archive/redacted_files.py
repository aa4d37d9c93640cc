"""The counterpart directory of a redacted root (``asz.archive.redacted``): one policy's
private store of the root's files redacted, and how they are read back. What makes them
(``asz.archive.redacted_making``) and what mirrors or re-redacts generations
(``asz.archive.redacted_generations``) both stand on it, so that neither calls the other.
"""

from __future__ import annotations

from pathlib import Path

from asz.redact import Redactor
from asz.store import (
    MAX_CONTENT_BYTES,
    PACK_STREAMS,
    LandedFile,
    LandedName,
    LocalBackend,
    Store,
    redactions_path,
)

__all__ = ["KEEP_HEADER", "Counterpart"]

KEEP_HEADER = ("source", "stream", "shape", "src", "lost", PACK_STREAMS)
"""What a counterpart's header keeps of its file's (besides kind, session, sequence)."""


class Counterpart:
    """The directory ``path`` of one redactor's counterparts of the root ``store`` reads,
    read back (``RedactedRoot`` is the whole of it)."""

    def __init__(self, path: Path, store: Store, redactor: Redactor) -> None:
        self.store = store
        self.redactor = redactor
        self.fingerprint = redactor.policy.fingerprint
        self.path = path
        self.shadow = Store(LocalBackend(self.path))
        self._swept = False

    def holds(self, path: str) -> bool:
        """Whether the counterpart of ``path`` is made (its record is written before it)."""
        return self.shadow.backend.exists(path)

    def read(self, path: str) -> bytes:
        return self.shadow.backend.read(path, MAX_CONTENT_BYTES)

    def size(self, path: str) -> int:
        return self.shadow.size_of(path)

    def record(self, path: str) -> bytes:
        """The redaction record of the counterpart of ``path``."""
        return self.shadow.backend.read(redactions_path(path), MAX_CONTENT_BYTES)

    def _of(self, name: LandedName) -> LandedFile:
        return self.shadow.open_session(name.path.split("/", 1)[0]).read(name)
