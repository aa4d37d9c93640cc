"""What Claude Code tells a status line command on stdin, read so that nothing in it can fail.

Claude Code documents the object (``session_id``, ``transcript_path``, ``model``,
``workspace``, ``cost``, and in later versions ``context_window``) but every field is
optional here: a missing, mistyped or absent value is None, and stdin that is empty, not
JSON or not an object is an input with nothing in it. The status line then says so in a
short line; it never fails, since Claude Code blanks the line of a command that does.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple, TextIO

import orjson

__all__ = ["MAX_INPUT", "StatusInput", "parse_input", "read_stdin"]

MAX_INPUT = 1 << 20
"""Claude Code's object is a few hundred bytes; more than this is not read."""


class StatusInput(NamedTuple):
    session_id: str | None = None
    transcript_path: str | None = None
    model: str | None = None
    """``model.id``."""
    claude_code_cost_usd: float | None = None
    """``cost.total_cost_usd``: Claude Code's own estimate, shown beside asz's in --json."""


def parse_input(data: bytes) -> StatusInput:
    """The fields of Claude Code's object in ``data``; an empty input for anything else."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return StatusInput()
    if not isinstance(value, dict):
        return StatusInput()
    model = value.get("model")
    cost = value.get("cost")
    return StatusInput(
        session_id=_text(value.get("session_id")),
        transcript_path=_text(value.get("transcript_path")),
        model=_text(model.get("id")) if isinstance(model, dict) else None,
        claude_code_cost_usd=_money(cost.get("total_cost_usd")) if isinstance(cost, dict) else None,
    )


def read_stdin(stream: TextIO | None) -> bytes:
    """What stdin holds, at most :data:`MAX_INPUT` bytes (more is an empty input); a closed
    or unreadable stdin is an empty one, and so is a terminal: Claude Code pipes the JSON in,
    and a person trying the command by hand would otherwise wait on it for nothing."""
    try:
        if stream is None or stream.isatty():
            return b""
        data = stream.buffer.read(MAX_INPUT + 1)
    except (OSError, ValueError, AttributeError):
        return b""
    return data if len(data) <= MAX_INPUT else b""


def _text(value: Any) -> str | None:
    """A non-empty string without NUL (which no path or id holds)."""
    return value if isinstance(value, str) and value and "\x00" not in value else None


def _money(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None
