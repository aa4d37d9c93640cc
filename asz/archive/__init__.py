"""The team archive: landed files pushed to S3-compatible object storage, and read back.

A root's landed files are written once and never change, which is what object storage is good
at: ``asz push`` (``asz.archive.push``) creates each one under the archive's prefix at the
root's own relative path, create-only, and remembers what went (``asz.archive.record``);
``--root s3://bucket/prefix`` reads an archive through the same store API as a directory
(``asz.archive.backend``), with a bounded local cache (``asz.archive.cache``). Sessions are
claimed per root (``asz.archive.claims``), so many machines can push into one prefix and a
session two of them hold is reported, never merged. See docs/security.md ("The team archive")
and docs/operations.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from asz.locations import ArchiveUrl, is_archive

if TYPE_CHECKING:
    from asz.archive.backend import ArchiveBackend
    from asz.archive.bucket import Bucket
    from asz.config import ArchiveConfig
    from asz.store import Store

__all__ = ["open_archive", "open_bucket", "open_root"]


def open_bucket(url: str, settings: ArchiveConfig | None = None) -> Bucket:
    """The bucket client for ``url`` with ``settings``' endpoint, region and retries."""
    from asz.archive.bucket import Bucket
    from asz.archive.location import chosen_endpoint, open_bucket_store
    from asz.archive.retry import Backoff, Link
    from asz.config import ArchiveConfig

    settings = settings or ArchiveConfig()
    store = open_bucket_store(ArchiveUrl.parse(url), settings.endpoint, settings.region)
    link = Link(Backoff(settings.attempts, settings.backoff, settings.backoff_cap))
    return Bucket(store, link, chosen_endpoint(settings.endpoint))


def open_archive(url: str, settings: ArchiveConfig | None = None) -> ArchiveBackend:
    """The archive at ``url`` as a store backend, read-only, with its local cache."""
    from asz.archive.backend import ArchiveBackend
    from asz.archive.cache import LocalCache, default_cache_dir
    from asz.config import ArchiveConfig

    settings = settings or ArchiveConfig()
    parsed = ArchiveUrl.parse(url)
    cache = LocalCache(default_cache_dir(), str(parsed), settings.cache_bytes)
    return ArchiveBackend(parsed, open_bucket(url, settings), cache)


def open_root(
    location: str | os.PathLike[str],
    settings: ArchiveConfig | None = None,
    *,
    compression: str = "zstd",
) -> Store:
    """The root a person names: a team archive's ``s3://bucket/prefix`` (read-only, with
    ``settings`` or the standard AWS environment) or a directory. The store opens directories
    and backends it is handed; reaching a bucket is this package's, above it."""
    from asz.store import open_store

    text = os.fspath(location)
    if is_archive(text):
        return open_store(open_archive(text, settings), compression=compression)
    return open_store(text, compression=compression)
