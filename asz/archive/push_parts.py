"""What the parts of a push (``asz.archive.push``) share: the root and archive it goes
between, the work it lists (``Todo``), and how it reads what goes and says what failed.

A push is one ``Pusher`` made of parts of one job each, every one a base of it: what goes
before a session's files (``asz.archive.push_claims``), the files themselves
(``asz.archive.push_files``), and what goes of a redacted root (``asz.archive.push_reredact``).
Each reads the push's state from here, so that none of them calls another.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from asz.archive.bucket import Bucket
from asz.archive.failure import understand
from asz.archive.push_tally import PushTally
from asz.archive.redacted import RedactedRoot
from asz.archive.retry import Halted
from asz.locations import ArchiveUrl
from asz.store import LandedName, Store

__all__ = ["GRACE", "Progress", "PushParts", "Todo"]

GRACE = 1.0
"""Seconds a stopped push waits for the uploads in flight before it abandons them."""


@dataclass(frozen=True, slots=True)
class Todo:
    session: str
    names: list[LandedName]
    """Landed files of the session not yet in the record, in sequence order."""
    first: LandedName
    """The session's first landed file, which its claim names."""
    before: dict[str, LandedName]
    """The landed file before each one in the session's sequence (none for the first)."""


class Progress(Protocol):
    """Told how a push goes while it goes (the service's metrics move with it)."""

    def waiting(self, files: int, size: int) -> None:
        """What is to go, as the push begins."""

    def pushed(self, size: int, created: bool) -> None:
        """One more file is in the bucket: created now, or found there already."""


class PushParts:
    """The state of one push that its parts read (``Pusher`` sets it)."""

    store: Store
    url: ArchiveUrl
    bucket: Bucket
    progress: Progress | None
    redacted: RedactedRoot | None
    reredact: bool

    def _failed(self, tally: PushTally, key: str, err: BaseException) -> None:
        """One failed request in the tally's errors, unless the whole push stopped: then its
        one reason says it all, and the files wait for the next push."""
        if isinstance(err, Halted) or self.bucket.link.halted:
            return
        tally.errors.append(f"{key}: {understand(err).said}")
