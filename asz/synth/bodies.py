"""The JSON of request and response bodies, spelled the way Claude Code 2.1.260 writes them.

Bodies are compact JSON (``orjson.dumps``) with keys in Claude Code's order. The message list
is stored with one spelling per message and rendered per request, because the spelling of a
message depends on where it sits: the newest message carries the cache marker and is always
a list of blocks; an older message of a single text block becomes a plain string.
"""

from __future__ import annotations

import hashlib
from typing import Any

import orjson

from asz.synth.catalog import CACHE_1H, CONTEXT_MANAGEMENT, MAX_TOKENS, REDACTED
from asz.synth.options import CLAUDE_VERSION

__all__ = [
    "BILLING_PREFIX",
    "REQUEST_KEYS",
    "Block",
    "Message",
    "billing_block",
    "dumps",
    "is_single_text",
    "left_cached",
    "redact",
    "render_messages",
    "request",
    "response",
    "tokens",
    "usage",
    "user_id",
    "version_suffix",
]

REQUEST_KEYS = (
    "model",
    "messages",
    "system",
    "tools",
    "metadata",
    "max_tokens",
    "thinking",
    "context_management",
    "output_config",
    "speed",
    "stream",
)
"""Claude Code's key order; ``speed`` is sent in fast mode only."""
BILLING_PREFIX = "x-anthropic-billing-header: "

Message = dict[str, Any]
Block = dict[str, Any]


def dumps(value: Any) -> bytes:
    return orjson.dumps(value)


def tokens(size: int) -> int:
    """The token estimate used throughout: four bytes a token."""
    return size // 4


def version_suffix(first_user_text: str, version: str = CLAUDE_VERSION) -> str:
    """The three hex digits after ``cc_version``: a digest of characters 4, 7 and 20 of the
    chain's first user message and the version, so it is stable for a chain until an
    upgrade."""
    picked = "".join(first_user_text[i] for i in (4, 7, 20) if i < len(first_user_text))
    return hashlib.sha256((picked + version).encode()).hexdigest()[:3]


def billing_block(
    suffix: str,
    cch: str,
    prev_req: str | None,
    prompt_id: str | None,
    version: str = CLAUDE_VERSION,
) -> Block:
    """``system[0]``: no cache marker, and the optional segments only when they have a value
    (a chain's first call names no previous request; a compaction names no prompt)."""
    segments = [f"cc_version={version}.{suffix}", "cc_entrypoint=cli", f"cch={cch}"]
    if prev_req:
        segments.append(f"cc_prev_req={prev_req}")
    if prompt_id:
        segments.append(f"cc_prompt_id={prompt_id}")
    return {"type": "text", "text": BILLING_PREFIX + "; ".join(segments) + ";"}


def user_id(device_id: str, account_uuid: str, session_id: str) -> str:
    """``metadata.user_id``: a JSON string holding a JSON object, as written from 2.1.78 on."""
    inner = {"device_id": device_id, "account_uuid": account_uuid, "session_id": session_id}
    return orjson.dumps(inner).decode()


def is_single_text(blocks: list[Block]) -> bool:
    return (
        len(blocks) == 1 and blocks[0].get("type") == "text" and set(blocks[0]) == {"type", "text"}
    )


def render_messages(messages: list[Message], marker: Block = CACHE_1H) -> list[Message]:
    """Spells a stored message list for one request: ``marker`` on the newest message's last
    block, plain strings for older single-text messages, every other block as stored."""
    out: list[Message] = []
    newest = len(messages) - 1
    for index, message in enumerate(messages):
        blocks: list[Block] = message["content"]
        content: str | list[Block]
        if index == newest and blocks:
            content = [*blocks[:-1], {**blocks[-1], "cache_control": dict(marker)}]
        elif is_single_text(blocks):
            content = blocks[0]["text"]
        else:
            content = blocks
        out.append({"role": message["role"], "content": content})
    return out


def request(
    *,
    model: str,
    messages: list[Message],
    system: list[Block],
    tools: list[dict[str, Any]],
    user: str,
    thinking: dict[str, Any],
    effort: str,
    marker: Block = CACHE_1H,
    speed: str | None = None,
) -> dict[str, Any]:
    """A request body; ``speed`` only in fast mode, as the API takes it."""
    return {
        "model": model,
        "messages": render_messages(messages, marker),
        "system": system,
        "tools": tools,
        "metadata": {"user_id": user},
        "max_tokens": MAX_TOKENS,
        "thinking": thinking,
        "context_management": CONTEXT_MANAGEMENT,
        "output_config": {"effort": effort},
        **({"speed": speed} if speed is not None else {}),
        "stream": True,
    }


def usage(
    *,
    prompt_tokens: int,
    cached: int,
    output_tokens: int,
    uncached: int,
    marker: Block = CACHE_1H,
) -> dict[str, Any]:
    """Usage as the API reports it for a prompt of ``prompt_tokens`` of which ``cached`` were
    read from the cache and ``uncached`` came after the last marker; the rest was written,
    for the lifetime ``marker`` asks."""
    cached = max(min(cached, prompt_tokens - uncached), 0)
    written = max(prompt_tokens - cached - uncached, 0)
    hour = written if marker.get("ttl") == "1h" else 0
    return {
        "input_tokens": uncached,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
        "cache_creation": {
            "ephemeral_5m_input_tokens": written - hour,
            "ephemeral_1h_input_tokens": hour,
        },
        "output_tokens": output_tokens,
        "service_tier": "standard",
        "inference_geo": "global",
    }


def left_cached(usage: dict[str, Any]) -> int:
    """What a call left in the cache, what it read plus what it wrote: all the next call of
    its chain reads when nothing broke (the usage invariant)."""
    return int(usage["cache_read_input_tokens"]) + int(usage["cache_creation_input_tokens"])


def response(
    *, message_id: str, model: str, content: list[Block], stop_reason: str, usage: dict[str, Any]
) -> dict[str, Any]:
    return {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage,
    }


def redact(blocks: list[Block]) -> list[Block]:
    """Thinking text as both body kinds carry it: replaced by ``<REDACTED>``."""
    return [
        {**block, "thinking": REDACTED} if block.get("type") == "thinking" else block
        for block in blocks
    ]
