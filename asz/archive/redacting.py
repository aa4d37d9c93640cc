"""A root read through redaction: what ``asz serve`` shows beyond loopback.

Every reader reaches a root's files through its backend, so reading the redacted root is a
backend: :class:`RedactingBackend` lists the root's own files, and gives for each landed file
its redacted counterpart (``asz.archive.redacted``), made the first time it is read and kept
in a private directory of the reader's cache: bodies through ``Redactor.body``, transcript
and index lines through ``Redactor.line``, each made once, however many pages read them.
The derived state readers make from it (summaries, reports, facts) is kept there too, never
in the root, which this backend never writes. A repacked session's generation manifest reads
as its counterpart's, which names the redacted files' digests (``RedactedRoot.mirror``), so
a repacked session reads as its calls. A file that cannot be redacted does not read
(an ``OSError``, which every reader reports as a file that could not be opened): nothing of
it is shown, and never raw.
"""

from __future__ import annotations

import errno
import hashlib
import threading
from pathlib import Path
from typing import NoReturn

from asz.archive.cache import default_cache_dir
from asz.archive.redacted import RedactedRoot, root_redactor
from asz.atomic import private_dir
from asz.config import Config
from asz.store import (
    REDACT_KEY_FILE,
    REDACTED_DIR,
    STATE_DIR,
    Backend,
    Entry,
    LandedName,
    RefusesLanding,
    Store,
    TempFile,
    parse_generation_file,
    parse_landed,
)

__all__ = ["RedactingBackend", "redacting_store"]


class RedactingBackend(RefusesLanding):
    """The root behind ``source``, each landed file read as its redacted counterpart."""

    REFUSAL = "a redacted view never writes to the root"

    derived_apart = True
    """Derived state goes to the counterpart's directory, never to the root."""

    def __init__(self, source: Backend, redacted: RedactedRoot) -> None:
        self.source = source
        self.redacted = redacted
        self._lock = threading.Lock()  # pages read in worker threads; one maker at a time

    @property
    def location(self) -> str:
        return self.source.location

    def describe(self, path: str) -> str:
        return self.source.describe(path)

    def list(self, directory: str) -> list[Entry]:
        return self.source.list(directory)

    def _made(self, path: str) -> bool:
        """Whether ``path`` is a landed file or a generation's manifest, made ready to read
        (a manifest: its counterpart, naming the redacted files); OSError when its
        counterpart cannot be made."""
        directory, _, name = path.rpartition("/")
        landed: LandedName | None = parse_landed(directory, name)
        manifest = "/" not in directory and parse_generation_file(name) is not None
        if landed is None and not manifest:
            return False
        with self._lock:
            if self.redacted.holds(path):
                return True
            session = path.split("/", 1)[0]
            if landed is None:
                generation = self.redacted.store.open_session(session).generation()
                landed = generation.files[-1] if generation is not None else None
            made = self.redacted.make(session, landed) if landed is not None else None
            if made is not None and made.failed is not None:
                why = f"could not be redacted ({made.failed[1]})"
                raise OSError(errno.EIO, why, made.failed[0])
            if not self.redacted.holds(path):
                raise OSError(errno.ENOENT, "has no redacted counterpart", path)
        return True

    def read(self, path: str, limit: int) -> bytes:
        self._made(path)
        return self.redacted.shadow.backend.read(path, limit)

    def read_range(self, path: str, start: int, length: int) -> bytes:
        self._made(path)
        return self.redacted.shadow.backend.read_range(path, start, length)

    def exists(self, path: str) -> bool:
        directory, _, name = path.rpartition("/")
        manifest = "/" not in directory and parse_generation_file(name) is not None
        if manifest or parse_landed(directory, name) is not None:
            return self.source.exists(path)
        return self.redacted.shadow.backend.exists(path)

    def size(self, path: str) -> int:
        self._made(path)
        return self.redacted.shadow.backend.size(path)

    def stamp(self, path: str) -> str:
        self._made(path)
        return self.redacted.shadow.backend.stamp(path)

    def read_temp(self, temp: TempFile) -> NoReturn:
        self._refuse(temp.path)

    def replace_derived(self, path: str, data: bytes) -> None:
        self.redacted.shadow.backend.replace_derived(path, data)


def redacting_store(config: Config, root: Path, source: Store) -> Store | None:
    """``source`` (the root at ``root``) read through the config's redaction policy, its
    counterpart kept in this user's cache; None when the policy is off. The key is the one
    given, else the one a push from the root keeps, else one kept in the cache, so that a
    server never writes into the root."""
    cache = default_cache_dir().parent / REDACTED_DIR
    place = cache / hashlib.sha256(str(root.resolve()).encode()).hexdigest()[:16]
    kept = root / STATE_DIR / REDACT_KEY_FILE
    redactor = root_redactor(
        config, kept if kept.is_file() else private_dir(place) / REDACT_KEY_FILE
    )
    if redactor is None:
        return None
    redacted = RedactedRoot(place / redactor.policy.fingerprint, source, redactor)
    return Store(RedactingBackend(source.backend, redacted))
