"""Find where a request or response body can be cut, without parsing it into objects.

The codec cuts a body at byte spans ("pieces") that later bodies of the same session are likely
to repeat: each element of the top-level ``tools`` array, and every JSON string token of at
least ``MIN_PIECE`` bytes outside it. Object keys are never pieces. Only the top-level object's
``tools`` and ``messages`` members are special, and only when their value is an array.

Why a hand-made scanner: the cut has to fall on exact byte offsets of the original body (any
re-encoding would lose the spelling of numbers, escapes, whitespace and duplicate keys), and a
Python loop over every JSON token is the slowest part of encoding. So the body is first copied
once with its escaped quotes and backslashes blanked (same length, so offsets hold), after which
every ``"`` delimits a string; regular expressions then skip short strings and whole nested
values inside the regex engine, and Python only loops over top-level members, array elements
and long strings.

Validity is checked before scanning, since the scanner trusts the grammar: orjson first (fast),
and for the valid JSON orjson refuses (numbers out of double range such as ``1E400``, integers
too long for it, lone ``\\ud800`` escapes, nesting past its limit) the standard library with
numbers kept as text. Nothing recurses on the body's nesting: a body nested deeper than
``MAX_NESTING`` that orjson refuses is reported as not cuttable, and the scanner itself tracks
depth with a counter.

A request mostly repeats the one before it, so ``scan_rest`` scans only what it adds: from the
last message the two share, and up to where it ends with the same members as the other.
"""

from __future__ import annotations

import json
import re
import sys
from bisect import bisect_left
from dataclasses import dataclass

import orjson

__all__ = [
    "MAX_NESTING",
    "MIN_PIECE",
    "Layout",
    "NotCuttable",
    "array_items_from",
    "message_spans",
    "require_json_object",
    "scan_body",
    "scan_rest",
]

MIN_PIECE = 1024
"""Shortest string token (quotes included) that is a piece."""

MAX_NESTING = 512
"""Deepest nesting the standard-library check is trusted with (it recurses per level)."""

_WS = rb"[ \t\n\r]*"
_OPEN_OBJECT = re.compile(_WS + rb"\{" + _WS)
_CLOSE_OBJECT = re.compile(rb"\}")
_OPEN_ARRAY = re.compile(rb"\[" + _WS)
_CLOSE_ARRAY = re.compile(rb"\]")
_MEMBER_KEY = re.compile(rb'("[^"]*+")' + _WS + rb":" + _WS)
_AFTER_VALUE = re.compile(_WS + rb"([,\]}])" + _WS)
_COLON_NEXT = re.compile(_WS + rb":")
_STRING = re.compile(rb'"[^"]*+"')
_SCALAR = re.compile(rb"[^ \t\n\r,\]}]++")
_TOKEN = re.compile(rb'"[^"]*+"|[\[\]{}]')
# Skips everything up to the next string token of MIN_PIECE bytes or more (group 1), or to the
# end. Short strings and the text between strings are consumed inside the regex engine.
_NEXT_LONG = re.compile(
    rb'(?:[^"]++|"[^"]{0,%d}+")*+(?:("[^"]*+")|\Z)' % (MIN_PIECE - 3),
)


def _nested_value_pattern(levels: int) -> re.Pattern[bytes]:
    """A regex for an object or array nested at most ``levels`` + 1 deep.

    Python's ``re`` has no recursion, so the nesting is unrolled a fixed number of times; a
    value nested deeper does not match and is walked token by token instead.
    """
    inner = rb'(?:[^"\[\]{}]++|"[^"]*+")*+'
    for _ in range(levels):
        inner = rb'(?:[^"\[\]{}]++|"[^"]*+"|[\[{]' + inner + rb"[\]}])*+"
    return re.compile(rb"[\[{]" + inner + rb"[\]}]")


_NESTED = _nested_value_pattern(16)


class NotCuttable(Exception):
    """The body cannot be cut; ``why`` says why, in words a manifest can carry."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


@dataclass(frozen=True, slots=True)
class Layout:
    """Where a body may be cut.

    ``pieces`` are sorted, non-overlapping ``(start, end)`` byte spans; ``first_message`` is the
    span of ``messages[0]`` of the top-level object, which names the conversation a request
    continues. ``marks`` are where the later elements of that ``messages`` array start: a body
    that repeats this one's front up to a mark can be scanned from there (``scan_rest``), and
    ``messages_end`` is where that array ends, past its ``]``; ``keys_after`` are where the
    top-level members after it start.
    """

    pieces: list[tuple[int, int]]
    first_message: tuple[int, int] | None
    marks: tuple[int, ...] = ()
    messages_end: int | None = None
    keys_after: tuple[int, ...] = ()


def scan_body(body: bytes, *, checked: bool = False) -> Layout:
    """Validate ``body`` as one JSON object in UTF-8 and find its pieces.

    ``checked`` says orjson already parsed this very body as an object (the collector parses
    each body once for its keys), so validating it again would only repeat that parse.
    Raises NotCuttable when the body is not valid UTF-8, not valid JSON, not an object, or too
    deeply nested to be checked safely.
    """
    if not checked:
        require_json_object(body)
    scanner = _Scanner(body, _blank_escapes(body))
    pos = _expect(_OPEN_OBJECT, scanner.text, 0).end()
    if _CLOSE_OBJECT.match(scanner.text, pos) is None:
        scanner.members(pos)
    return scanner.shape()


def scan_rest(
    body: bytes, base: Layout, mark: int, base_body: bytes, *, checked: bool = False
) -> Layout:
    """The shape of ``body``, whose first ``mark`` bytes are those of ``base_body`` (whose
    shape is ``base``, and ``mark`` one of ``base.marks``), scanning as little as it can.

    A request repeats the one before it, adds messages to the end of its ``messages`` array,
    and ends with the same members after it (system prompt, tools, metadata). So only the
    messages from ``mark`` on are scanned, and when the body ends with the bytes the base has
    after its messages, their pieces are the base's, moved.

    What a scan finds before a mark depends on the bytes before it alone: the mark starts an
    element of the ``messages`` array, outside any string, after the separator that ends the
    element before it, so no piece spans it, no escape pairs across it, and the pieces and
    marks before it are the base's. The same holds past the array's end, so equal bytes after
    it hold equal pieces. The array is taken to end where the base's tail begins only when
    scanning the messages up to there finds that it does. ``checked`` is as for ``scan_body``.
    """
    if not checked:
        require_json_object(body)
    kept_marks = base.marks[: base.marks.index(mark)]  # ValueError for what is no mark
    assert base.first_message is not None and base.messages_end is not None  # marks follow
    front = base.pieces[: bisect_left(base.pieces, (mark, 0))]
    moved = len(body) - len(base_body)
    for key in base.keys_after:
        end = key + moved
        if end > mark and body.endswith(memoryview(base_body)[key:]):
            part = _members_until(body[mark:end], base.first_message[0] - mark)
            if part is not None:
                after = base.pieces[bisect_left(base.pieces, (key, 0)) :]
                return Layout(
                    pieces=front
                    + [(start + mark, stop + mark) for start, stop in part.pieces]
                    + [(start + moved, stop + moved) for start, stop in after],
                    first_message=base.first_message,
                    marks=kept_marks + tuple(at + mark for at in part.marks),
                    messages_end=(part.messages_end or 0) + mark,
                    keys_after=tuple(at + mark for at in part.keys_after)
                    + tuple(at + moved for at in base.keys_after if at >= key),
                )
            break
    rest = body[mark:]
    scanner = _Scanner(rest, _blank_escapes(rest))
    # In the rest's offsets; a later ``messages`` member must not count as the first.
    scanner.first_message = (base.first_message[0] - mark, base.first_message[1] - mark)
    scanner.messages_from(0)
    found_rest = scanner.shape()
    return Layout(
        pieces=front + [(start + mark, stop + mark) for start, stop in found_rest.pieces],
        first_message=base.first_message,
        marks=kept_marks + tuple(at + mark for at in found_rest.marks),
        messages_end=(found_rest.messages_end or 0) + mark,
        keys_after=tuple(at + mark for at in found_rest.keys_after),
    )


def array_items_from(part: bytes) -> tuple[list[tuple[int, int]], int]:
    """The spans of the elements of an array from the one ``part`` starts with, and where the
    array ends, past its ``]``: how a reader that knows where a request's new messages start
    finds them without scanning what comes before. ``part`` must start at an element, outside
    any string; NotCuttable when it does not read as one."""
    return _Scanner(part, _blank_escapes(part)).items_from(0)


def message_spans(body: bytes) -> tuple[list[tuple[int, int]], int] | None:
    """The spans of the elements of the top-level ``messages`` array and where it ends, past its
    ``]``; None when there is no such array or it is empty. Nothing is validated: for a reader
    that parses each element, and what surrounds the array, by itself (which checks them, and
    with them the body), and that would pay for parsing a body of many megabytes twice.
    NotCuttable (or IndexError) when the body does not read as an object."""
    scanner = _Scanner(body, _blank_escapes(body))
    pos = _expect(_OPEN_OBJECT, scanner.text, 0).end()
    if _CLOSE_OBJECT.match(scanner.text, pos) is None:
        scanner.members(pos)
    if scanner.messages is None or scanner.messages_end is None:
        return None
    return scanner.messages, scanner.messages_end


def _members_until(part: bytes, first_message_start: int) -> Layout | None:
    """The shape of ``part``: the rest of a ``messages`` array from an element on, then top-level
    members up to the key ``part`` ends at; None when ``part`` is not that. Everything scanned
    lies inside ``part``, so what it finds is what a scan of the whole body finds there."""
    scanner = _Scanner(part, _blank_escapes(part))
    scanner.first_message = (first_message_start, first_message_start)
    try:
        scanner.messages_from(0)
    except NotCuttable:
        return None
    return scanner.shape() if scanner.ended_at_key else None


def require_json_object(body: bytes) -> None:
    """Raise NotCuttable unless ``body`` is one JSON object in UTF-8 (what scanning trusts)."""
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        value = _load_what_orjson_refuses(body)
    if not isinstance(value, dict):
        raise NotCuttable("the body is not a JSON object")


def _load_what_orjson_refuses(body: bytes) -> object:
    """Parse valid JSON outside orjson's range, or say why the body is not valid JSON."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError:
        raise NotCuttable("the body is not valid UTF-8") from None
    if _max_nesting(_blank_escapes(body)) > MAX_NESTING:
        raise NotCuttable("the body nests too deep to be checked")
    try:
        return json.loads(text, parse_int=str, parse_float=str, parse_constant=_refuse_constant)
    except RecursionError:
        raise NotCuttable("the body nests too deep to be checked") from None
    except ValueError:
        raise NotCuttable("the body is not valid JSON") from None


def _refuse_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _blank_escapes(body: bytes) -> bytes:
    r"""Blank each ``\\`` and ``\"`` escape to two underscores: then every ``"`` delimits a string.

    ``replace`` pairs backslashes from the left of each run, as JSON reads them, and valid JSON
    has no backslash outside strings, so two plain replaces are exact and keep every offset.
    """
    return body.replace(b"\\\\", b"__").replace(b'\\"', b"__")


def _max_nesting(text: bytes) -> int:
    depth = deepest = 0
    for match in _TOKEN.finditer(text):
        char = text[match.start()]
        if char in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in b"]}":
            depth -= 1
    return deepest


class _Scanner:
    """One pass over a validated body (``text`` is the body with its escapes blanked).

    It walks the top-level members, looking only into the ``tools`` and ``messages`` arrays,
    and then finds the long strings outside the ``tools`` arrays.
    """

    def __init__(self, body: bytes, text: bytes) -> None:
        self.body = body
        self.text = text
        self.tools_arrays: list[tuple[int, int]] = []
        self.tool_pieces: list[tuple[int, int]] = []
        self.first_message: tuple[int, int] | None = None
        self.messages: list[tuple[int, int]] | None = None
        """The spans of the first ``messages`` array's elements, when it has any."""
        self.marks: list[int] = []
        self.messages_end: int | None = None
        self.keys_after: list[int] = []
        self.ended_at_key = False

    def shape(self) -> Layout:
        longs = self._long_values(_gaps(self.tools_arrays, len(self.text)))
        return Layout(
            pieces=sorted(self.tool_pieces + longs),
            first_message=self.first_message,
            marks=tuple(self.marks),
            messages_end=self.messages_end,
            keys_after=tuple(self.keys_after),
        )

    def members(self, pos: int) -> None:
        """Walk the top-level members from the key at ``pos`` to the object's end."""
        text = self.text
        while True:
            if pos == len(text):  # only where a scan stops short of the body's end
                self.ended_at_key = True
                return
            if self.messages_end is not None:
                self.keys_after.append(pos)
            key = _expect(_MEMBER_KEY, text, pos)
            name = self._key_name(*key.span(1))
            start = key.end()
            is_array = text[start] == ord("[")
            if name == "tools" and is_array:
                items, end = self._array_items(start)
                self.tool_pieces.extend(items)
                self.tools_arrays.append((start, end))
            elif name == "messages" and is_array and self.first_message is None:
                items, end = self._array_items(start)
                if items:
                    self.messages = items
                    self.first_message = items[0]
                    self.marks.extend(item_start for item_start, _ in items[1:])
                    self.messages_end = end
            else:
                end = self._value_end(start)
            after = _expect(_AFTER_VALUE, text, end)
            if after.group(1) != b",":
                return
            pos = after.end()

    def messages_from(self, pos: int) -> None:
        """Walk on from ``pos``, an element of the first ``messages`` array after its first."""
        items, end = self.items_from(pos)
        self.marks.extend(item_start for item_start, _ in items)
        self.messages_end = end
        after = _expect(_AFTER_VALUE, self.text, end)
        if after.group(1) == b",":
            self.members(after.end())

    def _key_name(self, start: int, end: int) -> str:
        raw = self.body[start:end]
        if b"\\" not in raw:
            return raw[1:-1].decode()
        name: str = json.loads(raw)  # an escaped spelling of a key still names that key
        return name

    def _array_items(self, start: int) -> tuple[list[tuple[int, int]], int]:
        """The spans of the elements of the array at ``start``, and where the array ends."""
        pos = _expect(_OPEN_ARRAY, self.text, start).end()
        if _CLOSE_ARRAY.match(self.text, pos):
            return [], pos + 1
        return self.items_from(pos)

    def items_from(self, pos: int) -> tuple[list[tuple[int, int]], int]:
        """The spans of the elements of an array from the one at ``pos`` on, and its end."""
        text = self.text
        items: list[tuple[int, int]] = []
        while True:
            end = self._value_end(pos)
            items.append((pos, end))
            after = _expect(_AFTER_VALUE, text, end)
            if after.group(1) != b",":
                return items, after.end(1)
            pos = after.end()

    def _value_end(self, start: int) -> int:
        text = self.text
        first = text[start]
        if first == ord('"'):
            return _expect(_STRING, text, start).end()
        if first not in b"[{":
            return _expect(_SCALAR, text, start).end()
        nested = _NESTED.match(text, start)
        if nested is not None:
            return nested.end()
        return self._deep_value_end(start)

    def _deep_value_end(self, start: int) -> int:
        """Walk a value nested deeper than the regex reaches, keeping depth in a counter."""
        text = self.text
        depth = 0
        for match in _TOKEN.finditer(text, start):
            char = text[match.start()]
            if char in b"[{":
                depth += 1
            elif char in b"]}":
                depth -= 1
                if depth == 0:
                    return match.end()
        raise NotCuttable("the body ended inside a value")

    def _long_values(self, regions: list[tuple[int, int]]) -> list[tuple[int, int]]:
        """Spans of the string tokens of MIN_PIECE bytes or more in ``regions`` that are not keys.

        Each region must start outside any string.
        """
        text = self.text
        spans: list[tuple[int, int]] = []
        for pos, stop in regions:
            while True:
                found = _expect(_NEXT_LONG, text, pos, stop)
                if found.group(1) is None:
                    break
                start, pos = found.span(1)
                if not _COLON_NEXT.match(text, pos):
                    spans.append((start, pos))
        return spans


def _expect(
    pattern: re.Pattern[bytes], text: bytes, pos: int, stop: int = sys.maxsize
) -> re.Match[bytes]:
    """Match where the grammar says a token must be; a miss means the body is cut short."""
    found = pattern.match(text, pos, stop)
    if found is None:
        raise NotCuttable("the body ended inside a value")
    return found


def _gaps(ranges: list[tuple[int, int]], size: int) -> list[tuple[int, int]]:
    """The parts of ``[0, size)`` outside the sorted, non-overlapping ``ranges``."""
    gaps: list[tuple[int, int]] = []
    pos = 0
    for start, end in ranges:
        gaps.append((pos, start))
        pos = end
    gaps.append((pos, size))
    return gaps
