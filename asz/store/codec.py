"""Cut a provider body into a record against what its session holds, and rebuild it exactly.

A Claude Code request resends what the session already has: the tool list, the system prompt
and the whole conversation so far. A record therefore keeps only what is new, and names the
rest: the front the body shares with an earlier body of the session, and the pieces (tool
definitions and long strings, see ``asz.store.scan``) that an earlier record already holds.

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

    Pieces and bodies are named by digest and record id, never by file or position, so records
    can be moved between files whole.

A body that cannot be cut lands whole: ``depth`` 0, ``why`` set, ``blobs`` ``[size]`` and
``segs`` ``[["lit", 0]]``.

How a body is cut: the copy base is the latest request of the body's own chain, else one of the
``OTHER_TIPS`` most recently extended other chains, whichever shares the longest front (ties go
to the earlier candidate), skipping any whose copy would exceed ``MAX_DEPTH``. The copy is
shortened so that it never ends inside a piece and is dropped below ``MIN_COPY`` bytes. The rest
of the body is literal gaps and pieces: a piece the session holds becomes ``ref``, a piece seen
earlier in the same body ``ref`` to that ``new``, and any other piece ``new``.

A session treats every record it is given as untrusted: it checks the claims against what it
holds and against the payload before doing work proportional to them, and holds a record only
once the record rebuilds to the digest it names. Only a record it cuts itself (``take``) is
held on the strength of the cut, compared with the body byte for byte as it is made.
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_left, bisect_right
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import orjson

from asz.bodykeys import BodyKeys
from asz.store.scan import (
    MIN_PIECE,
    NotCuttable,
    Shape,
    require_json_object,
    scan_body,
    scan_rest,
)

__all__ = [
    "CACHE_BYTES",
    "MAX_BODY",
    "MAX_DEPTH",
    "MAX_TIPS",
    "MIN_COPY",
    "MIN_PIECE",
    "OTHER_TIPS",
    "CodecError",
    "IdConflict",
    "Record",
    "Repeat",
    "SessionBodies",
    "chain_of",
    "common_prefix",
]

MIN_COPY = 4096
"""Shortest shared front worth a copy segment; a shorter one lands as literal bytes."""
MAX_DEPTH = 32
"""Most copies between a body and one that copies nothing: bounds the work of one rebuild."""
MAX_BODY = 256 * 1024 * 1024
"""Largest body a record may claim."""
MAX_TIPS = 64
"""Chains whose latest request is kept as a copy candidate; the least recently extended go."""
OTHER_TIPS = 8
"""Other chains' tips compared besides the body's own chain, most recently extended first."""
CACHE_BYTES = 64 * 1024 * 1024
"""Rebuilt bodies kept besides the chain tips, so a copy rarely rebuilds its base again."""

ROLES = ("request", "response")
KEY_NAMES = frozenset(("model", "session", "prompt", "prev_request", "message_id", "request_id"))
_DIGEST = re.compile(r"[0-9a-f]{64}")
_CHAIN = re.compile(r"[0-9a-f]{16}")


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


@dataclass(slots=True)
class _Entry:
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
    meta_json: bytes


@dataclass(frozen=True, slots=True)
class _Scanned:
    """What cutting a body learned that the next body of its chain can use: where its pieces
    are, where a scan may resume (``shape``), and each piece's digest by span."""

    shape: Shape
    digests: dict[tuple[int, int], str]


class SessionBodies:
    """What one session holds: bodies by record id, pieces by SHA-256, chain tips."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        self._entries: dict[str, _Entry] = {}
        self._pieces: dict[str, memoryview] = {}
        self._tips: dict[str, str] = {}  # chain -> record id, least recently extended first
        self._scans: dict[str, _Scanned] = {}  # for the tips this session cut
        self._cache = _BodyCache(cache_bytes)

    def __len__(self) -> int:
        return len(self._entries)

    def holds(self, record_id: str) -> bool:
        return record_id in self._entries

    def meta(self, record_id: str) -> dict[str, Any]:
        """A fresh copy of a held record's manifest (KeyError when not held)."""
        return orjson.loads(self._entries[record_id].meta_json)

    def encode(
        self,
        record_id: str,
        role: str,
        src: str,
        body: bytes,
        keys: BodyKeys,
        *,
        sha256: str | None = None,
        json_object: bool = False,
    ) -> Record:
        """Cut ``body`` against what the session holds. The record is not added.

        ``sha256`` is the body's digest when the caller already has it, and ``json_object``
        says that orjson already parsed the body as a JSON object, so neither is done again.
        Raises Repeat when the id is held with the same digest, IdConflict when it is held with
        other bytes, and CodecError for a role it does not know or a body over ``MAX_BODY``.
        """
        return self._encode(
            record_id, role, src, body, keys, sha256=sha256, json_object=json_object
        )[0]

    def take(
        self,
        record_id: str,
        role: str,
        src: str,
        body: bytes,
        keys: BodyKeys,
        *,
        sha256: str | None = None,
        json_object: bool = False,
    ) -> Record:
        """Cut ``body`` as ``encode`` does and hold the record at once.

        Encoding builds the record's entry as it cuts and compares what that rebuilds to with
        ``body`` byte for byte, so holding it needs no second check: this is the path for
        records this session cuts itself (a store then checks them again, read back from
        disk). Records from anywhere else go through ``add``. A request that becomes its
        chain's tip keeps its body (no rebuild before the next request copies it) and its
        shape (the next request's scan resumes from it).
        """
        record, entry, new_pieces, scanned = self._encode(
            record_id, role, src, body, keys, sha256=sha256, json_object=json_object
        )
        self._hold(entry, new_pieces)
        if self._tips.get(entry.chain or "") == record_id:
            self._cache.put(record_id, bytes(body))
            if scanned is not None:
                self._scans[record_id] = scanned
        return record

    def _encode(
        self,
        record_id: str,
        role: str,
        src: str,
        body: bytes,
        keys: BodyKeys,
        *,
        sha256: str | None,
        json_object: bool,
    ) -> tuple[Record, _Entry, dict[str, memoryview], _Scanned | None]:
        """The record, what holding it adds, and what was learned of the body when it was
        cut."""
        if role not in ROLES:
            raise CodecError(f"{role!r} is not a body role")
        body = bytes(body)  # no copy for bytes; a mutable buffer must not change under the cut
        if len(body) > MAX_BODY:
            raise CodecError(f"the body is {len(body)} bytes, more than {MAX_BODY}")
        _dumps(keys.as_dict())  # a key a manifest cannot carry is the caller's error
        digest = sha256 or hashlib.sha256(body).hexdigest()
        held = self._entries.get(record_id)
        if held is not None:
            if held.sha256 == digest:
                raise Repeat(record_id)
            raise IdConflict(f"{record_id} is held with other bytes")
        head: dict[str, Any] = {
            "id": record_id,
            "role": role,
            "src": src,
            "size": len(body),
            "sha256": digest,
        }
        try:
            if not json_object:
                require_json_object(body)
            chain = self._known_front(body) if role == "request" else None
            if chain is None:
                shape = scan_body(body, checked=True)
                first = shape.first_message
                chain = chain_of(body[first[0] : first[1]]) if role == "request" and first else None
                base, length = self._copy_base(body, chain)
            else:
                base, length = self._copy_base(body, chain)
                shape = self._shape_after(body, base, length)
        except NotCuttable as err:
            return self._resolved(_whole(head, body, keys, None, err.why))
        record, entry, new_pieces, digests = self._cut(
            head, body, keys, shape, chain, base=base, pos=length
        )
        try:
            self._require_rebuilds_to(entry, body)
        except CodecError as err:
            why = f"the cut record does not rebuild the body: {err}"
            return self._resolved(_whole(head, body, keys, chain, why))
        return record, entry, new_pieces, _Scanned(shape, digests)

    def _resolved(
        self, record: Record
    ) -> tuple[Record, _Entry, dict[str, memoryview], _Scanned | None]:
        return (record, *self._resolve(record), None)

    def _known_front(self, body: bytes) -> str | None:
        """The chain of a request that repeats a tip's front through that tip's first message.

        Then its first message is the tip's, byte for byte, and so is its chain: the chain
        is known without scanning the body. The byte after the first message is compared too,
        since a number could go on past it.
        """
        for chain, record_id in reversed(self._tips.items()):
            scanned = self._scans.get(record_id)
            tip = self._cache.get(record_id)
            if scanned is None or scanned.shape.first_message is None or tip is None:
                continue
            end = scanned.shape.first_message[1] + 1
            if body.startswith(memoryview(tip)[:end]):
                return chain
        return None

    def _shape_after(self, body: bytes, base: _Entry | None, length: int) -> Shape:
        """The body's shape, scanned only from the base's last mark within the shared front."""
        scanned = self._scans.get(base.record_id) if base is not None else None
        if base is not None and scanned is not None:
            shape = scanned.shape
            i = bisect_right(shape.marks, length) - 1
            if i >= 0:
                base_body = self._body(base.record_id)
                return scan_rest(body, shape, shape.marks[i], base_body, checked=True)
        return scan_body(body, checked=True)

    def add(self, record: Record) -> None:
        """Check an untrusted record against what is held, and hold it.

        Raises CodecError when it does not hold (IdConflict when its id is held with another
        digest) and Repeat when the same record is already held.
        """
        entry, new_pieces = self._resolve(record)
        held = self._entries.get(entry.record_id)
        if held is not None and held.sha256 != entry.sha256:
            raise IdConflict(f"{entry.record_id} is held with other bytes")
        self._verify(entry)
        if held is not None:
            raise Repeat(entry.record_id)
        self._hold(entry, new_pieces)

    def _hold(self, entry: _Entry, new_pieces: dict[str, memoryview]) -> None:
        self._entries[entry.record_id] = entry
        for digest, view in new_pieces.items():
            self._pieces.setdefault(digest, view)
        if entry.role == "request" and entry.chain:
            self._extend_chain(entry.chain, entry.record_id)

    def rebuild(self, record_id: str) -> bytes:
        """The exact bytes of a held body."""
        if record_id not in self._entries:
            raise CodecError(f"the session holds no record {record_id}")
        return self._body(record_id)

    def check(self, record: Record) -> bytes:
        """Rebuild a record that is not added, against what is held (a read-back check)."""
        entry, _ = self._resolve(record)
        base = self._body(entry.base) if entry.base is not None else None
        body = self._assemble(entry, base)
        if hashlib.sha256(body).hexdigest() != entry.sha256:
            raise CodecError(f"{entry.record_id} does not rebuild to the digest it names")
        return body

    # -- cutting ---------------------------------------------------------------------------

    def _cut(
        self,
        head: dict[str, Any],
        body: bytes,
        keys: BodyKeys,
        shape: Shape,
        chain: str | None,
        *,
        base: _Entry | None,
        pos: int,
    ) -> tuple[Record, _Entry, dict[str, memoryview], dict[tuple[int, int], str]]:
        """The record of ``body``, copying ``pos`` bytes of ``base``'s front (less where that
        would end inside a piece) and cutting the rest at the shape's pieces; the entry and
        new pieces holding it adds, as resolving the record would make them; and the digests
        of the pieces cut.

        A request usually ends with the same members as its base, at offsets moved by the
        length it added: a piece whose bytes equal the base's piece there has its digest."""
        view = memoryview(body)
        segs: list[list[Any]] = []
        blobs: list[int] = []
        parts: list[memoryview] = []
        tail: list[int | str] = []  # after the copy: own blob indexes and referenced digests

        def own(kind: str, start: int, end: int) -> None:
            segs.append([kind, len(blobs)])
            tail.append(len(blobs))
            blobs.append(end - start)
            parts.append(view[start:end])

        # Never end inside a piece: stop at the start of the piece the front runs into.
        pieces = shape.pieces
        i = bisect_left(pieces, (pos, 0)) - 1
        if i >= 0 and pieces[i][1] > pos:
            pos = pieces[i][0]
        if pos < MIN_COPY:
            base, pos = None, 0
        copy_len = pos
        depth = 0
        if base is not None:
            segs.append(["copy", base.record_id, base.sha256, pos])
            depth = base.depth + 1
        new_here: dict[str, int] = {}  # digest -> own blob index
        digests: dict[tuple[int, int], str] = {}
        known = self._scans.get(base.record_id) if base is not None else None
        base_view, moved = memoryview(b""), 0
        if base is not None and known is not None:
            base_view = memoryview(self._body(base.record_id))
            moved = len(body) - len(base_view)
        for start, end in shape.pieces[bisect_left(shape.pieces, (pos, 0)) :]:
            if start > pos:
                own("lit", pos, start)
            digest = known.digests.get((start - moved, end - moved)) if known else None
            if digest is None or not body.startswith(base_view[start - moved : end - moved], start):
                digest = hashlib.sha256(view[start:end]).hexdigest()
            digests[start, end] = digest
            if digest in self._pieces or digest in new_here:
                segs.append(["ref", digest])
                tail.append(digest)
            else:
                new_here[digest] = len(blobs)
                own("new", start, end)
            pos = end
        if pos < len(body):
            own("lit", pos, len(body))
        meta = _manifest(
            head, depth=depth, chain=chain, why=None, keys=keys, blobs=blobs, segs=segs
        )
        record = Record(meta=meta, payload=b"".join(parts))
        views = _blob_views(blobs, record.payload)
        new_pieces = {digest: views[i] for digest, i in new_here.items()}
        entry = _Entry(
            record_id=head["id"],
            role=head["role"],
            size=len(body),
            sha256=head["sha256"],
            depth=depth,
            chain=chain,
            base=base.record_id if base is not None else None,
            copy_len=copy_len,
            tail=[self._tail_view(part, views, new_pieces) for part in tail],
            meta_json=_dumps(meta),
        )
        return record, entry, new_pieces, digests

    def _tail_view(
        self, part: int | str, views: list[memoryview], new_pieces: dict[str, memoryview]
    ) -> memoryview:
        """An own blob by index, or a piece by digest: this record's own first."""
        if isinstance(part, int):
            return views[part]
        return new_pieces[part] if part in new_pieces else self._pieces[part]

    def _copy_base(self, body: bytes, chain: str | None) -> tuple[_Entry | None, int]:
        """The candidate sharing the longest front with ``body``, and how long that front is."""
        best: _Entry | None = None
        best_len = 0
        for record_id in self._candidates(chain):
            entry = self._entries[record_id]
            if entry.depth + 1 > MAX_DEPTH:
                continue
            try:
                shared = common_prefix(body, self._body(record_id))
            except CodecError:
                continue
            if shared > best_len:
                best, best_len = entry, shared
        return best, best_len

    def _candidates(self, chain: str | None) -> list[str]:
        own = self._tips.get(chain) if chain else None
        others = [rid for c, rid in reversed(self._tips.items()) if c != chain][:OTHER_TIPS]
        return [own, *others] if own else others

    def _extend_chain(self, chain: str, record_id: str) -> None:
        replaced = self._tips.pop(chain, None)
        if replaced is not None:
            self._cache.unpin(replaced)
            self._scans.pop(replaced, None)
        self._tips[chain] = record_id
        self._cache.pin(record_id)
        if len(self._tips) > MAX_TIPS:
            oldest = self._tips.pop(next(iter(self._tips)))
            self._cache.unpin(oldest)
            self._scans.pop(oldest, None)

    # -- checking and rebuilding -----------------------------------------------------------

    def _resolve(self, record: Record) -> tuple[_Entry, dict[str, memoryview]]:
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
        record_id = _field(meta, "id", str)
        if not record_id:
            raise CodecError("the record has no id")
        role = _field(meta, "role", str)
        if role not in ROLES:
            raise CodecError(f"{role!r} is not a body role")
        _field(meta, "src", str)
        size = _count(meta, "size", MAX_BODY)
        depth = _count(meta, "depth", MAX_DEPTH)
        digest = _field(meta, "sha256", str)
        if not _DIGEST.fullmatch(digest):
            raise CodecError("sha256 is not 64 lowercase hex digits")
        chain = meta.get("chain")
        if chain is not None and not (isinstance(chain, str) and _CHAIN.fullmatch(chain)):
            raise CodecError("chain is not 16 lowercase hex digits")
        if "why" in meta:
            _field(meta, "why", str)
        _check_keys(_field(meta, "keys", dict))
        blobs = _blob_views(_field(meta, "blobs", list), payload)
        segs = _field(meta, "segs", list)

        base: _Entry | None = None
        copy_len = 0
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
                view = new_pieces.get(seg[1])
                if view is None:
                    view = self._pieces.get(seg[1])
                if view is None:
                    raise CodecError(f"segment {n} names a piece the session does not hold")
            elif kind == "copy":
                if n != 0:
                    raise CodecError(f"segment {n} is a copy that is not the first segment")
                base, copy_len = self._copy_of(seg)
                total = copy_len
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
        entry = _Entry(
            record_id=record_id,
            role=role,
            size=size,
            sha256=digest,
            depth=depth,
            chain=chain,
            base=base.record_id if base is not None else None,
            copy_len=copy_len,
            tail=tail,
            meta_json=_dumps(meta),
        )
        return entry, new_pieces

    def _copy_of(self, seg: list[Any]) -> tuple[_Entry, int]:
        if len(seg) != 4:
            raise CodecError('segment 0 is not ["copy", id, digest, length]')
        _, base_id, base_digest, length = seg
        base = self._entries.get(base_id) if isinstance(base_id, str) else None
        if base is None:
            raise CodecError("the copy names a body the session does not hold")
        if base_digest != base.sha256:
            raise CodecError(f"the copy names {base_id} with another digest")
        if not _is_int(length) or not 0 <= length <= base.size:
            raise CodecError(f"the copy length is not within the {base.size} bytes of {base_id}")
        return base, length

    def _verify(self, entry: _Entry) -> None:
        """Hash what the record rebuilds to, part by part, without building it."""
        digest = hashlib.sha256()
        if entry.base is not None:
            digest.update(memoryview(self._body(entry.base))[: entry.copy_len])
        for view in entry.tail:
            digest.update(view)
        if digest.hexdigest() != entry.sha256:
            raise CodecError(f"{entry.record_id} does not rebuild to the digest it names")

    def _require_rebuilds_to(self, entry: _Entry, body: bytes) -> None:
        """Compare what the record rebuilds to with ``body``, part by part, without building it."""
        pos = 0
        if entry.base is not None:
            pos = entry.copy_len
            if not body.startswith(memoryview(self._body(entry.base))[:pos]):
                raise CodecError("the copy does not give the body's front")
        for view in entry.tail:
            if not body.startswith(view, pos):
                raise CodecError(f"the segments differ from the body at byte {pos}")
            pos += len(view)

    def _body(self, record_id: str) -> bytes:
        """Rebuild a held body, walking its copies down to a cached or copy-free body and up."""
        pending: list[_Entry] = []
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

    def _assemble(self, entry: _Entry, base: bytes | None) -> bytes:
        """Join an entry's parts. The digest of a held entry is not taken again: an entry is
        held only once these very parts were proven to give it, hashed part by part
        (``_verify``, for an untrusted record) or compared with the body it was cut from
        (``take``); :meth:`check`, which holds nothing, takes it itself."""
        parts = entry.tail
        if entry.base is not None:
            assert base is not None
            parts = [memoryview(base)[: entry.copy_len], *parts]
        body = b"".join(parts)
        if len(body) != entry.size:
            raise CodecError(f"{entry.record_id} does not rebuild to the size it names")
        return body


class _BodyCache:
    """Rebuilt bodies: the chain tips' for as long as they are tips, others within a budget.

    Tips are what the next body of each chain copies from, so they stay; other bodies are kept
    least recently used first out, and the latest one is kept even when it alone is over budget.
    """

    def __init__(self, budget: int) -> None:
        self._budget = budget
        self._pinned: dict[str, bytes | None] = {}
        self._recent: OrderedDict[str, bytes] = OrderedDict()
        self._recent_bytes = 0

    def get(self, record_id: str) -> bytes | None:
        body = self._pinned.get(record_id)
        if body is None and record_id in self._recent:
            self._recent.move_to_end(record_id)
            body = self._recent[record_id]
        return body

    def put(self, record_id: str, body: bytes) -> None:
        if record_id in self._pinned:
            self._pinned[record_id] = body
        else:
            self._remember(record_id, body)

    def pin(self, record_id: str) -> None:
        body = self._recent.pop(record_id, None)
        if body is not None:
            self._recent_bytes -= len(body)
        self._pinned[record_id] = body

    def unpin(self, record_id: str) -> None:
        body = self._pinned.pop(record_id, None)
        if body is not None:
            self._remember(record_id, body)

    def _remember(self, record_id: str, body: bytes) -> None:
        old = self._recent.pop(record_id, None)
        if old is not None:
            self._recent_bytes -= len(old)
        self._recent[record_id] = body
        self._recent_bytes += len(body)
        while self._recent_bytes > self._budget and len(self._recent) > 1:
            _, dropped = self._recent.popitem(last=False)
            self._recent_bytes -= len(dropped)


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


def common_prefix(a: bytes, b: bytes) -> int:
    """Length of the longest common prefix of ``a`` and ``b``.

    ``startswith`` on a memoryview slice compares in C without copying; bisecting on it finds
    the first difference in O(log n) comparisons that each stop at the first differing byte.
    """
    view = memoryview(b)
    n = min(len(a), len(b))
    if a.startswith(view[:n]):
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo] and a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.startswith(view[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def _manifest(
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


def _whole(
    head: dict[str, Any], body: bytes, keys: BodyKeys, chain: str | None, why: str
) -> Record:
    meta = _manifest(
        head, depth=0, chain=chain, why=why, keys=keys, blobs=[len(body)], segs=[["lit", 0]]
    )
    return Record(meta=meta, payload=bytes(body))


def _dumps(value: dict[str, Any]) -> bytes:
    try:
        return orjson.dumps(value)
    except orjson.JSONEncodeError as err:
        raise CodecError(f"not serialisable as JSON: {err}") from None


def _is_int(value: object) -> bool:
    return type(value) is int  # JSON gives exact ints; a bool is not a count


def _field(meta: dict[str, Any], name: str, kind: type) -> Any:
    value = meta.get(name)
    if not isinstance(value, kind):
        raise CodecError(f"{name} is missing or not a {kind.__name__}")
    return value


def _count(meta: dict[str, Any], name: str, limit: int) -> int:
    value = meta.get(name)
    if not _is_int(value) or not 0 <= value <= limit:
        raise CodecError(f"{name} is not a whole number from 0 to {limit}")
    return value


def _check_keys(keys: dict[str, Any]) -> None:
    for name, value in keys.items():
        if name not in KEY_NAMES or not isinstance(value, str):
            raise CodecError(f"keys holds {name!r}, which is not a body key")


def _blob_views(lengths: list[Any], payload: bytes) -> list[memoryview]:
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
