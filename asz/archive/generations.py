"""A session's generations in the archive: the manifest goes last, the claim names the origin.

A repacked session (``asz.store._generation``) is pushed like any other (redacted: its
generation's counterpart, ``asz.archive.redacted``): its landed files,
the generation's among them, go by create-only puts and are recorded. Its manifest,
``<session>/generation-<seq>[.<revision>].json``, is what makes a reader of the bucket count the
generation's files in place of those it replaced, so it is created only once every file it
names is in the bucket, after them, and never replaced: a reader sees the old objects or the
new ones, each body and line once. What it replaced stays in the bucket until ``asz push
--prune`` (``asz.archive.prune``).

A session's claim names its first landed file; a repack replaces that file, so the claim
names the session's *origin*, the first landed file ever, which the generation keeps: the same
root writes the same claim before and after a repack.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable

from asz.archive.bucket import Bucket, Created
from asz.archive.claims import claim_of
from asz.archive.record import PushRecord
from asz.store import MAX_MANIFEST_BYTES, Store

__all__ = ["claim_for", "manifests_due", "push_manifests"]


def claim_for(store: Store, session: str) -> bytes | None:
    """The claim this root writes for ``session`` (None when its first file does not read)."""
    origin = store.open_session(session).origin()
    return None if origin is None else claim_of(session, *origin)


def manifests_due(store: Store, pushed: Collection[str], sessions: Iterable[str]) -> list[str]:
    """The manifests of the sessions' generations to create now: every file they name is in
    the bucket (``pushed``, the record's paths) and they are not."""
    due = []
    for session in sessions:
        if not store.has_landed(session):
            continue  # nothing of it landed here (a claim of a session since removed)
        generation = store.open_session(session).generation()
        if generation is None or generation.path in pushed:
            continue
        if all(name.path in pushed for name in generation.files):
            due.append(generation.path)
    return due


def push_manifests(
    store: Store,
    bucket: Bucket,
    record: PushRecord,
    due: Iterable[str],
    failed: Callable[[str, BaseException], None],
    *,
    policy: str = "",
) -> tuple[int, int, list[str]]:
    """Creates each manifest of ``due`` (create-only, looked for first: a push that stopped
    may have sent it), read from ``store`` (the root, or its redacted counterpart, whose
    redaction policy is ``policy``); the objects created, their bytes, and the paths that hold
    other bytes (a conflict). ``failed`` hears of each request that failed."""
    created = size = 0
    conflicts = []
    for path in due:
        data = store.backend.read(path, MAX_MANIFEST_BYTES)
        try:
            result = bucket.create(path, data, known=None, sending=record.sending)
        except Exception as err:
            failed(path, err)
            continue
        if result is Created.OTHER:
            conflicts.append(path)
            continue
        record.pushed(path, len(data), policy)
        if result is Created.CREATED:
            created += 1
            size += len(data)
    return created, size, conflicts
