"""A session's prompts with the call that answered each, for the session list's search.

A prompt is what the person typed: a transcript's user line whose message is text, not a
tool's result, not a line Claude Code wrote itself (``isMeta``) and not a compaction's summary.
The call that answered it is the first assistant line with a message id after it in the same
transcript, which is the call the page of that message id shows. Nothing in the store keeps
prompt text (the session's facts keep only prompt ids), so it is read from the landed
transcript lines here, once per session state (the library keeps it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from asz.store import Session

__all__ = ["MAX_TEXT", "Prompt", "session_prompts"]

MAX_TEXT = 1 << 20
"""Prompt text kept per session for the search: a pasted log is not searched past this."""
_USER = b'"user"'
_ASSISTANT = b'"assistant"'


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    lowered: str
    """The text in lower case, as the search compares it."""
    time: str | None
    message_id: str | None
    """The call that answered it; None when no call follows it (yet)."""


def session_prompts(session: Session) -> list[Prompt]:
    """Every prompt of the session, in landing order, each with the call that answered it."""
    found: list[Prompt] = []
    pending: tuple[str, str | None] | None = None
    stream = None
    kept = 0
    for line in session.transcript_lines():
        if line.stream != stream:
            if pending is not None:
                found.append(_prompt(*pending, None))
            pending, stream = None, line.stream
        if pending is not None and _ASSISTANT in line.data:
            message_id = _answer_of(line.data)
            if message_id is not None:
                found.append(_prompt(*pending, message_id))
                pending = None
        if _USER not in line.data or kept >= MAX_TEXT:
            continue
        typed = _prompt_of(line.data)
        if typed is not None:
            if pending is not None:
                found.append(_prompt(*pending, None))
            text = typed[0][: MAX_TEXT - kept]
            kept += len(text)
            pending = (text, typed[1])
    if pending is not None:
        found.append(_prompt(*pending, None))
    return found


def _prompt(text: str, time: str | None, message_id: str | None) -> Prompt:
    return Prompt(text, text.lower(), time, message_id)


def _line(data: bytes) -> dict[str, Any] | None:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def _answer_of(data: bytes) -> str | None:
    value = _line(data)
    if value is None or value.get("type") != "assistant":
        return None
    message = value.get("message")
    message_id = message.get("id") if isinstance(message, dict) else None
    return message_id if isinstance(message_id, str) and message_id else None


def _prompt_of(data: bytes) -> tuple[str, str | None] | None:
    """The prompt a line holds, with its time; None for any other line."""
    value = _line(data)
    if value is None or value.get("type") != "user":
        return None
    if value.get("isMeta") or value.get("isCompactSummary") or "toolUseResult" in value:
        return None
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    time = value.get("timestamp")
    time = time if isinstance(time, str) else None
    if isinstance(content, str) and content:
        return content, time
    if isinstance(content, list) and content and all(_is_text(block) for block in content):
        return "\n".join(block["text"] for block in content), time
    return None


def _is_text(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
