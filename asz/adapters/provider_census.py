"""What the bodies directory holds, for ``asz sources``: counts, and the sessions named.

It reads the provider ledger where it can (read-only: ``asz sources`` never writes), and a
body's file only when the ledger has not judged it at its current size and time.
"""

from __future__ import annotations

import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from asz.adapters.provider_ledger import Ledger, ledger_path, open_ledger
from asz.adapters.provider_source import (
    NotReadable,
    SourceFile,
    TooLarge,
    list_sources,
    read_body,
)
from asz.bodykeys import read_keys
from asz.config import Config
from asz.store.root import Root


def describe_sources(config: Config) -> dict[str, Any]:
    """What the bodies directory holds, for ``asz sources``: how many requests and responses,
    and the sessions the requests name (as written). Reads the ledger, never writes it."""
    directory = config.bodies_dir
    listing = list_sources(directory)
    sessions: Counter[str] = Counter()
    roles: Counter[str] = Counter()
    ledger = _read_only_ledger(Root(config.root))
    try:
        for source in listing.files:
            roles[source.role] += 1
            if source.role == "request":
                session = _named_session(directory, source, ledger)
                if session:
                    sessions[session] += 1
    finally:
        if ledger is not None:
            ledger.close()
    return {
        "dir": str(directory),
        "exists": listing.exists,
        "requests": roles["request"],
        "responses": roles["response"],
        "sessions": dict(sorted(sessions.items())),
    }


def _read_only_ledger(root: Root) -> Ledger | None:
    try:
        return open_ledger(ledger_path(root), readonly=True)
    except (sqlite3.Error, ValueError, OSError):
        return None


def _named_session(directory: Path, source: SourceFile, ledger: Ledger | None) -> str | None:
    """The session a request names: from the ledger while the file is as it was judged."""
    seen = ledger.judged_at(source.name, source.size, source.mtime_ns) if ledger else None
    entry = ledger.get(source.name) if ledger and seen else None
    if entry is not None and entry.sha256:
        return entry.keys.session
    try:
        data = read_body(directory, source.name).data
    except (NotReadable, TooLarge):
        return None
    return read_keys(source.role, source.stem, data).session
