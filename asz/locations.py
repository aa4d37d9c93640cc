"""Where a root is: a directory, or a team archive's ``s3://bucket/prefix``.

Parsing a location needs no client, so the config can check an archive's URL when it is read
and the store can tell a URL from a directory without importing the archive
(``asz.archive.location`` holds the client that reaches one).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["SCHEME", "ArchiveError", "ArchiveUrl", "is_archive"]

SCHEME = "s3://"
_BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class ArchiveError(ValueError):
    """An archive location or setting that cannot be used."""


def is_archive(location: str) -> bool:
    return location.startswith(SCHEME)


@dataclass(frozen=True, slots=True)
class ArchiveUrl:
    """A bucket and the prefix under it that is the root (``""`` for the whole bucket)."""

    bucket: str
    prefix: str

    @classmethod
    def parse(cls, url: str) -> ArchiveUrl:
        if not is_archive(url):
            raise ArchiveError(f"{url}: an archive is named s3://bucket/prefix")
        bucket, _, prefix = url[len(SCHEME) :].partition("/")
        prefix = prefix.strip("/")
        if not _BUCKET.match(bucket):
            raise ArchiveError(f"{url}: {bucket!r} is not a bucket name")
        if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
            raise ArchiveError(f"{url}: the prefix has an empty, . or .. part")
        return cls(bucket, prefix)

    def __str__(self) -> str:
        return f"{SCHEME}{self.bucket}/{self.prefix}" if self.prefix else f"{SCHEME}{self.bucket}"

    def key(self, path: str) -> str:
        """The object key of a path relative to the root, as the bucket's owner sees it."""
        return f"{self.prefix}/{path}" if self.prefix else path
