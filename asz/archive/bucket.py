"""The few requests asz makes of a bucket, each retried, and the create that never replaces.

Every path here is relative to the archive's root (the client adds the prefix). ``create``
is the only write: a conditional put (``If-None-Match: *``) that the service refuses when the
key exists, so nothing in the bucket is ever overwritten, whoever else writes to it. A create
whose answer was lost (a reset after the server took it) is not sent again blind: the next
try first asks whether the object is there (``HEAD``), so a body goes up once, and an object
found there is compared with the local bytes before it counts as pushed.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

import obstore
from obstore.exceptions import AlreadyExistsError

from asz.archive.failure import understand
from asz.archive.retry import Link

if TYPE_CHECKING:
    from obstore.store import S3Store

__all__ = ["ABSENT", "FOLLOWS", "Absent", "Bucket", "Created", "Known", "Meta"]


@dataclass(frozen=True, slots=True)
class Meta:
    """An object as the bucket describes it."""

    path: str
    size: int
    etag: str
    modified: float | None = None
    """When it was created (seconds since the epoch), where the listing says."""

    @classmethod
    def of(cls, meta: Any) -> Meta:
        made = meta.get("last_modified")
        return cls(
            str(meta["path"]),
            int(meta["size"]),
            str(meta.get("e_tag") or "").strip('"'),
            made.timestamp() if made is not None else None,
        )

    def plain_md5(self) -> str | None:
        """The ETag when it has an MD5's form (32 hex digits: a single-part upload; with
        SSE-KMS it is one and still no MD5 of the bytes); None when it has not."""
        tag = self.etag.lower()
        return tag if len(tag) == 32 and all(c in "0123456789abcdef" for c in tag) else None


FOLLOWS = "asz-follows"
"""The user metadata (``x-amz-meta-asz-follows``) a push gives each landed file:
``<seq>:<sha256>`` of the file before it in its session's sequence, in the root that pushed
it. A reader that finds another file at that number in the bucket knows the session holds
files from two roots (a copy that diverged), which neither root wrote as one sequence."""


class Created(Enum):
    CREATED = "created"
    """The object was not there and now holds the bytes."""
    SAME = "same"
    """It was there already, holding the same bytes."""
    OTHER = "other"
    """It is there holding other bytes: a conflict, left as it is."""


class Absent:
    """Known to be absent (a listing or the push record says so). What is known of a key
    before a create (``Known``) is this, a ``Meta`` (it is there), or None (unknown)."""


ABSENT = Absent()
Known = Meta | Absent | None


@dataclass(slots=True)
class Bucket:
    """One archive's client; every request goes through its ``link`` (``asz.archive.retry``):
    retried, paused with the others, stopped with the others."""

    store: S3Store
    link: Link = field(default_factory=Link)
    endpoint: str = ""
    """The endpoint the client speaks to ("" for AWS's own): the push record names it."""

    def head(self, path: str) -> Meta | None:
        return self.link.run(lambda: self._head_once(path))

    def get(self, path: str) -> bytes:
        """The whole object; FileNotFoundError when there is none."""
        return self.link.run(lambda: bytes(obstore.get(self.store, path).bytes()))

    def get_noted(self, path: str) -> tuple[bytes, str]:
        """The whole object, and the note its push gave it (``FOLLOWS``; "" for none)."""

        def fetch() -> tuple[bytes, str]:
            got = obstore.get(self.store, path)
            return bytes(got.bytes()), str(got.attributes.get(FOLLOWS, ""))

        return self.link.run(fetch)

    def get_range(self, path: str, start: int, length: int) -> bytes:
        if length <= 0:
            return b""
        return self.link.run(
            lambda: bytes(obstore.get_range(self.store, path, start=start, length=length))
        )

    def delete(self, path: str) -> None:
        """Removes the object at ``path`` (gone already is no error). Only what a writer's own
        root wrote is deleted: by ``asz push --prune``, the objects a generation replaced once
        its retention passed and the extents a higher one supersedes (``asz.archive.prune``);
        by a push, the extent it created for a session whose first file met a conflict; by
        the analytics writer, the small files a compaction covers (``asz.analytics.names``).
        A landed file that still counts is never deleted from an archive."""
        self.link.run(lambda: obstore.delete(self.store, path))

    def list_dir(self, directory: str) -> tuple[list[str], list[Meta]]:
        """The names of the directories and the objects directly in ``directory``."""

        def look() -> tuple[list[str], list[Meta]]:
            found = obstore.list_with_delimiter(self.store, directory or None)
            dirs = [str(prefix).rsplit("/", 1)[-1] for prefix in found["common_prefixes"]]
            return dirs, [Meta.of(meta) for meta in found["objects"]]

        return self.link.run(look)

    def list_all(self, prefix: str) -> list[Meta]:
        """Every object under ``prefix`` (a whole listing is retried from its start)."""
        return self.link.run(
            lambda: [Meta.of(m) for chunk in obstore.list(self.store, prefix) for m in chunk]
        )

    def create(
        self,
        path: str,
        data: bytes,
        known: Known = ABSENT,
        sending: Callable[[str], None] | None = None,
        follows: str = "",
    ) -> Created:
        """Puts ``data`` at ``path`` unless an object is there. ``known`` is what is known
        of the key before: ABSENT sends at once, None (unknown, e.g. an earlier push that
        stopped while sending it) looks first, a Meta is compared without sending.
        ``sending`` is told just before the first put goes, so that a push stopped after it
        looks before sending again, and only then. ``follows`` is kept with the object as
        its ``FOLLOWS`` note."""
        attributes: dict[str, str] = {FOLLOWS: follows} if follows else {}
        state: list[Known] = [known]
        told = False

        def once() -> Created:
            nonlocal told
            while True:
                if state[0] is None:  # a look of its own, retried apart from the put's tries
                    state[0] = self.head(path) or ABSENT
                seen = state[0]
                if isinstance(seen, Meta):
                    return Created.SAME if self.holds(seen, data) else Created.OTHER
                if sending is not None and not told:
                    sending(path)
                    told = True
                state[0] = None  # the put may land before its answer is lost
                try:
                    obstore.put(
                        self.store,
                        path,
                        data,
                        mode="create",
                        use_multipart=False,
                        attributes=attributes,
                    )
                except AlreadyExistsError:
                    continue
                except Exception as err:
                    if understand(err).code == "SlowDown":
                        state[0] = ABSENT  # refused before it was taken: no need to look
                    raise
                return Created.CREATED

        return self.link.run(once)

    def _head_once(self, path: str) -> Meta | None:
        try:
            return Meta.of(obstore.head(self.store, path))
        except FileNotFoundError:
            return None

    def holds(self, meta: Meta, data: bytes) -> bool:
        """Whether the object ``meta`` describes holds exactly ``data``: by size, then by an
        ETag equal to their MD5, else by reading it (a conflict is never said on an ETag)."""
        if meta.size != len(data):
            return False
        md5 = meta.plain_md5()
        if md5 is not None and md5 == hashlib.md5(data, usedforsecurity=False).hexdigest():
            return True
        # An ETag that is no MD5 of the bytes (multipart, SSE-KMS) says nothing: read them.
        return self.get(meta.path) == data
