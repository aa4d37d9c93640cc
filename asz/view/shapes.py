"""What of a request decides what the prompt cache can reuse: its shape, read incrementally.

A request's shape is its model, tools, system blocks, betas, effort and thinking settings, its
messages (each normalised and interned to a small int) and the lifetime its newest marker
asks for. A session's requests are each 0.5-1 MB, and each resends the one before it with a
few messages added, so :class:`ShapeReader` reads a request from where it stops repeating the
previous request of its chain: the store's scanner (``scan_rest``) finds where the new
messages start and end, only those are parsed, and the members around the ``messages`` array
are parsed without it. The first request of a chain, and any request this cannot read (a
body the scanner does not take), is parsed whole (:func:`shape_of`); both ways give equal
shapes.
"""

from __future__ import annotations

import hashlib
import itertools
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import orjson

from asz.store.codec import common_prefix
from asz.store.scan import Layout, NotCuttable, scan_body, scan_rest

SHORT_TTL = 5 * 60
LONG_TTL = 60 * 60
BILLING_PREFIX = "x-anthropic-billing-header:"
KEPT_BASES = 16
"""Requests kept (bytes and cut) as bases for the next request of their chain."""
_WS = b" \t\n\r"


class Interner:
    """Small ints for equal normalised values, so a request's shape costs a few bytes a part.

    Successive requests resend the same messages spelled the same way, so a value is first
    looked up by its exact bytes, and normalised and digested only the first time it is seen.
    """

    def __init__(self) -> None:
        self._by_bytes: dict[bytes, int] = {}
        self._by_digest: dict[bytes, int] = {}

    def __call__(self, value: object, normalise: Callable[[object], object]) -> int:
        raw = orjson.dumps(value)
        known = self._by_bytes.get(raw)
        if known is None:
            data = orjson.dumps(normalise(value), option=orjson.OPT_SORT_KEYS)
            digest = hashlib.blake2b(data, digest_size=16).digest()
            known = self._by_digest.setdefault(digest, len(self._by_digest))
            self._by_bytes[raw] = known
        return known


@dataclass(slots=True)
class Shape:
    """What of a request decides what the cache can reuse, each part normalised and interned."""

    model: object
    tools: dict[str, int]
    system: list[int]
    betas: object
    effort: object
    thinking: object
    messages: array[int]
    roles: list[str]
    ttl: int
    """Lifetime in seconds of what this request writes: its newest marker's."""


def shape_of(request: dict[str, Any], intern: Interner) -> Shape:
    """The shape of a request parsed whole."""
    messages = request.get("messages")
    listed = messages if isinstance(messages, list) else []
    return _shape(request, intern, [_message_of(message, intern) for message in listed])


def _shape(request: dict[str, Any], intern: Interner, messages: list[_Message]) -> Shape:
    """The shape of ``request`` whose messages (read apart from it) are ``messages``."""
    tools: dict[str, int] = {}
    raw_tools = request.get("tools")
    listed_tools = raw_tools if isinstance(raw_tools, list) else []
    for n, tool in enumerate(listed_tools):
        name = tool.get("name") if isinstance(tool, dict) else None
        tools[name if isinstance(name, str) else f"#{n}"] = intern(tool, _unmarked)
    system = request.get("system")
    blocks = system if isinstance(system, list) else [] if system is None else [system]
    output = request.get("output_config")
    # The lifetime the last marker of the request asks for: messages, then system, tools.
    ttl = next((message.ttl for message in reversed(messages) if message.ttl is not None), None)
    if ttl is None:
        ttl = _newest_ttl_of(itertools.chain(reversed(blocks), reversed(listed_tools)))
    return Shape(
        model=request.get("model"),
        tools=tools,
        system=[intern(BILLING_PREFIX if _is_billing(b) else b, _unmarked) for b in blocks],
        betas=request.get("betas"),
        effort=output.get("effort") if isinstance(output, dict) else None,
        thinking=request.get("thinking"),
        messages=array("q", (message.id for message in messages)),
        roles=[message.role for message in messages],
        ttl=SHORT_TTL if ttl is None else ttl,
    )


def _message_of(value: object, intern: Interner) -> _Message:
    if not isinstance(value, dict):
        return _Message(intern(value, normalised_message), "?", None)
    ttl = _newest_ttl_of(reversed(_content(value)))
    return _Message(intern(value, normalised_message), str(value.get("role")), ttl)


def normalised_message(message: object) -> object:
    """One spelling of a message: markers dropped from its blocks, and a content of exactly
    one ``{"type":"text","text":…}`` block written as the plain string."""
    if not isinstance(message, dict) or not isinstance(message.get("content"), list):
        return message
    blocks = [_unmarked(block) for block in message["content"]]
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].keys() == {"type", "text"}:
        only = blocks[0]
        if only["type"] == "text" and isinstance(only["text"], str):
            return {**message, "content": only["text"]}
    return {**message, "content": blocks}


def _unmarked(value: object) -> object:
    if isinstance(value, dict) and "cache_control" in value:
        return {k: v for k, v in value.items() if k != "cache_control"}
    return value


def _is_billing(block: object) -> bool:
    text = block.get("text") if isinstance(block, dict) else block
    return isinstance(text, str) and text.startswith(BILLING_PREFIX)


def _content(message: dict[str, Any]) -> list[Any]:
    content = message.get("content")
    return content if isinstance(content, list) else []


@dataclass(frozen=True, slots=True)
class _Message:
    """One message as a shape needs it."""

    id: int
    role: str
    ttl: int | None
    """The lifetime its newest marker asks for; None without a marker."""


@dataclass(frozen=True, slots=True)
class _Read:
    """A request as the base of the next one of its chain."""

    body: bytes
    cut: Layout
    messages: list[_Message]


class ShapeReader:
    """Shapes of a session's requests, each read from where it stops repeating its base."""

    def __init__(self) -> None:
        self.intern = Interner()
        self._messages: dict[bytes, _Message] = {}
        self._bases: OrderedDict[str, _Read] = OrderedDict()

    def shape(self, record_id: str, body: bytes, base_id: str | None) -> Shape | None:
        """The shape of request ``record_id`` whose bytes are ``body``; None when it is not a
        JSON object. ``base_id`` names the request it continues, read before, if any."""
        base = self._bases.get(base_id) if base_id is not None else None
        try:
            read = self._read(body, base)
            request = orjson.loads(_without_messages(body, read.cut))
        except (NotCuttable, ValueError, orjson.JSONDecodeError):
            return self._whole(body)
        if not isinstance(request, dict):
            return self._whole(body)
        self._bases[record_id] = read
        while len(self._bases) > KEPT_BASES:
            self._bases.popitem(last=False)
        return _shape(request, self.intern, read.messages)

    def _whole(self, body: bytes) -> Shape | None:
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return shape_of(request, self.intern) if isinstance(request, dict) else None

    def _read(self, body: bytes, base: _Read | None) -> _Read:
        """The cut and messages of ``body``; raises what the scanner or orjson raise when
        it cannot be read this way."""
        shared = _shared_marks(body, base) if base is not None else 0
        if base is None or not shared:
            cut = scan_body(body)
            kept: list[_Message] = []
        else:
            # The bytes before the mark are the base's, which was a JSON object; every byte
            # after it is parsed below, piece by piece.
            mark = base.cut.marks[shared - 1]
            cut = scan_rest(body, base.cut, mark, base.body, checked=True)
            kept = base.messages[:shared]
        if cut.first_message is None or cut.messages_end is None:
            raise ValueError("no messages to read")
        starts = [cut.first_message[0], *cut.marks]
        ends = [*cut.marks, cut.messages_end - 1]  # the last ends at the array's "]"
        messages = kept + [
            self._message(_element(body, start, end, last=n == len(starts) - 1))
            for n, (start, end) in enumerate(zip(starts, ends, strict=True))
            if n >= len(kept)
        ]
        return _Read(body, cut, messages)

    def _message(self, raw: bytes) -> _Message:
        known = self._messages.get(raw)
        if known is None:
            known = self._messages[raw] = _message_of(orjson.loads(raw), self.intern)
        return known


def _shared_marks(body: bytes, base: _Read) -> int:
    """How many of the base's marks (the starts of its messages after the first) ``body``
    repeats it up to; as many of its messages are the base's."""
    return bisect_right(base.cut.marks, common_prefix(body, base.body))


def _element(body: bytes, start: int, end: int, *, last: bool) -> bytes:
    """The exact bytes of the array element starting at ``start``: up to ``end`` (the next
    element's start, or the array's ``]``), without the separator and white space."""
    raw = body[start:end].rstrip(_WS)
    if not last:
        if not raw.endswith(b","):
            raise ValueError("no separator between messages")
        raw = raw[:-1].rstrip(_WS)
    return raw


def _without_messages(body: bytes, cut: Layout) -> bytes:
    """The request with an empty ``messages`` array: what is left to parse once the messages
    are read one by one."""
    assert cut.first_message is not None and cut.messages_end is not None
    return body[: cut.first_message[0]] + b"]" + body[cut.messages_end :]


def _newest_ttl_of(blocks: Iterable[Any]) -> int | None:
    """The lifetime the first marker among ``blocks`` asks for; None when none has one."""
    for block in blocks:
        marker = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(marker, dict):
            return LONG_TTL if marker.get("ttl") == "1h" else SHORT_TTL
    return None
