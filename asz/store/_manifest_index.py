"""Every landed body's manifest (:class:`BodyManifest`) kept apart from the bodies, so that
reading them costs one small file instead of every body file.

Joining bodies to calls (the view, the cache report) and summarising a session need each
body's manifest: its id, role, keys, size and digest. Those sit in the record lines of the
session's body files, between payloads that are nearly all of their bytes, so reading them
from there means decompressing, parsing and hashing every body file: on a long session, a
quarter of what building its cache report costs. So they are kept in
``<session>/manifests.json``, per landed file, with the stamp of the file they were read from
(``Backend.stamp``). Landed files never change once published: a file listed with its stamp is
read from the index, and a file it lacks (landed since, rewritten, or the index is missing or
not whole) is read from itself, and the index written again where the root may be written.

The index is derived state like the summary (``asz.store._derived``): nothing in it is needed
to rebuild a body, a reader that cannot use it reads the files, and ``asz verify`` checks it
against what the files give.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from asz.bodykeys import BodyKeys
from asz.store._cached import count, text
from asz.store._derived import DerivedFile
from asz.store._layout import LandedName, manifests_path
from asz.store._manifest import ROLES, referenced_pieces

__all__ = [
    "MANIFESTS",
    "REFS",
    "BodyManifest",
    "IndexedFile",
    "decode_index",
    "encode_index",
    "is_manifest",
    "pieces_named",
]


@dataclass(frozen=True, slots=True)
class BodyManifest:
    """A landed body as its manifest tells it, and where it landed; never its bytes."""

    record_id: str
    role: str
    keys: BodyKeys
    src: str
    size: int
    sha256: str
    file: str
    seq: int
    row: int
    why: str | None = None
    """Why the body landed whole, when it did: what Claude Code wrote is not a JSON object in
    valid UTF-8 (or was not cut for another reason its manifest gives)."""

    @property
    def ref(self) -> dict[str, Any]:
        return {"file": self.file, "seq": self.seq, "row": self.row}

    @classmethod
    def of(cls, name: LandedName, row: int, meta: dict[str, Any]) -> BodyManifest:
        """The manifest of the record at ``row`` of the landed file ``name``, from its meta
        (which :func:`is_manifest` said is one)."""
        return cls(
            record_id=str(meta["id"]),
            role=str(meta["role"]),
            keys=BodyKeys.from_dict(meta.get("keys")),
            src=str(meta["src"]),
            size=int(meta["size"]),
            sha256=str(meta["sha256"]),
            file=name.name,
            seq=name.seq,
            row=row,
            why=meta["why"] if isinstance(meta.get("why"), str) else None,
        )


def is_manifest(meta: dict[str, Any]) -> bool:
    """Whether a record's meta carries what a body manifest is read from."""
    return (
        isinstance(meta.get("id"), str)
        and meta.get("role") in ROLES
        and type(meta.get("size")) is int
        and isinstance(meta.get("sha256"), str)
        and isinstance(meta.get("src"), str)
    )


MANIFESTS = DerivedFile(manifests_path, schema=2, limit=1 << 30)
"""Its mark is of the body files; a reader takes it file by file, each entry holding while its
file has the stamp the entry names."""
_FIELDS = ("id", "role", "size", "sha256", "src", "keys", "why")
"""What of a record's manifest the index keeps: what ``Session.manifests`` reads."""
REFS = "refs"


@dataclass(frozen=True, slots=True)
class IndexedFile:
    """What one landed body file holds, as its records' manifests tell it."""

    stamp: str
    """The file's stamp when it was read; the entry holds only while the file has it."""
    records: list[tuple[int, dict[str, Any]]]
    """``(row, manifest)`` of each record, the manifest cut to what a reader of manifests
    needs (no blob lengths or segments) and, for a response that names pieces held by other
    records, their digests (``refs``): what rebuilding it alone must find."""
    problems: list[tuple[int, str]]
    """``(row, why)`` of each record whose manifest is not one."""

    @classmethod
    def of(
        cls, stamp: str, records: list[tuple[int, dict[str, Any]]], problems: list[tuple[int, str]]
    ) -> IndexedFile:
        return cls(stamp, [(row, _cut(meta)) for row, meta in records], problems)


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


def encode_index(files: dict[str, IndexedFile]) -> dict[str, Any]:
    """The index of ``files`` (by landed file name) as it is kept."""
    return {name: [entry.stamp, entry.records, entry.problems] for name, entry in files.items()}


def decode_index(value: Any) -> dict[str, IndexedFile]:
    """The files an index holds, by name; empty when it is not a usable index (each file is
    then read from itself)."""
    try:
        return {
            name: IndexedFile(
                stamp=text(stamp),
                records=[(count(row), _object(meta)) for row, meta in records],
                problems=[(count(row), text(why)) for row, why in problems],
            )
            for name, (stamp, records, problems) in value.items()
        }
    except (AttributeError, KeyError, TypeError, ValueError):
        return {}


def _object(value: object) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise TypeError(f"{value!r} is not an object")
    return value
