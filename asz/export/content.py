"""What a call sent, as the OpenTelemetry GenAI content attributes, through the redaction policy.

A span carries figures by default; content (the prompt, the conversation, the tool schemas)
goes only when asked for (``[otlp] content``, ``asz export otlp --content``), and then only as
the redaction policy leaves it: the request body is rebuilt from the root, passed through the
``Redactor`` (secrets and identity become keyed markers, withheld classes say so), and only
then read for its parts. The conventions' attributes are JSON strings:

- ``gen_ai.system_instructions``: the system prompt's parts, ``[{"type": "text", "content"}]``;
- ``gen_ai.tool.definitions``: the tools as the request names them (name, description,
  input schema);
- ``gen_ai.input.messages``: the conversation the call sent, each message ``{"role", "parts"}``
  with parts ``text``, ``tool_call`` (id, name, arguments), ``tool_call_response`` (id,
  response), ``reasoning``, and other block types by type alone (an image's bytes never go).

Each attribute is bounded by ``limit`` bytes, since backends refuse or cut larger values: the
messages keep the newest that fit, the system parts and the tools the first that fit
(``asz.content.messages_dropped``, ``…_system_dropped`` and ``…_tools_dropped`` say how many
did not), and one that fits alone in none has its long strings cut (ending ``…``), so that
every value stays JSON of the same shape.
"""

from __future__ import annotations

from typing import Any

import orjson

from asz.export.spans import Attributes
from asz.redact import Redactor

__all__ = ["DEFAULT_LIMIT", "content_attributes"]

DEFAULT_LIMIT = 256 * 1024
"""Bytes of one content attribute: under the 1 MB or so most backends take per span."""


def content_attributes(body: bytes, redactor: Redactor, limit: int = DEFAULT_LIMIT) -> Attributes:
    """The content attributes of a request ``body`` (its exact bytes), redacted; empty for a
    body that is not a JSON object. ``ScannerFailed`` from the redactor goes to the caller,
    which then sends the span without content: never a raw fallback."""
    try:
        request = orjson.loads(redactor.body(body).data)
    except orjson.JSONDecodeError:
        return {}
    if not isinstance(request, dict):
        return {}
    found: Attributes = {}
    tools = request.get("tools")
    for name, items, newest, dropped_name in (
        ("gen_ai.system_instructions", _system_parts(request.get("system")), False, "system"),
        ("gen_ai.tool.definitions", tools if isinstance(tools, list) else [], False, "tools"),
        ("gen_ai.input.messages", _messages(request.get("messages")), True, "messages"),
    ):
        if items:
            kept, dropped = _fitted(items, limit, newest=newest)
            found[name] = orjson.dumps(kept).decode()
            if dropped:
                found[f"asz.content.{dropped_name}_dropped"] = dropped
    return found


def _system_parts(system: object) -> list[dict[str, Any]]:
    if isinstance(system, str):
        return [{"type": "text", "content": system}]
    if not isinstance(system, list):
        return []
    return [
        {"type": "text", "content": block.get("text")}
        for block in system
        if isinstance(block, dict) and isinstance(block.get("text"), str)
    ]


def _messages(messages: object) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        return []
    return [_message(item) for item in messages if isinstance(item, dict)]


def _message(message: dict[str, Any]) -> dict[str, Any]:
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    parts = [_part(block) for block in blocks or [] if isinstance(block, dict)]
    return {"role": message.get("role"), "parts": parts}


def _part(block: dict[str, Any]) -> dict[str, Any]:
    kind = block.get("type")
    if kind == "text":
        return {"type": "text", "content": block.get("text")}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": block.get("id"),
            "name": block.get("name"),
            "arguments": block.get("input"),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": block.get("tool_use_id"),
            "response": block.get("content"),
        }
    if kind == "thinking":
        return {"type": "reasoning", "content": block.get("thinking")}
    return {"type": kind}


def _fitted(items: list[Any], limit: int, *, newest: bool) -> tuple[list[Any], int]:
    """As many items whole as fit ``limit`` bytes as a JSON list, the newest (messages) or the
    first (system parts, tools), and how many were left out. When not even one fits, that one
    is kept with its long strings cut until it does, so the list stays of the same shape."""
    sizes = [len(orjson.dumps(item)) + 1 for item in items]
    order = range(len(items) - 1, -1, -1) if newest else range(len(items))
    total, kept = 1, []
    for index in order:
        if total + sizes[index] > limit:
            break
        total += sizes[index]
        kept.append(index)
    if kept:
        return [items[index] for index in sorted(kept)], len(items) - len(kept)
    return [_cut(items[order[0]], limit - 2)], len(items) - 1


def _cut(value: Any, limit: int) -> Any:
    """``value`` with its strings cut shorter and shorter until its JSON fits ``limit``; a
    value whose shape alone is larger becomes a note of its size."""
    longest = limit
    while longest > 16:
        longest //= 2
        cut = _cut_strings(value, longest)
        if len(orjson.dumps(cut)) <= limit:
            return cut
    return f"«cut: {len(orjson.dumps(value))} bytes»"


def _cut_strings(value: Any, longest: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= longest else value[:longest] + "…"
    if isinstance(value, list):
        return [_cut_strings(item, longest) for item in value]
    if isinstance(value, dict):
        return {key: _cut_strings(item, longest) for key, item in value.items()}
    return value
