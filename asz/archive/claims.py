"""Which root a session in the archive belongs to: one claim object per session.

Sequence numbers are per session and per root, so two roots holding one session (two machines
sharing a home directory) would write different files under the same names, or, worse, add
their own files beside the other's under new names, and a reader would then rebuild a mixture.
So before the first file of a session is pushed, the push creates (create-only)
``_archive/claims/<session>.json``, naming the session's first landed file and its SHA-256.
A root's first landed file of a session never changes, so the same root (or a copy of it,
moved to another machine) always writes the same claim, byte for byte, and finds it "already
there"; any other root writing one finds other bytes: the session is held by two roots, it is
reported by name and none of this root's files of it are pushed. Names starting with ``_`` at
the root are never sessions, so readers never mistake the claims for one.
"""

from __future__ import annotations

import hashlib

import orjson

__all__ = ["CLAIMS_DIR", "FORMAT", "claim_bytes", "claim_of", "claim_path"]

CLAIMS_DIR = "_archive/claims"
FORMAT = "asz.archive-claim/1"


def claim_path(session: str) -> str:
    return f"{CLAIMS_DIR}/{session}.json"


def claim_bytes(session: str, first_path: str, first_data: bytes) -> bytes:
    """The claim a root holding ``first_data`` at ``first_path`` writes: the same bytes from
    the same root every time (no time, no host in it)."""
    return claim_of(session, first_path, hashlib.sha256(first_data).hexdigest())


def claim_of(session: str, first_path: str, digest: str) -> bytes:
    """:func:`claim_bytes` from the first file's SHA-256: what a repacked session's claim is
    written from, its first file replaced (``asz.archive.generations``)."""
    claim = {"format": FORMAT, "session": session, "first": first_path, "sha256": digest}
    return orjson.dumps(claim, option=orjson.OPT_SORT_KEYS) + b"\n"
