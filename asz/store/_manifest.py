"""The body record: what a landed provider body is made of, and the checks of its manifest.

A Claude Code request resends what the session already has: the tool list, the system prompt
and the whole conversation so far. A record therefore keeps only what is new, and names the
rest: the front the body shares with an earlier body of the session, and the pieces (tool
definitions and long strings, see ``asz.store._scan``) that an earlier record already holds.
Cutting is :mod:`asz.store._codec`; holding and rebuilding is :mod:`asz.store._held`.

A record is a manifest (``Record.meta``, a JSON object) and a payload (``Record.payload``, the
record's own blobs concatenated). Manifest fields, in the order they are written:

``id``
    The record id: the source file name less ``.json`` (``<uuid>.request``,
    ``req_….response``). Unique within a session.
``role``
    ``"request"`` or ``"response"``.
``src``
    The source file name, as the collector found it.
``size``
    The body's length in bytes, at most ``MAX_BODY``.
``sha256``
    SHA-256 of the whole body, 64 lowercase hex digits. A rebuild must match it.
``depth``
    How many copies lie between this body and one that copies nothing: 0 without a ``copy``
    segment, else the copied body's depth + 1, at most ``MAX_DEPTH`` (a bound on rebuild work).
``chain`` (requests with a first message only)
    First 16 hex digits of the SHA-256 of ``messages[0]`` normalised: ``cache_control`` removed
    from each of its content blocks, a content of exactly one ``{"type":"text","text":…}`` block
    written as the plain string, keys sorted, compact; the raw bytes when it does not parse.
    Requests of one conversation share it, whichever spelling the first message has; a
    compaction starts a new one. It only chooses what to copy from.
``why`` (only when the body landed whole)
    Why the body was not cut: it is not valid UTF-8, not valid JSON, not a JSON object, nests
    too deep, or the cut record did not rebuild it.
``keys``
    The join keys read from the body (``asz.bodykeys``): ``model``, ``session``, ``prompt``,
    ``prev_request``, ``message_id``, ``request_id``, each only when present. A reader joins
    on them without rebuilding the body.
``blobs``
    Lengths of the own blobs, in payload order; they sum to the payload's length. Blobs are raw
    bytes (no escaping), so a cut may fall anywhere. Each blob is used by exactly one segment.
``segs``
    The body, front to back; each segment is a list:

    - ``["lit", i]``: own blob ``i``, literal bytes.
    - ``["new", i]``: own blob ``i``, which is also a piece: later segments and later records
      may name it by its SHA-256.
    - ``["ref", "<sha256>"]``: a piece an earlier record, or an earlier segment of this one,
      holds as ``new``.
    - ``["copy", "<record id>", "<sha256 of that body>", n]``: the first ``n`` bytes of an
      earlier body of the session. Only the first segment may be a copy.
    - ``["suffix", n]``: the last ``n`` bytes (at least 1) of the body the copy names: a
      request ends with its base's system prompt, tools and settings. Only the last segment
      of a record that copies may be a suffix.

    Pieces and bodies are named by digest and record id, never by file or position, so records
    can be moved between files whole.

A body that cannot be cut lands whole: ``depth`` 0, ``why`` set, ``blobs`` ``[size]`` and
``segs`` ``[["lit", 0]]``.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import orjson

from asz.bodykeys import KEY_NAMES, BodyKeys

__all__ = [
    "CHAIN_PATTERN",
    "DIGEST_PATTERN",
    "MAX_BODY",
    "MAX_DEPTH",
    "ROLES",
    "CodecError",
    "IdConflict",
    "Record",
    "Repeat",
    "blob_views",
    "build_manifest",
    "chain_of",
    "check_keys",
    "count_of",
    "dumps_meta",
    "field_of",
    "is_int",
    "new_pieces",
    "referenced_pieces",
    "whole_record",
]

MAX_DEPTH = 32
"""Most copies between a body and one that copies nothing: bounds the work of one rebuild."""
MAX_BODY = 256 * 1024 * 1024
"""Largest body a record may claim."""
ROLES = ("request", "response")
_KEY_NAMES = frozenset(KEY_NAMES)
DIGEST_PATTERN = re.compile(r"[0-9a-f]{64}")
CHAIN_PATTERN = re.compile(r"[0-9a-f]{16}")


class CodecError(Exception):
    """A record that does not hold: malformed, naming what the session lacks, or not rebuilding."""


class Repeat(Exception):
    """The session already holds this record id with the same digest."""


class IdConflict(CodecError):
    """The session holds this record id with other bytes."""


@dataclass(slots=True)
class Record:
    """One body as landed: the manifest (JSON-serialisable) and the own blobs concatenated."""

    meta: dict[str, Any]
    payload: bytes


def chain_of(first_message: bytes) -> str:
    """The chain id of a request whose ``messages[0]`` is ``first_message`` (see the manifest)."""
    try:
        message = orjson.loads(first_message)
    except orjson.JSONDecodeError:
        data = first_message
    else:
        data = orjson.dumps(_normalised(message), option=orjson.OPT_SORT_KEYS)
    return hashlib.sha256(data).hexdigest()[:16]


def _normalised(message: object) -> object:
    """One spelling for a message however its cache marker and text blocks were written."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    blocks = [
        {k: v for k, v in block.items() if k != "cache_control"}
        if isinstance(block, dict)
        else block
        for block in message["content"]
    ]
    content: object = blocks
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].keys() == {"type", "text"}:
        only = blocks[0]
        if only["type"] == "text" and isinstance(only["text"], str):
            content = only["text"]
    return {**message, "content": content}


def build_manifest(
    head: dict[str, Any],
    *,
    depth: int,
    chain: str | None,
    why: str | None,
    keys: BodyKeys,
    blobs: list[int],
    segs: list[list[Any]],
) -> dict[str, Any]:
    meta = {**head, "depth": depth}
    if chain:
        meta["chain"] = chain
    if why:
        meta["why"] = why
    meta["keys"] = keys.as_dict()
    meta["blobs"] = blobs
    meta["segs"] = segs
    return meta


def whole_record(
    head: dict[str, Any], body: bytes, keys: BodyKeys, chain: str | None, why: str
) -> Record:
    meta = build_manifest(
        head, depth=0, chain=chain, why=why, keys=keys, blobs=[len(body)], segs=[["lit", 0]]
    )
    return Record(meta=meta, payload=bytes(body))


def dumps_meta(value: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as err:
        raise CodecError(f"not serialisable as JSON: {err}") from None


def is_int(value: object) -> bool:
    return type(value) is int  # JSON gives exact ints; a bool is not a count


def field_of(meta: dict[str, Any], name: str, kind: type) -> Any:
    value = meta.get(name)
    if not isinstance(value, kind):
        raise CodecError(f"{name} is missing or not a {kind.__name__}")
    return value


def count_of(meta: dict[str, Any], name: str, limit: int) -> int:
    value = meta.get(name)
    if type(value) is not int or not 0 <= value <= limit:  # JSON gives exact ints; no bools
        raise CodecError(f"{name} is not a whole number from 0 to {limit}")
    return value


def check_keys(keys: dict[str, Any]) -> None:
    for name, value in keys.items():
        if name not in _KEY_NAMES or not isinstance(value, str):
            raise CodecError(f"keys holds {name!r}, which is not a body key")


def blob_views(lengths: list[Any], payload: bytes) -> list[memoryview]:
    views: list[memoryview] = []
    view = memoryview(payload)
    size = len(payload)
    pos = 0
    for length in lengths:
        end = pos + length if type(length) is int and length >= 0 else size + 1
        if end > size:
            raise CodecError("the blob lengths do not fit the payload")
        views.append(view[pos:end])
        pos = end
    if pos != size:
        raise CodecError("the blob lengths do not add up to the payload")
    return views


def referenced_pieces(meta: dict[str, Any]) -> set[str]:
    """The digests of the pieces a manifest names by ``ref``."""
    segs = meta.get("segs")
    return {
        seg[1]
        for seg in (segs if isinstance(segs, list) else [])
        if isinstance(seg, list) and len(seg) == 2 and seg[0] == "ref" and isinstance(seg[1], str)
    }


def new_pieces(record: Record) -> Iterator[tuple[str, bytes]]:
    """``(digest, bytes)`` of every piece a record holds as ``new``, in segment order; a
    manifest whose blobs do not fit gives none (reading it properly says why)."""
    blobs, segs = record.meta.get("blobs"), record.meta.get("segs")
    if not isinstance(blobs, list) or not isinstance(segs, list):
        return
    starts = [0, *itertools.accumulate(n if is_int(n) else 0 for n in blobs)]
    for seg in segs:
        if isinstance(seg, list) and len(seg) == 2 and seg[0] == "new":
            index = seg[1]
            if is_int(index) and 0 <= index < len(blobs):
                piece = record.payload[starts[index] : starts[index + 1]]
                yield hashlib.sha256(piece).hexdigest(), piece
