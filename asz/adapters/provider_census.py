"""What the bodies directories hold, for ``asz sources``: counts, and the sessions named.

It reads the provider ledger where it can (read-only: ``asz sources`` never writes), and a
body's file only when the ledger has not judged it at its current size and time.
"""

from __future__ import annotations

import os
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

from asz.adapters.provider_ledger import Ledger, ledger_path, open_ledger
from asz.adapters.provider_source import (
    SourceFile,
    TooLarge,
    list_sources,
    read_body,
)
from asz.adapters.source_files import NotReadable
from asz.bodykeys import read_keys
from asz.config import Config
from asz.store import Root

__all__ = ["describe_sources"]


def describe_sources(config: Config) -> dict[str, Any]:
    """What the bodies directories hold, for ``asz sources``: for each, whether it is there,
    which earlier one it is another name of (if any), how many requests and responses are
    taken from it and how many of its files are shadowed by an earlier directory's; in all,
    the sessions the requests name (as written). Reads the ledger, never writes it."""
    directories = config.bodies_dirs
    listing = list_sources(*directories)
    sessions: Counter[str] = Counter()
    roles: Counter[tuple[Path, str]] = Counter()
    ledger = _read_only_ledger(Root(config.root))
    try:
        for source in listing.files:
            roles[source.directory, source.role] += 1
            if source.role == "request":
                session = _named_session(source, ledger)
                if session:
                    sessions[session] += 1
    finally:
        if ledger is not None:
            ledger.close()
    shadowed = Counter(source.directory for source in listing.shadowed)
    real = [os.path.realpath(directory) for directory in directories]
    dirs = [
        {
            "dir": str(directory),
            "exists": directory.is_dir(),
            "same_as": str(directories[real.index(real[number])])
            if real.index(real[number]) < number
            else None,
            "requests": roles[directory, "request"],
            "responses": roles[directory, "response"],
            "shadowed": shadowed[directory],
        }
        for number, directory in enumerate(directories)
    ]
    return {
        "dirs": dirs,
        "exists": listing.exists,
        "requests": sum(entry["requests"] for entry in dirs),
        "responses": sum(entry["responses"] for entry in dirs),
        "shadowed": len(listing.shadowed),
        "sessions": dict(sorted(sessions.items())),
    }


def _read_only_ledger(root: Root) -> Ledger | None:
    try:
        return open_ledger(ledger_path(root), readonly=True)
    except (sqlite3.Error, ValueError, OSError):
        return None


def _named_session(source: SourceFile, ledger: Ledger | None) -> str | None:
    """The session a request names: from the ledger while the file is as it was judged."""
    seen = ledger.judged_at(source.name, source.size, source.mtime_ns) if ledger else None
    entry = ledger.get(source.name) if ledger and seen else None
    if entry is not None and entry.sha256:
        return entry.keys.session
    try:
        data = read_body(source.directory, source.name).data
    except (NotReadable, TooLarge):
        return None
    return read_keys(source.role, source.stem, data).session
