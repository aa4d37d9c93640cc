"""The redaction key: what makes a marker's hash unguessable and equal across a team.

A marker carries a keyed hash of the value it replaces so that equal secrets give equal
markers (a redacted body still compares with the one before it). Without a key, anyone could
confirm a guessed secret against a marker; so the key is a secret of the archive's, never
pushed. It is, in order: ``ASZ_REDACT_KEY``, the config's ``[redact] key``, else one made
once and kept 0600 in the file the caller names (the root's ``_state``): a team whose members
push into one archive must share a key, or their markers of the same secret differ.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Mapping
from pathlib import Path

__all__ = ["KEY_ENV", "MIN_KEY_CHARS", "redaction_key"]

KEY_ENV = "ASZ_REDACT_KEY"
MIN_KEY_CHARS = 16


def redaction_key(
    configured: str, env: Mapping[str, str], key_file: Path | None, *, make: bool = True
) -> tuple[bytes, str]:
    """The key and where it came from (``ASZ_REDACT_KEY``, ``redact.key``, "kept",
    "generated", "ephemeral").

    ``key_file`` is where a generated key is kept; None: no key is made, and a missing one
    is a ValueError (a reader with no root of its own must be given one). ``make`` false:
    a key kept there is read but none is written, and without one a key for this run alone
    is drawn ("ephemeral": a dry run's counts do not depend on the key).
    """
    for text, origin in ((env.get(KEY_ENV, ""), KEY_ENV), (configured, "redact.key")):
        if text:
            if len(text) < MIN_KEY_CHARS:
                raise ValueError(f"{origin} must be at least {MIN_KEY_CHARS} characters")
            return text.encode(), origin
    if key_file is None:
        raise ValueError(f"no redaction key: set {KEY_ENV} or [redact] key")
    try:
        return key_file.read_bytes().strip(), "kept"
    except FileNotFoundError:
        if not make:
            return secrets.token_hex(32).encode(), "ephemeral"
    key_file.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    # Written whole beside it, then linked in place: a crash never leaves an empty key, and
    # of two processes making one at once, the second takes the first's.
    made = secrets.token_hex(32).encode()
    partial = key_file.with_name(f".{key_file.name}.{os.getpid()}")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(descriptor, "wb") as handle:
        handle.write(made + b"\n")
        handle.flush()
        os.fsync(handle.fileno())
    try:
        os.link(partial, key_file)
    except FileExistsError:
        return key_file.read_bytes().strip(), "kept"
    finally:
        partial.unlink()
    return made, "generated"
