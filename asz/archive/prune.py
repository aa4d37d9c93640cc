"""``asz push --prune``: the objects a generation replaced leave the bucket, after a while.

A repacked session in the archive holds its old objects beside the new ones
(``asz.archive.generations``): readers count the generation's files once its manifest is
there, and never the objects it replaced. Those are removed only here, asked for explicitly,
never by a reader and never by a push, and only once the manifest that replaced them has
been in the bucket for ``archive.prune_after`` seconds, so a reader that listed the session
before it (a long ``asz serve``) keeps what it reads for that long. Only the sessions this
root claimed are pruned, and only after the manifest and every file it names are found in
the bucket with the sizes it gives: what is removed is always replaced by what is there.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from asz.archive.bucket import Bucket, Meta
from asz.locations import ArchiveUrl
from asz.store import (
    GenerationError,
    GenerationId,
    decode_generation,
    parse_extent,
    parse_generation_dir,
    parse_generation_file,
    parse_landed,
)

__all__ = ["Pruned", "prune", "replaced_by"]


@dataclass(slots=True)
class Pruned:
    """What a prune removed, and what it left for later (too recent) or could not judge."""

    objects: int = 0
    bytes: int = 0
    waiting: int = 0
    """Replaced objects whose generation is younger than ``prune_after``."""
    errors: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    """The paths removed, for the push record to forget."""

    def as_dict(self) -> dict[str, object]:
        return {
            "objects": self.objects,
            "bytes": self.bytes,
            "waiting": self.waiting,
            "errors": self.errors,
        }


def prune(
    bucket: Bucket, url: ArchiveUrl, sessions: list[str], after: float, now: float | None = None
) -> Pruned:
    """Removes from each of ``sessions`` (those this root claimed) the objects its newest
    whole generation in the bucket replaced, once that one is ``after`` seconds old."""
    pruned = Pruned()
    now = time.time() if now is None else now
    for session in sessions:
        try:
            _prune_session(bucket, session, after, now, pruned)
        except Exception as err:  # the next prune tries again; nothing was half removed
            pruned.errors.append(f"{url.key(session)}/: {type(err).__name__}: {err}")
    return pruned


def _prune_session(bucket: Bucket, session: str, after: float, now: float, pruned: Pruned) -> None:
    objects = {meta.path: meta for meta in bucket.list_all(session + "/")}
    _prune_extents(bucket, objects, after, now, pruned)
    manifests = sorted(
        (found, meta)
        for meta in objects.values()
        for found in [parse_generation_file(meta.path.rsplit("/", 1)[-1])]
        if found is not None and meta.path.count("/") == 1
    )
    for newest, meta in reversed(manifests):
        try:
            data = bucket.get(meta.path)
            generation = decode_generation(session, newest, data)
        except (OSError, GenerationError):
            continue
        whole = all(
            path in objects and objects[path].size == size
            for path, (size, _digest) in generation.digests.items()
        )
        if not whole:
            continue  # its files are not all up yet: it does not count, nothing is replaced
        old = [m for path, m in objects.items() if replaced_by(session, path, newest)]
        if meta.modified is None or now - meta.modified < after:
            pruned.waiting += len(old)
            return
        for item in old:
            bucket.delete(item.path)
            pruned.removed.append(item.path)
            pruned.objects += 1
            pruned.bytes += item.size
        return


def _prune_extents(
    bucket: Bucket, objects: dict[str, Meta], after: float, now: float, pruned: Pruned
) -> None:
    """Removes every extent object of the session but the highest (its ``seq`` to readers),
    once the highest has been in the bucket for ``after`` seconds, as for any object pruned."""
    extents = [
        (number, meta)
        for path, meta in objects.items()
        if path.count("/") == 1  # a session's listing: <session>/<name>
        for number in [parse_extent(path.rsplit("/", 1)[-1])]
        if number is not None
    ]
    extents.sort(key=lambda found: found[0])
    old = [meta for _number, meta in extents[:-1]]
    if not old:
        return
    highest = extents[-1][1]
    if highest.modified is None or now - highest.modified < after:
        pruned.waiting += len(old)
        return
    for item in old:
        bucket.delete(item.path)
        pruned.removed.append(item.path)
        pruned.objects += 1


def replaced_by(session: str, path: str, generation: GenerationId) -> bool:
    """Whether the object at ``path`` (relative to the prefix) is one the generation
    ``generation`` stands in for: an ordinary landed file numbered up to what it replaces, an
    older generation's file or manifest (fewer numbers, or an earlier revision of the same).
    A newer generation's files are not: they may be on their way, their manifest to follow."""
    parts = path.split("/")
    if parts[0] != session or len(parts) < 2:
        return False
    name = parts[-1]
    if len(parts) == 2:
        manifest = parse_generation_file(name)
        return manifest is not None and manifest < generation
    older = parse_generation_dir(parts[1])
    if older is not None:
        return older < generation
    landed = parse_landed("/".join(parts[:-1]), name)
    return landed is not None and landed.seq <= generation.replaces
