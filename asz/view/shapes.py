"""What of a request decides what the prompt cache can reuse: its shape, read incrementally.

A request's shape is its model, the Claude Code version its billing block names, its tools
(loaded and deferred apart), system blocks, betas, speed, effort and thinking settings, its
messages (each normalised and interned to a small int) and the lifetime its newest marker
asks for. A session's requests are each 0.5-5 MB, and each resends the one before it with a
few messages added, which its landed record says: it copies the front of an earlier request.
So :class:`ShapeReader` reads a request from the last message that front holds whole: only
the bytes from there on are built from the record's parts (``asz.store.BodyParts``), only the
messages there are parsed, and the members around the ``messages`` array are parsed without
it. What a session costs is then what its requests add, not the sum of their sizes. A
request that copies nothing, or whose record does not read this way, is read whole
(:func:`shape_of`); both ways give equal shapes.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, fields
from typing import Any, Protocol

import orjson

from asz.store import MAX_DEPTH, NotCuttable, array_items_from, common_prefix, message_spans

__all__ = [
    "BILLING_PREFIX",
    "KEPT_OUTERS",
    "KEPT_READS",
    "LONG_TTL",
    "SHORT_TTL",
    "STANDARD_SPEED",
    "Interner",
    "Messages",
    "Parts",
    "Settings",
    "Shape",
    "ShapeReader",
    "first_difference",
    "normalised_message",
    "shape_of",
]

SHORT_TTL = 5 * 60
LONG_TTL = 60 * 60
BILLING_PREFIX = "x-anthropic-billing-header:"
STANDARD_SPEED = "standard"
_CC_VERSION = re.compile(r"(?<![^\s;:])cc_version=([^;\s]+)")
_NUMBERED = re.compile(r"\d+\.\d+\.\d+")
_BILLING_BYTES = BILLING_PREFIX.encode()
_SLACK = 4096
"""Bytes read past where a request's messages should end, before reading to its end."""
KEPT_OUTERS = 16
"""Distinct request fronts and tails kept parsed (a few chains run at once)."""
KEPT_READS = 64
"""Requests whose messages are kept for the later requests that copy their front."""


def first_difference(a: array[int], b: array[int]) -> int:
    """The first position where two message lists differ (the shorter's length when one
    starts the other), compared in C: a session's lists are thousands long."""
    return common_prefix(a.tobytes(), b.tobytes()) // a.itemsize


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=16).digest()


class Interner:
    """Small ints for equal normalised values, so a request's shape costs a few bytes a part.

    Successive requests resend the same messages spelled the same way, so a value is first
    looked up by its exact bytes, and normalised and digested only the first time it is seen.
    """

    def __init__(self) -> None:
        self._by_bytes: dict[bytes, int] = {}
        """By the digest of the exact bytes: a session's values, kept whole, would weigh what
        all its messages weigh."""
        self._by_digest: dict[bytes, int] = {}

    def __call__(self, value: object, normalise: Callable[[object], object]) -> int:
        raw = _digest(orjson.dumps(value))
        known = self._by_bytes.get(raw)
        if known is None:
            data = orjson.dumps(normalise(value), option=orjson.OPT_SORT_KEYS)
            digest = _digest(data)
            known = self._by_digest.setdefault(digest, len(self._by_digest))
            self._by_bytes[raw] = known
        return known


@dataclass(frozen=True, slots=True)
class Settings:
    """What surrounds a request's messages, each part normalised and interned: what
    successive requests of a chain send byte for byte the same, but for the billing block."""

    model: object
    tools: dict[str, int]
    """The loaded tools, by name, in their order: their definitions are part of the prefix."""
    deferred: dict[str, int]
    """The tools sent with ``defer_loading``: the provider keeps them out of the prefix."""
    system: list[int]
    betas: object
    speed: object
    """``speed`` (``"fast"`` in fast mode); the API's default, ``"standard"``, when absent."""
    effort: object
    thinking: object


@dataclass(frozen=True, slots=True)
class Shape(Settings):
    """What of a request decides what the cache can reuse."""

    version: str | None
    """The Claude Code version the billing block names (``cc_version`` without the suffix
    each conversation gets); None without one. The block is otherwise left out, since its
    ``cch``, ``cc_prev_req`` and ``cc_prompt_id`` change on every call."""
    messages: array[int]
    roles: list[str]
    ttl: int
    """Lifetime in seconds of what this request writes: its newest marker's."""


@dataclass(frozen=True, slots=True)
class Messages:
    """A request's messages as a shape needs them, in parallel lists that a later request
    repeating the front takes a prefix of and extends at C speed, whatever their number."""

    ids: array[int]
    roles: list[str]
    marked: list[tuple[int, int]]
    """``(position, lifetime)`` of each message with a marker, in order."""

    @classmethod
    def of(cls, messages: Iterable[_Message], start: int = 0) -> Messages:
        listed = list(messages)
        return cls(
            ids=array("q", [message.id for message in listed]),
            roles=[message.role for message in listed],
            marked=[(start + n, message.ttl) for n, message in enumerate(listed) if message.ttl],
        )

    def prefix_then(self, count: int, more: list[_Message]) -> Messages:
        """The first ``count`` messages, then ``more``."""
        added = Messages.of(more, count)
        kept = self.marked[: bisect_right(self.marked, (count, 0))]
        return Messages(
            self.ids[:count] + added.ids, self.roles[:count] + added.roles, kept + added.marked
        )

    def newest_ttl(self) -> int | None:
        return self.marked[-1][1] if self.marked else None


def shape_of(request: dict[str, Any], intern: Interner) -> Shape:
    """The shape of a request parsed whole."""
    messages = request.get("messages")
    listed = messages if isinstance(messages, list) else []
    return _shape(request, intern, Messages.of(_message_of(message, intern) for message in listed))


@dataclass(frozen=True, slots=True)
class _Outer:
    """A request's settings, and the lifetime its newest marker outside the messages asks
    for (system, then tools)."""

    settings: Settings
    ttl: int | None


def _outer_of(request: dict[str, Any], intern: Interner) -> _Outer:
    raw_tools = request.get("tools")
    listed_tools = raw_tools if isinstance(raw_tools, list) else []
    tools, deferred = _tools_of(listed_tools, intern)
    blocks = _system_blocks(request)
    output = request.get("output_config")
    speed = request.get("speed")
    settings = Settings(
        model=request.get("model"),
        tools=tools,
        deferred=deferred,
        system=[intern(BILLING_PREFIX if _is_billing(b) else b, _unmarked) for b in blocks],
        betas=request.get("betas"),
        speed=STANDARD_SPEED if speed is None else speed,
        effort=output.get("effort") if isinstance(output, dict) else None,
        thinking=request.get("thinking"),
    )
    return _Outer(
        settings, _newest_ttl_of(itertools.chain(reversed(blocks), reversed(listed_tools)))
    )


def _system_blocks(request: dict[str, Any]) -> list[Any]:
    system = request.get("system")
    return system if isinstance(system, list) else [] if system is None else [system]


def _shape(request: dict[str, Any], intern: Interner, messages: Messages) -> Shape:
    """The shape of ``request`` whose messages (read apart from it) are ``messages``."""
    version = _version_of(_billing_text_of(request))
    return _joined(_outer_of(request, intern), version, messages)


def _joined(outer: _Outer, version: str | None, messages: Messages) -> Shape:
    # The lifetime the last marker of the request asks for: messages, then system, tools.
    ttl = messages.newest_ttl()
    if ttl is None:
        ttl = outer.ttl
    settings = {field.name: getattr(outer.settings, field.name) for field in fields(Settings)}
    return Shape(
        **settings,
        version=version,
        messages=messages.ids,
        roles=messages.roles,
        ttl=SHORT_TTL if ttl is None else ttl,
    )


def _tools_of(listed: list[Any], intern: Interner) -> tuple[dict[str, int], dict[str, int]]:
    """The loaded tools and the deferred ones, each by name (``#<n>`` without one)."""
    loaded: dict[str, int] = {}
    deferred: dict[str, int] = {}
    for n, tool in enumerate(listed):
        name = tool.get("name") if isinstance(tool, dict) else None
        held = deferred if isinstance(tool, dict) and tool.get("defer_loading") is True else loaded
        held[name if isinstance(name, str) else f"#{n}"] = intern(tool, _unmarked)
    return loaded, deferred


def _billing_text_of(request: dict[str, Any]) -> str | None:
    blocks = _system_blocks(request)
    return next((text for block in blocks if (text := _billing_text(block))), None)


def _version_of(text: str | None) -> str | None:
    """The version in the billing block's ``cc_version=<version>.<suffix>``, without the
    suffix: it digests the conversation's first message too, so it changes at a compaction
    where the version does not."""
    named = _CC_VERSION.search(text) if text else None
    if named is None:
        return None
    numbered = _NUMBERED.match(named[1])
    return numbered[0] if numbered else named[1]


def _outer_key(outer: bytes) -> tuple[bytes, str | None]:
    """A request's bytes around its messages with the billing block's text left out, and
    that text; the bytes whole and None when the text is not found once, whole, unescaped,
    at the start of a string. The bytes themselves are the key: equal keys are equal bytes."""
    at = outer.find(_BILLING_BYTES)
    end = outer.find(b'"', at)
    once = outer.find(_BILLING_BYTES, at + 1) < 0
    if at > 0 and outer[at - 1] == ord('"') and end > 0 and once:
        text = outer[at:end]
        if b"\\" not in text:
            return outer[:at] + outer[end:], text.decode()
    return outer, None


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
    return _billing_text(block) is not None


def _billing_text(block: object) -> str | None:
    """The text of the billing block (``system[0]``); None for any other block."""
    text = block.get("text") if isinstance(block, dict) else block
    return text if isinstance(text, str) and text.startswith(BILLING_PREFIX) else None


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


class Parts(Protocol):
    """Spans of a session's bodies and what each copies (``asz.store.BodyParts``)."""

    def holds(self, record_id: str) -> bool: ...

    def chain(self, record_id: str) -> str | None: ...

    def size(self, record_id: str) -> int: ...

    def copy_of(self, record_id: str) -> tuple[str, int] | None: ...

    def span(self, record_id: str, start: int, end: int) -> bytes: ...


@dataclass(frozen=True, slots=True)
class _Read:
    """Where a request's messages lie, and what they are: all a later request that repeats
    its front needs to read only what it adds."""

    front: bytes
    """The bytes before ``messages[0]``."""
    marks: list[int]
    """Where ``messages[0]`` and each later message start."""
    end: int
    """Where the ``messages`` array ends, past its ``]``."""
    messages: Messages
    size: int


class ShapeReader:
    """Shapes of a session's requests, each read past the front it copies (see the module)."""

    def __init__(self, parts: Parts) -> None:
        self.parts = parts
        self.intern = Interner()
        self._messages: dict[bytes, _Message] = {}
        self._reads: OrderedDict[str, _Read | None] = OrderedDict()
        self._latest: str | None = None
        self._outers: OrderedDict[bytes, tuple[_Outer, str | None]] = OrderedDict()
        """What was read around the messages, by :func:`_outer_key` (a few times 100 KB): a
        chain's requests repeat it, so each is parsed once."""

    def shape(self, record_id: str) -> Shape | None:
        """The shape of request ``record_id``; None when it is not a JSON object (or does not
        read as the request its record claims to be)."""
        size = self.parts.size(record_id)
        read = self._read(record_id)
        if read is None:
            return self._whole(self.parts.span(record_id, 0, size))
        outer = read.front + b"]" + self.parts.span(record_id, read.end, size)
        key, billing = _outer_key(outer)
        known = self._outers.get(key)
        if known is None:
            try:
                request = orjson.loads(outer)
            except orjson.JSONDecodeError:
                return self._whole(self.parts.span(record_id, 0, size))
            if not isinstance(request, dict):
                return None
            version = _version_of(_billing_text_of(request))
            known = (_outer_of(request, self.intern), version)
            if billing is None or billing == _billing_text_of(request):
                self._outers[key] = known
                while len(self._outers) > KEPT_OUTERS:
                    self._outers.popitem(last=False)
        outer_shape, version = known
        return _joined(outer_shape, _version_of(billing) if billing else version, read.messages)

    def _whole(self, body: bytes) -> Shape | None:
        try:
            request = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return shape_of(request, self.intern) if isinstance(request, dict) else None

    def _read(self, record_id: str, depth: int = 0) -> _Read | None:
        """Where the request's messages are, read from the last message its copied front holds
        whole; None when it has no ``messages`` array that reads this way."""
        if record_id in self._reads:
            self._reads.move_to_end(record_id)
            return self._reads[record_id]
        copy = self.parts.copy_of(record_id)
        base_id, copied = copy if copy else (None, 0)
        if base_id is not None and not self.parts.holds(base_id) and base_id not in self._reads:
            base_id, copied = None, 0  # let go by the walk: read from the latest instead
        base = self._read(base_id, depth + 1) if base_id and depth < MAX_DEPTH else None
        try:
            base, copied = self._better_base(record_id, base_id, base, copied)
            read = self._read_on(record_id, base, copied)
        except (NotCuttable, ValueError, IndexError):  # a JSONDecodeError is a ValueError
            read = None
        self._reads[record_id] = read
        if read is not None:
            self._latest = record_id
        while len(self._reads) > KEPT_READS:
            self._reads.popitem(last=False)
        return read

    def _better_base(
        self, record_id: str, base_id: str | None, base: _Read | None, copied: int
    ) -> tuple[_Read | None, int]:
        """The request read last instead of the body the record copies, when the request
        repeats more of it: copies are bounded in depth, so a record may copy an older body of
        its chain, or none, and reading from there would parse again what the last one read."""
        latest = self._latest
        read = self._reads.get(latest) if latest is not None else None
        if read is None or latest == base_id or (base is not None and copied >= read.marks[-1]):
            return base, copied
        assert latest is not None
        if not self.parts.holds(latest) or self.parts.chain(latest) != self.parts.chain(record_id):
            return base, copied
        shared = common_prefix(
            self.parts.span(record_id, 0, read.end), self.parts.span(latest, 0, read.end)
        )
        return (read, shared) if shared > copied else (base, copied)

    def _read_on(self, record_id: str, base: _Read | None, copied: int) -> _Read | None:
        # The message starting at the last mark within the copied front is read again: it may
        # go on past the copy. Every message before it lies wholly inside the copy.
        kept = bisect_right(base.marks, copied) - 1 if base is not None else -1
        if base is None or kept < 0:
            return self._read_whole(record_id)
        start = base.marks[kept]
        size = self.parts.size(record_id)
        # Past the messages come the same members as the base's, give or take a few bytes:
        # the new messages end near where the base's did plus what the body grew by.
        near = base.end + size - base.size + _SLACK
        rest = self.parts.span(record_id, start, near)
        try:
            items, end = array_items_from(rest)
        except (NotCuttable, IndexError):
            rest = self.parts.span(record_id, start, size)
            items, end = array_items_from(rest)
        messages = base.messages.prefix_then(kept, [self._message(rest[a:b]) for a, b in items])
        marks = base.marks[:kept] + [start + a for a, _ in items]
        return _Read(base.front, marks, start + end, messages, size)

    def _read_whole(self, record_id: str) -> _Read | None:
        body = self.parts.span(record_id, 0, self.parts.size(record_id))
        found = message_spans(body)
        if found is None:
            return None
        items, end = found
        messages = Messages.of(self._message(body[a:b]) for a, b in items)
        return _Read(body[: items[0][0]], [a for a, _ in items], end, messages, len(body))

    def _message(self, raw: bytes) -> _Message:
        key = _digest(raw)
        known = self._messages.get(key)
        if known is None:
            known = self._messages[key] = _message_of(orjson.loads(raw), self.intern)
        return known


def _newest_ttl_of(blocks: Iterable[Any]) -> int | None:
    """The lifetime the first marker among ``blocks`` asks for; None when none has one."""
    for block in blocks:
        marker = block.get("cache_control") if isinstance(block, dict) else None
        if isinstance(marker, dict):
            return LONG_TTL if marker.get("ttl") == "1h" else SHORT_TTL
    return None
