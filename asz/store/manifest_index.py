"""Every landed body's manifest kept apart from the bodies, so that reading them costs one small
file instead of every body file.

Joining bodies to calls (the view, the cache report) and summarising a session need each
body's manifest: its id, role, keys, size and digest. Those sit in the record lines of the
session's body files, between payloads that are nearly all of their bytes, so reading them
from there means decompressing, parsing and hashing every body file: on a long session, a
quarter of what building its cache report costs. So they are kept in
``<session>/manifests.json``, per landed file, with the size of the file they were read from.
Landed files never change once published: a file listed with its size is read from the index,
and a file it lacks (landed since, or the index is missing, unreadable or of another size) is
read from itself, and the index written again where the root may be written.

The index is derived state like the summary: nothing in it is needed to rebuild a body, a
reader that cannot use it reads the files, and ``asz verify`` never reads it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from asz.store.cached import count, text
from asz.store.layout import session_dir
from asz.store.manifest import referenced_pieces

INDEX_FILE = "manifests.json"
_SCHEMA = 1
_MAX_INDEX = 1 << 30
_FIELDS = ("id", "role", "size", "sha256", "src", "keys")
"""What of a record's manifest the index keeps: what ``Session.manifests`` reads."""
REFS = "refs"


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """What one landed body file holds, as its records' manifests tell it."""

    size: int
    """The file's size when it was read; the entry holds only while the file has it."""
    records: list[tuple[int, dict[str, Any]]]
    """``(row, manifest)`` of each record, the manifest cut to what a reader of manifests
    needs (no blob lengths or segments) and, for a response that names pieces held by other
    records, their digests (``refs``): what rebuilding it alone must find."""
    problems: list[tuple[int, str]]
    """``(row, why)`` of each record whose manifest is not one."""

    @classmethod
    def of(
        cls, size: int, records: list[tuple[int, dict[str, Any]]], problems: list[tuple[int, str]]
    ) -> IndexedFile:
        return cls(size, [(row, _cut(meta)) for row, meta in records], problems)


def _cut(meta: dict[str, Any]) -> dict[str, Any]:
    cut = {name: meta[name] for name in _FIELDS if name in meta}
    refs = referenced_pieces(meta) if meta.get("role") == "response" else set()
    if refs:
        cut[REFS] = sorted(refs)
    return cut


def pieces_named(meta: dict[str, Any]) -> list[str]:
    """The digests of the pieces an indexed manifest names (``refs``); none when it names
    none, or when what it holds there is not a list of digests."""
    refs = meta.get(REFS)
    if isinstance(refs, list) and all(isinstance(digest, str) for digest in refs):
        return refs
    return []


def index_path(session: str) -> str:
    """Where the session's manifest index is, relative to the root."""
    return f"{session_dir(session)}/{INDEX_FILE}"


def encode_index(session: str, files: dict[str, IndexedFile]) -> bytes:
    """The index of ``files`` (by landed file name) as it is kept."""
    return orjson.dumps(
        {
            "schema": _SCHEMA,
            "session": session,
            "files": {
                name: [entry.size, entry.records, entry.problems] for name, entry in files.items()
            },
        }
    )


def decode_index(session: str, data: bytes) -> dict[str, IndexedFile]:
    """The files an index holds, by name; empty when the bytes are not a usable index (each
    file is then read from itself)."""
    try:
        value = orjson.loads(data)
        if value.get("schema") != _SCHEMA or value.get("session") != session:
            return {}
        return {
            name: IndexedFile(
                size=count(size),
                records=[(count(row), _object(meta)) for row, meta in records],
                problems=[(count(row), text(why)) for row, why in problems],
            )
            for name, (size, records, problems) in value["files"].items()
        }
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return {}


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{value!r} is not an object")
    return value
