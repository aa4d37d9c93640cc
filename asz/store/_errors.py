"""What goes wrong when a root is read, said the same way by every reader."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = [
    "AmbiguousId",
    "BodyNotFound",
    "DamagedTranscript",
    "Problem",
    "StorageUnavailable",
    "StoreError",
    "TranscriptNotFound",
    "UnknownSession",
]


class StoreError(Exception):
    """What a reader of a root asked for is not there, or does not hold."""


class StorageUnavailable(OSError):
    """The storage a root lives on stopped answering (an archive's bucket, after every retry):
    a state of the world that a command says in one line and exits 1 on, not a bug."""


class UnknownSession(StoreError, LookupError):
    """The root holds no landed session under that id."""


class AmbiguousId(StoreError, LookupError):
    """A prefix that starts more than one id; ``candidates`` are all of them, sorted."""

    def __init__(self, message: str, candidates: list[str]) -> None:
        super().__init__(message)
        self.candidates = candidates


class BodyNotFound(StoreError, LookupError):
    """The session holds no body under that record id."""


class TranscriptNotFound(StoreError, LookupError):
    """The session holds no landed transcript of that path."""


class DamagedTranscript(StoreError):
    """What landed of a transcript does not give its bytes back whole (a gap, a damaged
    file, windows of another source); the problems say where."""


@dataclass(frozen=True, slots=True)
class Problem:
    """Something in a landed file that does not hold: which session, file and row, and why."""

    session: str
    file: str
    row: int | None
    why: str

    def as_dict(self) -> dict[str, Any]:
        return {"session": self.session, "file": self.file, "row": self.row, "why": self.why}

    def __str__(self) -> str:
        where = f"{self.file}: row {self.row}" if self.row is not None else self.file
        return f"{where}: {self.why}"
