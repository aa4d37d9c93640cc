"""Where the tables are: a local directory or a prefix of a bucket, through one small API.

A bucket is reached through the archive's own client (``asz.archive.open_bucket``, with
``[archive]``'s endpoint, region and retries): the same credentials and the same retried,
create-only puts as ``asz push``. A file is only ever created under a new name (never
replaced) and removed by the machine that wrote it (``asz.analytics.names``).
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from asz.archive.backend import reading
from asz.crashpoints import crash_point
from asz.locations import is_archive

if TYPE_CHECKING:
    from asz.archive.bucket import Bucket
    from asz.config import ArchiveConfig

__all__ = ["Listing", "Place", "open_place"]

Listing = dict[str, tuple[int | None, list[str] | None]]
"""Each directory of a target (``<table>/day=<day>``): its stamp, None where it has none,
and the paths of its files, None where the stamp is the one the caller knew."""
SETTLED_NS = 2_000_000_000
"""How long a directory must have been left alone before its modification time is taken as
its stamp: a file added within the same tick of the clock as an earlier listing leaves the
time as it was, which a time older than this can no longer be."""


class Place(Protocol):
    shown: str
    """The target as a person names it (a directory, or ``s3://bucket/prefix``)."""

    def list(self) -> list[str]:
        """Every file's path, relative to the target. A file is never rewritten under its
        name, so a name says which bytes it holds."""
        ...

    def listing(self, known: Mapping[str, int]) -> Listing:
        """The files of each table's day directories; a directory whose stamp is the one in
        ``known`` is not listed again, for nothing was added to it or removed since."""
        ...

    def create(self, path: str, data: bytes) -> None:
        """Writes a new file whole; never replaces one."""
        ...

    def create_all(self, files: Sequence[tuple[str, bytes]]) -> None:
        """Writes new files (path, bytes), each whole, replacing none: a pass's files at
        once, so that a directory makes them durable together."""
        ...

    def remove(self, path: str) -> None:
        """Removes a file; one already gone is no error."""
        ...

    def read(self, path: str) -> bytes: ...


class DirectoryPlace:
    """Tables in a directory: files 0600 and directories 0700, each written durably under a
    temporary name and published without replacing anything."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.shown = str(path)

    def list(self) -> list[str]:
        # Plain strings: a team's year is some 150,000 files, listed on every read.
        base = len(str(self.path)) + 1
        return [
            f"{parent[base:]}/{name}" if len(parent) >= base else name
            for parent, _dirs, files in os.walk(self.path)
            for name in files
        ]

    def listing(self, known: Mapping[str, int]) -> Listing:
        """A directory's modification time is its stamp once it is ``SETTLED_NS`` old: a
        reader lists again only the days that changed (today's, mostly), where listing a
        team's year took most of a query's time."""
        settled_before = time.time_ns() - SETTLED_NS
        found: Listing = {}
        for table in _subdirectories(self.path):
            for day in _subdirectories(table.path):
                key = f"{table.name}/{day.name}"
                try:
                    modified = day.stat(follow_symlinks=False).st_mtime_ns
                    stamp = modified if modified < settled_before else None
                    if stamp is not None and known.get(key) == stamp:
                        found[key] = (stamp, None)
                    else:
                        found[key] = (stamp, [f"{key}/{name}" for name in os.listdir(day.path)])
                except FileNotFoundError:
                    continue  # removed while it was listed: a day gone
        return found

    def create(self, path: str, data: bytes) -> None:
        self.create_all([(path, data)])

    def create_all(self, files: Sequence[tuple[str, bytes]]) -> None:
        from asz.atomic import publish_temps, remove_temp, write_temp

        temps = []
        try:
            for path, data in files:
                temps.append(write_temp(self.path / path, data, path))
            # One flush for them all, then each published.
            publish_temps(temps, published=lambda _: crash_point("analytics.written"))
        finally:
            for temp in temps:
                remove_temp(temp)

    def remove(self, path: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            (self.path / path).unlink()

    def read(self, path: str) -> bytes:
        return (self.path / path).read_bytes()


class BucketPlace:
    """Tables under a bucket's prefix."""

    def __init__(self, url: str, bucket: Bucket) -> None:
        self.shown = url
        self.bucket = bucket

    def list(self) -> list[str]:
        return [meta.path for meta in reading(self.shown, lambda: self.bucket.list_all(""))]

    def listing(self, known: Mapping[str, int]) -> Listing:
        """A bucket's prefixes have no stamp: every file is listed."""
        grouped: dict[str, list[str]] = {}
        for path in self.list():
            grouped.setdefault(path.rsplit("/", 1)[0] if "/" in path else "", []).append(path)
        return {directory: (None, paths) for directory, paths in grouped.items()}

    def create(self, path: str, data: bytes) -> None:
        from asz.archive.bucket import Created

        if reading(self._at(path), lambda: self.bucket.create(path, data)) is Created.OTHER:
            raise FileExistsError(f"{self._at(path)} holds other bytes")

    def create_all(self, files: Sequence[tuple[str, bytes]]) -> None:
        for path, data in files:
            self.create(path, data)
            crash_point("analytics.written")

    def remove(self, path: str) -> None:
        reading(self._at(path), lambda: self.bucket.delete(path))

    def read(self, path: str) -> bytes:
        return reading(self._at(path), lambda: self.bucket.get(path))

    def _at(self, path: str) -> str:
        return f"{self.shown}/{path}"


def _subdirectories(path: str | Path) -> list[os.DirEntry[str]]:
    """The directories in ``path`` (none when it is gone), links not followed."""
    try:
        with os.scandir(path) as entries:
            return [entry for entry in entries if entry.is_dir(follow_symlinks=False)]
    except FileNotFoundError:
        return []


def open_place(location: str, settings: ArchiveConfig) -> Place:
    """The target at ``location``: ``s3://bucket/prefix``, else a directory path."""
    if is_archive(location):
        from asz.archive import open_bucket

        return BucketPlace(location.rstrip("/"), open_bucket(location, settings))
    return DirectoryPlace(Path(location).expanduser().absolute())
