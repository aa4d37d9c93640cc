"""Cut a provider body into a record against what its session holds.

A Claude Code request resends what the session already has: the tool list, the system prompt
and the whole conversation so far. A record therefore keeps only what is new, and names the
rest: the front the body shares with an earlier body of the session, and the pieces (tool
definitions and long strings, see ``asz.store._scan``) that an earlier record already holds.

The record format is :mod:`asz.store._manifest`; holding records and rebuilding bodies is
:mod:`asz.store._held`, which :class:`SessionBodies` extends with cutting.

How a body is cut: the copy base is the latest request of the body's own chain, else one of the
``OTHER_TIPS`` most recently extended other chains, whichever shares the longest front (ties go
to the earlier candidate), skipping any whose copy would exceed ``MAX_DEPTH``. The copy is
shortened so that it never ends inside a piece and is dropped below ``MIN_COPY`` bytes. The end
the body shares with the same base (a request's system prompt, tools and settings, after the
messages that grew) is one ``suffix``, likewise never starting inside a piece and dropped below
``MIN_COPY``: named piece by piece, it cost a digest and an index per tool in every request, and
the indexes shift whenever a request adds a blob, which spoils the compression of a session's
records. The rest of the body is literal gaps and pieces: a piece the session holds becomes
``ref``, a piece seen earlier in the same body ``ref`` to that ``new``, and any other piece
``new``.

A session treats every record it is given as untrusted: it checks the claims against what it
holds and against the payload before doing work proportional to them, and holds a record only
once the record rebuilds to the digest it names. Only a record it cuts itself (``take``) is
held on the strength of the cut, compared with the body byte for byte as it is made.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from typing import Any

from asz.bodykeys import BodyKeys
from asz.store._bodycache import CACHE_BYTES
from asz.store._held import MAX_TIPS, Entry, HeldBodies
from asz.store._manifest import (
    MAX_BODY,
    MAX_DEPTH,
    ROLES,
    CodecError,
    IdConflict,
    Record,
    Repeat,
    blob_views,
    build_manifest,
    chain_of,
    dumps_meta,
    whole_record,
)
from asz.store._scan import (
    MIN_PIECE,
    Layout,
    NotCuttable,
    require_json_object,
    scan_body,
    scan_rest,
)

__all__ = [
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
    "common_suffix",
]

MIN_COPY = 4096
"""Shortest shared front or end worth a copy or suffix segment; a shorter one lands as it
would without it."""
OTHER_TIPS = 8
"""Other chains' tips compared besides the body's own chain, most recently extended first."""


@dataclass(frozen=True, slots=True)
class _Scanned:
    """What cutting a body learned that the next body of its chain can use: where its pieces
    are, where a scan may resume (``layout``), and each piece's digest by span."""

    layout: Layout
    digests: dict[tuple[int, int], str]


class SessionBodies(HeldBodies):
    """What one session holds, and the cutting of new bodies against it."""

    def __init__(self, cache_bytes: int = CACHE_BYTES) -> None:
        super().__init__(cache_bytes)
        self._scans: dict[str, _Scanned] = {}  # for the tips this session cut

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
        layout (the next request's scan resumes from it).
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
    ) -> tuple[Record, Entry, dict[str, memoryview], _Scanned | None]:
        """The record, what holding it adds, and what was learned of the body when it was
        cut."""
        if role not in ROLES:
            raise CodecError(f"{role!r} is not a body role")
        body = bytes(body)  # no copy for bytes; a mutable buffer must not change under the cut
        if len(body) > MAX_BODY:
            raise CodecError(f"the body is {len(body)} bytes, more than {MAX_BODY}")
        dumps_meta(keys.as_dict())  # a key a manifest cannot carry is the caller's error
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
                layout = scan_body(body, checked=True)
                first = layout.first_message
                chain = chain_of(body[first[0] : first[1]]) if role == "request" and first else None
                base, length = self._copy_base(body, chain)
            else:
                base, length = self._copy_base(body, chain)
                layout = self._layout_after(body, base, length)
        except NotCuttable as err:
            return self._resolved(whole_record(head, body, keys, None, err.why))
        record, entry, new_pieces, digests = self._cut(
            head, body, keys, layout, chain, base=base, pos=length
        )
        try:
            self._require_rebuilds_to(entry, body)
        except CodecError as err:
            why = f"the cut record does not rebuild the body: {err}"
            return self._resolved(whole_record(head, body, keys, chain, why))
        return record, entry, new_pieces, _Scanned(layout, digests)

    def _resolved(
        self, record: Record
    ) -> tuple[Record, Entry, dict[str, memoryview], _Scanned | None]:
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
            if scanned is None or scanned.layout.first_message is None or tip is None:
                continue
            end = scanned.layout.first_message[1] + 1
            if body.startswith(memoryview(tip)[:end]):
                return chain
        return None

    def _layout_after(self, body: bytes, base: Entry | None, length: int) -> Layout:
        """The body's layout, scanned only from the base's last mark within the shared front."""
        scanned = self._scans.get(base.record_id) if base is not None else None
        if base is not None and scanned is not None:
            layout = scanned.layout
            i = bisect_right(layout.marks, length) - 1
            if i >= 0:
                base_body = self._body(base.record_id)
                return scan_rest(body, layout, layout.marks[i], base_body, checked=True)
        return scan_body(body, checked=True)

    def _cut(
        self,
        head: dict[str, Any],
        body: bytes,
        keys: BodyKeys,
        layout: Layout,
        chain: str | None,
        *,
        base: Entry | None,
        pos: int,
    ) -> tuple[Record, Entry, dict[str, memoryview], dict[tuple[int, int], str]]:
        """The record of ``body``, copying ``pos`` bytes of ``base``'s front (less where that
        would end inside a piece) and cutting the rest at the layout's pieces; the entry and
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
        pieces = layout.pieces
        i = bisect_left(pieces, (pos, 0)) - 1
        if i >= 0 and pieces[i][1] > pos:
            pos = pieces[i][0]
        if pos < MIN_COPY:
            base, pos = None, 0
        copy_len = pos
        depth = 0
        own_end = len(body)
        if base is not None:
            segs.append(["copy", base.record_id, base.sha256, pos])
            depth = base.depth + 1
            own_end = self._suffix_start(body, self._body(base.record_id), pos, pieces)
        new_here: dict[str, int] = {}  # digest -> own blob index
        digests: dict[tuple[int, int], str] = {}
        known = self._scans.get(base.record_id) if base is not None else None
        base_view, moved = memoryview(b""), 0
        if base is not None and known is not None:
            base_view = memoryview(self._body(base.record_id))
            moved = len(body) - len(base_view)
        for start, end in pieces[bisect_left(pieces, (pos, 0)) : bisect_left(pieces, (own_end, 0))]:
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
        if pos < own_end:
            own("lit", pos, own_end)
        if own_end < len(body):
            segs.append(["suffix", len(body) - own_end])
        meta = build_manifest(
            head, depth=depth, chain=chain, why=None, keys=keys, blobs=blobs, segs=segs
        )
        record = Record(meta=meta, payload=b"".join(parts))
        views = blob_views(blobs, record.payload)
        new_pieces = {digest: views[i] for digest, i in new_here.items()}
        entry = Entry(
            record_id=head["id"],
            role=head["role"],
            size=len(body),
            sha256=head["sha256"],
            depth=depth,
            chain=chain,
            base=base.record_id if base is not None else None,
            copy_len=copy_len,
            tail=[self._tail_view(part, views, new_pieces) for part in tail],
            suffix_len=len(body) - own_end,
        )
        return record, entry, new_pieces, digests

    @staticmethod
    def _suffix_start(
        body: bytes, base: bytes, copy_len: int, pieces: list[tuple[int, int]]
    ) -> int:
        """Where the end ``body`` shares with ``base`` starts, after the copied front and never
        inside a piece; ``len(body)`` when that end is shorter than ``MIN_COPY``."""
        start = len(body) - common_suffix(body, base, len(body) - copy_len)
        i = bisect_left(pieces, (start, 0)) - 1
        if i >= 0 and pieces[i][1] > start:
            start = pieces[i][1]
        return start if len(body) - start >= MIN_COPY else len(body)

    def _tail_view(
        self, part: int | str, views: list[memoryview], new_pieces: dict[str, memoryview]
    ) -> memoryview:
        """An own blob by index, or a piece by digest: this record's own first."""
        if isinstance(part, int):
            return views[part]
        return new_pieces[part] if part in new_pieces else self._pieces[part]

    def _copy_base(self, body: bytes, chain: str | None) -> tuple[Entry | None, int]:
        """The candidate sharing the longest front with ``body``, and how long that front is."""
        best: Entry | None = None
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

    def _require_rebuilds_to(self, entry: Entry, body: bytes) -> None:
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
        if entry.suffix_len:
            assert entry.base is not None
            base = memoryview(self._body(entry.base))
            if pos + entry.suffix_len != len(body) or not body.endswith(
                base[len(base) - entry.suffix_len :]
            ):
                raise CodecError("the suffix does not give the body's end")

    def _forget_tip(self, record_id: str) -> None:
        super()._forget_tip(record_id)
        self._scans.pop(record_id, None)


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


def common_suffix(a: bytes, b: bytes, limit: int) -> int:
    """Length of the longest common suffix of ``a`` and ``b``, at most ``limit``; bisected on
    ``endswith`` as :func:`common_prefix` is on ``startswith``."""
    view = memoryview(b)
    n = max(0, min(len(a), len(b), limit))
    if a.endswith(view[len(b) - n :]):
        return n
    lo, hi = 0, n  # a ends with b's last lo bytes and not with its last hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.endswith(view[len(b) - mid : len(b) - lo], 0, len(a) - lo):
            lo = mid
        else:
            hi = mid
    return lo
