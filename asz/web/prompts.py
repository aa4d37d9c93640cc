"""The text of a session's prompts, for the session list's search box.

A prompt is what the person typed: a transcript's user line whose message is text, not a
tool's result, not a line Claude Code wrote itself (``isMeta``) and not a compaction's summary.
Nothing in the store keeps prompt text (the session's facts keep only prompt ids), so it is
read from the landed transcript lines here, once per session state (the library keeps it).
"""

from __future__ import annotations

from typing import Any

import orjson

from asz.store import Session

MAX_TEXT = 1 << 20
"""Prompt text kept per session for the search: a pasted log is not searched past this."""
_USER = b'"user"'


def prompt_texts(session: Session) -> list[str]:
    """Every prompt of the session, in landing order."""
    texts: list[str] = []
    kept = 0
    for line in session.transcript_lines():
        if _USER not in line.data:
            continue
        text = _prompt_of(line.data)
        if text and kept < MAX_TEXT:
            texts.append(text[: MAX_TEXT - kept])
            kept += len(texts[-1])
    return texts


def _prompt_of(data: bytes) -> str | None:
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(value, dict) or value.get("type") != "user":
        return None
    if value.get("isMeta") or value.get("isCompactSummary") or "toolUseResult" in value:
        return None
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(_is_text(block) for block in content):
        return "\n".join(block["text"] for block in content)
    return None


def _is_text(block: Any) -> bool:
    return (
        isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
