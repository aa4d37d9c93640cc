"""The flat directory Claude Code writes provider bodies into: listing, reading, settling.

Claude Code writes each body with one asynchronous write, without a temporary name, and never
deletes one; every session shares the directory, and so does anything a user leaves there. So
only names of the body form are looked at, nothing but a regular file is ever opened (a symlink
could point anywhere, a FIFO would block the pass), a body is refused by its size before it is
read whole, and a body that is not one JSON value yet is left for later: it may still be being
written.

A user with several Claude Code directories has several bodies directories. A body's file name
is its identity (a request's UUID, a response's request id), so they are listed as one: a name
present in two is taken from the first, and the later copy is counted as shadowed.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

import orjson

from asz.adapters.source_files import NotReadable, open_regular
from asz.store import MAX_BODY

__all__ = [
    "BODY_NAME",
    "MAX_BODY_BYTES",
    "BodyRead",
    "JsonLook",
    "Listing",
    "SourceFile",
    "TooLarge",
    "distinct_dirs",
    "is_one_json_value",
    "list_sources",
    "look_at_json",
    "parse_body_name",
    "read_body",
]

BODY_NAME = re.compile(r"^([A-Za-z0-9_-]+)\.(request|response)\.json$")
_match_body_name = BODY_NAME.match
_ROLES = {"request": "request", "response": "response"}
"""One string per role, shared by every file of a listing."""
MAX_BODY_BYTES = MAX_BODY
"""Largest body read (the largest the store lands); a larger one is refused by its size alone."""


class SourceFile(NamedTuple):
    """A file named like a body, as one stat saw it (a tuple: listings hold many)."""

    name: str
    role: str
    size: int
    mtime_ns: int
    directory: Path
    """The bodies directory it is in (one object shared by the whole listing)."""

    @property
    def stem(self) -> str:
        """The name less ``.<role>.json``: a request's UUID, or a response's request id."""
        return self.name[: -len(self.role) - len("..json")]

    @property
    def record_id(self) -> str:
        """The name the body lands under: its file name less ``.json``."""
        return self.name[: -len(".json")]


@dataclass(slots=True)
class Listing:
    present: list[Path] = field(default_factory=list)
    """The directories listed that exist, in order."""
    files: list[SourceFile] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    shadowed: list[SourceFile] = field(default_factory=list)
    """Copies of a name an earlier directory holds: never read, never landed."""

    @property
    def exists(self) -> bool:
        return bool(self.present)

    def merge(self, other: Listing) -> None:
        """Adds a later directory's listing: its names not taken yet, the others shadowed."""
        self.present += other.present
        self.errors += other.errors
        if not self.files:
            self.files = other.files
            return
        taken = {source.name for source in self.files}
        for source in other.files:
            (self.shadowed if source.name in taken else self.files).append(source)


def parse_body_name(name: str) -> tuple[str, str] | None:
    """``(stem, role)`` of a body's file name, or None for any other name."""
    match = BODY_NAME.match(name)
    return (match.group(1), match.group(2)) if match else None


def distinct_dirs(directories: Iterable[Path]) -> list[Path]:
    """The directories, less any that is another name of an earlier one (a link to it)."""
    seen: set[str] = set()
    kept = []
    for directory in directories:
        real = os.path.realpath(directory)
        if real not in seen:
            seen.add(real)
            kept.append(directory)
    return kept


def list_sources(*directories: Path) -> Listing:
    """Every regular file named like a body in the directories, each name from the first
    directory holding it, with one ``lstat`` each and nothing opened."""
    listing = Listing()
    for directory in distinct_dirs(directories):
        listing.merge(_list_one(directory))
    return listing


def _list_one(directory: Path) -> Listing:
    """One directory's listing. A file that vanishes while listed is simply not there; any
    other failure is named, since a pass that skipped a file must not look complete."""
    try:
        scanner = os.scandir(directory)
    except (FileNotFoundError, NotADirectoryError):
        return Listing()
    listing = Listing(present=[directory])
    with scanner:
        for entry in scanner:
            match = _match_body_name(entry.name)
            if match is None:
                continue
            try:
                if not entry.is_file(follow_symlinks=False):
                    continue
                info = entry.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            except OSError as err:
                listing.errors.append(f"{entry.name}: cannot be looked at: {err.strerror}")
                continue
            role = _ROLES[match.group(2)]
            listing.files.append(
                SourceFile(entry.name, role, info.st_size, info.st_mtime_ns, directory)
            )
    return listing


class TooLarge(Exception):
    """The file is larger than a body may be."""

    def __init__(self, size: int, mtime_ns: int) -> None:
        super().__init__(f"is {size} bytes, more than the {MAX_BODY_BYTES} a body may be")
        self.size = size
        self.mtime_ns = mtime_ns


@dataclass(frozen=True, slots=True)
class BodyRead:
    data: bytes
    mtime_ns: int


def read_body(directory: Path, name: str, limit: int = MAX_BODY_BYTES) -> BodyRead:
    """The whole file, refused by size before reading and only if it is a regular file.

    Raises NotReadable when the file is gone, is no regular file, or changed size while it was
    read (Claude Code was still writing it), and TooLarge when it exceeds ``limit``.
    """
    fd, info = open_regular(directory / name)
    with os.fdopen(fd, "rb") as handle:
        if info.st_size > limit:
            raise TooLarge(info.st_size, info.st_mtime_ns)
        data = handle.read(info.st_size + 1)
    if len(data) != info.st_size:
        raise NotReadable("changed size while it was read", "changing")
    return BodyRead(data, info.st_mtime_ns)


class JsonLook(NamedTuple):
    """What one parse of a body found: whether it is one JSON value, and the value itself when
    orjson parsed it (``parsed`` is False for what only the grammar walk accepts or refuses)."""

    whole: bool
    parsed: bool
    value: object


def look_at_json(body: bytes) -> JsonLook:
    """Whether ``body`` is exactly one JSON value, invalid UTF-8 inside strings tolerated, and
    the value orjson parsed, so that a caller reading keys from it parses the body only once.

    A half-written body is what this tells apart, so validity is judged on the grammar alone:
    invalid bytes can only be valid inside a string, and replacing them keeps a string a
    string. orjson answers the common case; the grammar walk answers what orjson refuses
    (invalid UTF-8, numbers beyond a double, lone surrogate escapes, deep nesting).
    """
    try:
        value = orjson.loads(body)
    except orjson.JSONDecodeError:
        return JsonLook(_grammar_holds(body.decode("utf-8", errors="replace")), False, None)
    return JsonLook(True, True, value)


def is_one_json_value(body: bytes) -> bool:
    """Whether ``body`` is exactly one JSON value (see ``look_at_json``)."""
    return look_at_json(body).whole


_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
_LITERAL = re.compile(r"true|false|null")
_scan_string = json.decoder.scanstring  # type: ignore[attr-defined]


def _skip_space(text: str, pos: int = 0) -> re.Match[str]:
    """Whitespace from ``pos``, possibly none: the pattern matches everywhere."""
    match = _WHITESPACE.match(text, pos)
    assert match is not None
    return match


def _grammar_holds(text: str) -> bool:
    """An iterative check of JSON's grammar: no recursion, so no nesting limit."""
    pos = _skip_space(text).end()
    stack: list[str] = []
    expect_value = True
    while True:
        if expect_value:
            pos, opened = _value(text, pos)
            if pos < 0:
                return False
            if opened:
                stack.append(opened)
                pos = _skip_space(text, pos).end()
                closer = "}" if opened == "{" else "]"
                if text.startswith(closer, pos):
                    stack.pop()
                    pos += 1
                elif opened == "{":
                    pos = _key(text, pos)
                    if pos < 0:
                        return False
                    continue
                else:
                    continue
        pos = _skip_space(text, pos).end()
        if not stack:
            return pos == len(text)
        char = text[pos : pos + 1]
        if char == ",":
            pos = _skip_space(text, pos + 1).end()
            if stack[-1] == "{":
                pos = _key(text, pos)
                if pos < 0:
                    return False
            expect_value = True
        elif char == ("}" if stack[-1] == "{" else "]"):
            stack.pop()
            pos += 1
            expect_value = False
        else:
            return False


def _value(text: str, pos: int) -> tuple[int, str]:
    """Skips a scalar value (or the opening of a container); -1 when none is there."""
    char = text[pos : pos + 1]
    if char in ("{", "["):
        return pos + 1, char
    if char == '"':
        return _string_end(text, pos), ""
    match = _NUMBER.match(text, pos) or _LITERAL.match(text, pos)
    return (match.end(), "") if match else (-1, "")


def _key(text: str, pos: int) -> int:
    """Skips ``"key" :`` and the whitespace after it; -1 when that is not there."""
    if text[pos : pos + 1] != '"':
        return -1
    pos = _string_end(text, pos)
    if pos < 0:
        return -1
    pos = _skip_space(text, pos).end()
    if text[pos : pos + 1] != ":":
        return -1
    return _skip_space(text, pos + 1).end()


def _string_end(text: str, pos: int) -> int:
    try:
        end: int = _scan_string(text, pos + 1, True)[1]
        return end
    except ValueError:
        return -1
