"""Holding a session's body records and rebuilding any of them exactly.

A record (see :mod:`asz.store._manifest`) names bodies and pieces held before it, so a session's
records are held in landing order: each is checked against what is held and against its own
payload before anything proportional to its claims is built, and held only once it rebuilds to
the digest it names. Rebuilding walks a body's copies down to a cached or copy-free body and up
again; the chain tips (what the next request of each chain copies from) stay cached.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from asz.store._bodycache import CACHE_BYTES, BodyCache
from asz.store._manifest import (
    CHAIN_PATTERN,
    DIGEST_PATTERN,
    MAX_BODY,
    MAX_DEPTH,
    ROLES,
    CodecError,
    IdConflict,
    Record,
    Repeat,
    blob_views,
    check_keys,
    count_of,
    field_of,
    is_int,
)

__all__ = ["MAX_TIPS", "Entry", "HeldBodies"]

MAX_TIPS = 64
"""Chains whose latest request is kept as a copy candidate; the least recently extended go."""


@dataclass(slots=True)
class Entry:
    """A checked record with every reference resolved to the bytes it names."""

    record_id: str
    role: str
    size: int
    sha256: str
    depth: int
    chain: str | None
    base: str | None
    copy_len: int
    tail: list[memoryview]
    """The parts between the copied front and the suffix: own blobs and pieces."""
    suffix_len: int = 0
    """How many of the body's last bytes are the base's last bytes (a ``suffix`` segment)."""
    starts: list[int] | None = None
    """Where each part of ``tail`` starts in the body: made the first time a span of it is
    read, so landing, which reads no span, never pays for it."""


def _tail_starts(copy_len: int, tail: list[memoryview]) -> list[int]:
    """Where each part of a tail starts in its body."""
    starts, pos = [], copy_len
    for view in tail:
        starts.append(pos)
        pos += len(view)
    return starts


class HeldBodies:
    """What one session holds: bodies by record id, pieces by SHA-256, chain tips."""

    def __init__(self, cache_bytes: int = CACHE_BYTES, *, rebuild_checked: bool = True) -> None:
        """``rebuild_checked=False`` holds a record once its claims hold, without rebuilding
        it to its digest: for readers of spans (:meth:`span`, :meth:`copy_of`) that compare
        bodies through what they share and never hand out a body as exact. Such a holder
        refuses :meth:`rebuild`."""
        self.rebuild_checked = rebuild_checked
        self._entries: dict[str, Entry] = {}
        self._pieces: dict[str, memoryview] = {}
        self._tips: dict[str, str] = {}  # chain -> record id, least recently extended first
        self._cache = BodyCache(cache_bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, record_id: str) -> bool:
        return record_id in self._entries

    def digest(self, record_id: str) -> str:
        """The SHA-256 a held record names (KeyError when not held)."""
        return self._entries[record_id].sha256

    def add(self, record: Record) -> None:
        """Check an untrusted record against what is held, and hold it.

        Raises CodecError when it does not hold (IdConflict when its id is held with another
        digest) and Repeat when the same record is already held.
        """
        entry, new_pieces = self._resolve(record)
        held = self._entries.get(entry.record_id)
        if held is not None and held.sha256 != entry.sha256:
            raise IdConflict(f"{entry.record_id} is held with other bytes")
        if self.rebuild_checked:
            self._verify(entry)
        if held is not None:
            raise Repeat(entry.record_id)
        self._hold(entry, new_pieces)

    def _hold(self, entry: Entry, new_pieces: dict[str, memoryview]) -> None:
        self._entries[entry.record_id] = entry
        for digest, view in new_pieces.items():
            if digest not in self._pieces:
                # A holder that forgets records keeps its pieces apart from their payloads.
                self._pieces[digest] = view if self.rebuild_checked else memoryview(bytes(view))
        if entry.role == "request" and entry.chain:
            self._extend_chain(entry.chain, entry.record_id)

    def rebuild(self, record_id: str) -> bytes:
        """The exact bytes of a held body."""
        if record_id not in self._entries:
            raise CodecError(f"the session holds no record {record_id}")
        if not self.rebuild_checked:
            raise CodecError("records held unchecked give spans, never whole bodies")
        return self._body(record_id)

    def exact(self, record_id: str) -> bytes:
        """The exact bytes of a held body, however it was held: rebuilt, or, from a holder
        that did not prove its records one by one, built from its parts and proven by the
        digest it names (CodecError when they do not give it)."""
        if self.rebuild_checked:
            return self.rebuild(record_id)
        body = self.span(record_id, 0, self.size(record_id))
        if hashlib.sha256(body).hexdigest() != self.digest(record_id):
            raise CodecError(f"{record_id} does not rebuild to the digest it names")
        return body

    def record_ids(self) -> list[str]:
        """Every held record's id, in the order they were held."""
        return list(self._entries)

    def role(self, record_id: str) -> str:
        return self._entries[record_id].role

    def chain(self, record_id: str) -> str | None:
        return self._entries[record_id].chain

    def tips(self) -> list[str]:
        """The latest request of each chain: what the next request may copy from."""
        return list(self._tips.values())

    def forget(self, record_ids: set[str]) -> None:
        """Stop holding records (their pieces stay): for a reader walking a session once, so
        that what it holds is what later records may still name, not the whole session."""
        for record_id in record_ids:
            self._entries.pop(record_id, None)
            self._cache.unpin(record_id)
        self._tips = {chain: tip for chain, tip in self._tips.items() if tip not in record_ids}

    def copy_of(self, record_id: str) -> tuple[str, int] | None:
        """``(base record id, length)`` of the front a held body copies, or None."""
        entry = self._entries[record_id]
        return (entry.base, entry.copy_len) if entry.base is not None else None

    def size(self, record_id: str) -> int:
        return self._entries[record_id].size

    def span(self, record_id: str, start: int, end: int) -> bytes:
        """Bytes ``start:end`` of a held body, built from the parts that cover them alone:
        reading the end of a request costs what that end holds, not the whole body."""
        views: list[memoryview] = []
        self._views(record_id, start, end, views)
        return b"".join(views)

    def _views(self, record_id: str, start: int, end: int, out: list[memoryview]) -> None:
        """Append the parts of bytes ``start:end`` of a held body to ``out``, copying none."""
        entry = self._entries[record_id]
        end = min(end, entry.size)
        if entry.base is not None and start < entry.copy_len:
            self._views(entry.base, start, min(end, entry.copy_len), out)
        own_end = entry.size - entry.suffix_len
        if start < own_end:
            self._tail_views(entry, start, min(end, own_end), out)
        if entry.base is not None and end > own_end:
            moved = self._entries[entry.base].size - entry.size
            self._views(entry.base, max(start, own_end) + moved, end + moved, out)

    @staticmethod
    def _tail_views(entry: Entry, start: int, end: int, out: list[memoryview]) -> None:
        """Append the parts of bytes ``start:end`` that the entry's tail holds."""
        starts = entry.starts
        if starts is None:
            starts = entry.starts = _tail_starts(entry.copy_len, entry.tail)
        first = max(0, bisect_right(starts, start) - 1)
        last = bisect_left(starts, end)
        if first >= last:
            return
        views = entry.tail[first:last]
        views[-1] = views[-1][: end - starts[last - 1]]
        views[0] = views[0][max(0, start - starts[first]) :]
        out.extend(views)

    def check(self, record: Record) -> bytes:
        """Rebuild a record that is not added, against what is held (a read-back check)."""
        entry, _ = self._resolve(record)
        base = self._body(entry.base) if entry.base is not None else None
        body = self._assemble(entry, base)
        if hashlib.sha256(body).hexdigest() != entry.sha256:
            raise CodecError(f"{entry.record_id} does not rebuild to the digest it names")
        return body

    def hold_piece(self, piece: bytes) -> str:
        """Holds ``piece`` under its own digest, so records naming it by ``ref`` resolve; a
        reader that rebuilds one record alone takes its pieces in this way. Returns the digest."""
        data = bytes(piece)
        digest = hashlib.sha256(data).hexdigest()
        self._pieces.setdefault(digest, memoryview(data))
        return digest

    def _extend_chain(self, chain: str, record_id: str) -> None:
        replaced = self._tips.pop(chain, None)
        if replaced is not None:
            self._forget_tip(replaced)
        self._tips[chain] = record_id
        self._cache.pin(record_id)
        if len(self._tips) > MAX_TIPS:
            self._forget_tip(self._tips.pop(next(iter(self._tips))))

    def _forget_tip(self, record_id: str) -> None:
        """A request stopped being a chain's tip: its body need not stay cached."""
        self._cache.unpin(record_id)

    def _resolve(self, record: Record) -> tuple[Entry, dict[str, memoryview]]:
        """Check a record's claims and resolve its segments; also return its new pieces.

        Lengths are summed from what the segments name before anything is built, so a record
        claiming more than it holds, or naming a piece many times over, costs no allocation.
        """
        meta = record.meta
        if not isinstance(meta, dict):
            raise CodecError("the manifest is not a JSON object")
        payload = record.payload
        if isinstance(payload, bytearray | memoryview):
            payload = bytes(payload)  # held views must not see later writes to the buffer
        if not isinstance(payload, bytes):
            raise CodecError("the payload is not bytes")
        record_id = field_of(meta, "id", str)
        if not record_id:
            raise CodecError("the record has no id")
        role = field_of(meta, "role", str)
        if role not in ROLES:
            raise CodecError(f"{role!r} is not a body role")
        field_of(meta, "src", str)
        size = count_of(meta, "size", MAX_BODY)
        depth = count_of(meta, "depth", MAX_DEPTH)
        digest = field_of(meta, "sha256", str)
        if not DIGEST_PATTERN.fullmatch(digest):
            raise CodecError("sha256 is not 64 lowercase hex digits")
        chain = meta.get("chain")
        if chain is not None and not (isinstance(chain, str) and CHAIN_PATTERN.fullmatch(chain)):
            raise CodecError("chain is not 16 lowercase hex digits")
        if "why" in meta:
            field_of(meta, "why", str)
        check_keys(field_of(meta, "keys", dict))
        blobs = blob_views(field_of(meta, "blobs", list), payload)
        segs = field_of(meta, "segs", list)

        base: Entry | None = None
        copy_len = suffix_len = 0
        tail: list[memoryview] = []
        new_pieces: dict[str, memoryview] = {}
        used = [False] * len(blobs)
        count = len(blobs)
        total = 0
        for n, seg in enumerate(segs):
            if type(seg) is not list or not seg:
                raise CodecError(f"segment {n} is not a non-empty list")
            kind = seg[0]
            if kind in ("lit", "new"):
                i = seg[1] if len(seg) == 2 else None
                if type(i) is not int or not 0 <= i < count:
                    raise CodecError(f"segment {n} names no blob of this record")
                if used[i]:
                    raise CodecError(f"segment {n} uses blob {i} again")
                used[i] = True
                view = blobs[i]
                if kind == "new":
                    new_pieces.setdefault(hashlib.sha256(view).hexdigest(), view)
            elif kind == "ref":
                if len(seg) != 2 or not isinstance(seg[1], str):
                    raise CodecError(f'segment {n} is not ["ref", digest]')
                found = new_pieces.get(seg[1])
                if found is None:
                    found = self._pieces.get(seg[1])
                if found is None:
                    raise CodecError(f"segment {n} names a piece the session does not hold")
                view = found
            elif kind == "copy":
                if n != 0:
                    raise CodecError(f"segment {n} is a copy that is not the first segment")
                base, copy_len = self._copy_of(seg)
                total = copy_len
                continue
            elif kind == "suffix":
                if base is None or n != len(segs) - 1:
                    raise CodecError(f"segment {n} is a suffix not last after a copy")
                suffix_len = self._suffix_of(seg, base)
                total += suffix_len  # the last segment: the count is checked below
                continue
            else:
                raise CodecError(f"segment {n} has unknown kind {kind!r}")
            total += len(view)
            if total > size:
                raise CodecError(f"the segments make more than the {size} bytes it claims")
            tail.append(view)
        if total != size:
            raise CodecError(f"the segments make {total} bytes, not the {size} it claims")
        if not all(used):
            raise CodecError(f"blob {used.index(False)} is used by no segment")
        expected_depth = base.depth + 1 if base is not None else 0
        if depth != expected_depth:
            raise CodecError(f"depth is {depth}, not {expected_depth}")
        entry = Entry(
            record_id=record_id,
            role=role,
            size=size,
            sha256=digest,
            depth=depth,
            chain=chain,
            base=base.record_id if base is not None else None,
            copy_len=copy_len,
            tail=tail,
            suffix_len=suffix_len,
        )
        return entry, new_pieces

    def _copy_of(self, seg: list[Any]) -> tuple[Entry, int]:
        if len(seg) != 4:
            raise CodecError('segment 0 is not ["copy", id, digest, length]')
        _, base_id, base_digest, length = seg
        base = self._entries.get(base_id) if isinstance(base_id, str) else None
        if base is None:
            raise CodecError("the copy names a body the session does not hold")
        if base_digest != base.sha256:
            raise CodecError(f"the copy names {base_id} with another digest")
        if not is_int(length) or not 0 <= length <= base.size:
            raise CodecError(f"the copy length is not within the {base.size} bytes of {base_id}")
        return base, length

    @staticmethod
    def _suffix_of(seg: list[Any], base: Entry) -> int:
        """The length a ``["suffix", n]`` segment takes from the end of ``base``."""
        if len(seg) != 2 or not is_int(seg[1]) or not 0 < seg[1] <= base.size:
            raise CodecError(f'the suffix is not ["suffix", n] within the {base.size} bytes copied')
        return int(seg[1])

    def _verify(self, entry: Entry) -> None:
        """Hash what the record rebuilds to, part by part, without building it."""
        digest = hashlib.sha256()
        base = memoryview(self._body(entry.base)) if entry.base is not None else None
        if base is not None:
            digest.update(base[: entry.copy_len])
        for view in entry.tail:
            digest.update(view)
        if base is not None and entry.suffix_len:
            digest.update(base[len(base) - entry.suffix_len :])
        if digest.hexdigest() != entry.sha256:
            raise CodecError(f"{entry.record_id} does not rebuild to the digest it names")

    def _body(self, record_id: str) -> bytes:
        """Rebuild a held body, walking its copies down to a cached or copy-free body and up."""
        pending: list[Entry] = []
        body = self._cache.get(record_id)
        while body is None:
            entry = self._entries[record_id]
            pending.append(entry)
            if entry.base is None:
                break
            record_id = entry.base
            body = self._cache.get(record_id)
        for entry in reversed(pending):
            body = self._assemble(entry, body)
            self._cache.put(entry.record_id, body)
        assert body is not None
        return body

    def _assemble(self, entry: Entry, base: bytes | None) -> bytes:
        """Join an entry's parts. The digest of a held entry is not taken again: an entry is
        held only once these very parts were proven to give it, hashed part by part
        (``_verify``, for an untrusted record) or compared with the body it was cut from
        (``take``); :meth:`check`, which holds nothing, takes it itself."""
        parts = entry.tail
        if entry.base is not None:
            assert base is not None
            view = memoryview(base)
            parts = [view[: entry.copy_len], *parts, view[len(view) - entry.suffix_len :]]
        body = b"".join(parts)
        if len(body) != entry.size:
            raise CodecError(f"{entry.record_id} does not rebuild to the size it names")
        return body
