"""What the status line folded of a session so far, kept between runs in small private files.

Two files per session, ``<cache>/asz/statusline/<session>.a`` and ``.b`` (``<cache>`` is
``$XDG_CACHE_HOME``, else ``~/.cache``), readable by their owner alone (0600, in a 0700
directory); only a session id in Claude Code's UUID form names them. Each run reads both,
takes the whole one of the later generation, and writes the next generation over the other
in place. Replacing a file by renaming another over it would be atomic, but ext4 writes the
new file's data out before such a rename, which made one run in a hundred wait a tenth of a
second or more; overwriting the older of two files costs nothing, and a run that dies while
writing one (or two runs writing the same one) leaves the other whole. A file is whole when
its first line, the checksum and length of the rest, matches what follows.

A file is at most :data:`MAX_STATE` bytes (a state holding more is not written: the next run
reads the session again), and the directory keeps the files of the :data:`MAX_SESSIONS`
sessions written last. Everything in them is derived from the transcripts, so a state that
is missing, damaged, of another schema or about another transcript is simply not used: the
session is read from its first line.
"""

from __future__ import annotations

import contextlib
import os
import zlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from asz.bodykeys import is_session_id

__all__ = [
    "MAX_SESSIONS",
    "MAX_STATE",
    "SCHEMA",
    "SLOTS",
    "load_state",
    "save_state",
    "state_dir",
    "state_file",
]

SCHEMA = 1
MAX_STATE = 1 << 20
MAX_SESSIONS = 64
SLOTS = (".a", ".b")


def state_dir(env: Mapping[str, str]) -> Path:
    """Where the files are: ``$XDG_CACHE_HOME/asz/statusline``, else ``~/.cache/...``."""
    cache = env.get("XDG_CACHE_HOME")
    base = Path(cache) if cache and os.path.isabs(cache) else _home(env) / ".cache"
    return base / "asz" / "statusline"


def state_file(directory: Path, session: str | None) -> Path | None:
    """The session's files, by their common stem; None for an id not in UUID form, which
    names no file."""
    if session is None or not is_session_id(session):
        return None
    return directory / session.lower()


def load_state(stem: Path | None, transcript: str, prices: str) -> dict[str, Any] | None:
    """The latest whole state kept for this transcript under this price table, or None."""
    if stem is None:
        return None
    found = None
    for slot in SLOTS:
        value = _read(stem.with_name(stem.name + slot))
        if value is None or (value.get("schema"), value.get("transcript"), value.get("prices")) != (
            SCHEMA,
            transcript,
            prices,
        ):
            continue
        if found is None or value["generation"] > found["generation"]:
            found = value
    return found


def save_state(stem: Path, value: dict[str, Any]) -> None:
    """Writes ``value`` as the generation after the one it was loaded as (``generation``,
    0 when absent) over the other file of the pair."""
    generation = value.get("generation", -1) + 1
    data = orjson.dumps({**value, "schema": SCHEMA, "generation": generation})
    if len(data) > MAX_STATE:
        return
    directory = stem.parent
    directory.mkdir(mode=0o700, parents=True, exist_ok=True)
    if directory.stat().st_mode & 0o077:  # made by another hand, or with its parents' mode
        os.chmod(directory, 0o700)
    path = stem.with_name(stem.name + SLOTS[generation % 2])
    new = not path.exists()
    header = b"%08x %d\n" % (zlib.crc32(data), len(data))
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, header + data)
        os.ftruncate(fd, len(header) + len(data))
    finally:
        os.close(fd)
    if new:
        _prune(directory)


def _read(path: Path) -> dict[str, Any] | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        data = os.read(fd, MAX_STATE + 64)
    except OSError:
        return None
    finally:
        os.close(fd)
    header, _, body = data.partition(b"\n")
    try:
        checksum, length = header.split(b" ")
        whole = int(length) == len(body) and int(checksum, 16) == zlib.crc32(body)
        value = orjson.loads(body) if whole else None
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(value, dict) or not isinstance(value.get("generation"), int):
        return None
    return value


def _prune(directory: Path) -> None:
    """Keeps the files of the :data:`MAX_SESSIONS` sessions written last; an older
    session's is read again if it comes back."""
    latest: dict[str, int] = {}
    with os.scandir(directory) as entries:
        for entry in entries:
            stem, dot, slot = entry.name.rpartition(".")
            if dot and f".{slot}" in SLOTS and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(FileNotFoundError):
                    written = entry.stat(follow_symlinks=False).st_mtime_ns
                    latest[stem] = max(written, latest.get(stem, written))
    for stem in sorted(latest, key=latest.__getitem__, reverse=True)[MAX_SESSIONS:]:
        for slot in SLOTS:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / f"{stem}{slot}")


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()
