"""JSON paths of string tokens, found by walking a document's structure in its raw bytes.

Only asked for where something fired (or where a class is withheld), since the walk is a
Python step per token while finding the strings is one regular expression over the bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = ["STRING", "PathPart", "decode", "format_path", "string_paths"]

STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"')
"""One JSON string token, quotes included; matched from a token boundary, it never starts
inside a string, since every earlier string was consumed whole."""
_TOKEN = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},:]')
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

PathPart = str | int


def decode(token: bytes) -> str:
    """A string token's text; bytes that are not UTF-8 come back as lone surrogates, so
    that encoding the text back the same way gives the same bytes."""
    if b"\\" not in token:
        return token[1:-1].decode("utf-8", "surrogateescape")
    value = json.loads(token.decode("utf-8", "surrogateescape"))
    assert isinstance(value, str)
    return value


def format_path(parts: tuple[PathPart, ...]) -> str:
    """``$.messages[3].content[0].text``; a key that is no identifier in brackets."""
    out = ["$"]
    for part in parts:
        if isinstance(part, int):
            out.append(f"[{part}]")
        elif _IDENTIFIER.fullmatch(part):
            out.append(f".{part}")
        else:
            out.append(f"[{json.dumps(part, ensure_ascii=False)}]")
    return "".join(out)


def string_paths(
    raw: bytes, *, in_object: bool = False, wanted: set[int] | None = None
) -> Iterator[tuple[int, tuple[PathPart, ...], bool]]:
    """Each string token's start offset, its path, and whether it is an object's key (whose
    path is then the object's and the key). ``in_object``: ``raw`` starts inside an object,
    at a key (a piece of a body cut at one), so its paths are relative to that object.
    ``wanted``: only the tokens starting there, and the walk stops after the last."""
    # A frame: [is_object, key (its raw token) or index, expecting a key]
    frames: list[list[Any]] = [[True, None, True]] if in_object else []
    last = max(wanted) if wanted else None
    for match in _TOKEN.finditer(raw):
        start = match.start()
        char = raw[start]
        if char == 0x22:  # a string
            frame = frames[-1] if frames else None
            is_key = frame is not None and frame[0] and frame[2]
            if is_key:
                frame[1] = match.group()  # type: ignore[index]
            if wanted is None or start in wanted:
                yield start, _path(frames), is_key
                if start == last:
                    return
        elif char == 0x7B:  # {
            frames.append([True, None, True])
        elif char == 0x5B:  # [
            frames.append([False, 0, False])
        elif char == 0x7D or char == 0x5D:  # } ]  # noqa: PLR1714
            if frames:
                frames.pop()
        elif char == 0x2C:  # ,
            if frames:
                frame = frames[-1]
                if frame[0]:
                    frame[2] = True
                else:
                    frame[1] += 1
        elif frames:  # :
            frames[-1][2] = False


def _path(frames: list[list[Any]]) -> tuple[PathPart, ...]:
    return tuple(
        decode(part) if isinstance(part, bytes) else part
        for _, part, _ in frames
        if part is not None
    )
