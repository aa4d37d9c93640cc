"""What an object a push finds in its way is, when the push rebuilt its record by listing.

A push that lost its record (or was asked to ``--relist``) knows nothing of the policies its
files went under before: it lists each session and compares each object with what it would
send now. Under another redaction policy than the one that went (or raw before), every one
of its files differs, and by bytes alone that is what another root's file looks like: a
conflict. It is not one. The object is this root's landed file, or its counterpart under an
older policy, which the push record then says it went under, so the session is held for
``asz push --reredact`` as when the record was kept (``asz.archive.archived``).

A counterpart says so in its header (``redacted``, the policy's fingerprint) and carries the
kind, session, number, time and writer of the landed file it stands for
(``asz.archive.redacted``); a landed file of another root that diverged from this one has
another time at that number.
"""

from __future__ import annotations

from asz.store import LandedFileError, decode_file

__all__ = ["went_under"]

_SAME = ("kind", "session", "seq", "at", "writer")
"""What a counterpart's header keeps of its landed file's, and another root's file lacks."""


def went_under(found: bytes, path: str, landed: bytes) -> str | None:
    """The redaction policy ("": raw) under which ``found``, the object at ``path``, is this
    root's ``landed`` file there; None when it is not (another root's file, or bytes that do
    not read as a landed file: a conflict)."""
    if found == landed:
        return ""
    try:
        theirs = decode_file(path, found).header
        ours = decode_file(path, landed).header
    except LandedFileError:
        return None
    policy = theirs.get("redacted")
    if not isinstance(policy, str) or not policy or "redacted" in ours:
        return None
    return policy if all(theirs.get(key) == ours.get(key) for key in _SAME) else None
