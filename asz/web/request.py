"""A request body taken apart in the order the provider reads it, for the call page.

The provider reads a request's tools, then its system blocks, then its messages, and caches
a prefix of that order up to each ``cache_control`` marker. So the page lists them in that
order, each part with its size (its bytes as compact JSON), each marker where it sits with
the lifetime it asks for, the deferred tools marked (they stay out of the cached prefix), and
reminder text (``<system-reminder>`` blocks Claude Code injects into messages) set apart from
what the person and the tools wrote. The body fields that join the cache key come first.
Everything is taken as the body holds it: a part of an unexpected shape is shown as JSON,
never dropped. What is too long to look at is folded (:class:`Folder`): each text and each
JSON shows its first few KB, and one page shows a bounded amount in all; what is not shown is
counted, and the page links the exact bytes for it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = [
    "FIELDS",
    "FIRST_MESSAGES",
    "FOLD",
    "MAX_MESSAGES",
    "PAGE_TEXT",
    "Block",
    "Folder",
    "Marker",
    "Message",
    "RequestParts",
    "Segment",
    "Tool",
    "Weight",
    "listed",
    "marker_of",
    "pretty",
    "request_parts",
    "segments",
    "size_of",
    "text_of",
    "unmarked",
]

FIELDS = (
    "model",
    "max_tokens",
    "thinking",
    "output_config",
    "context_management",
    "betas",
    "speed",
    "temperature",
    "tool_choice",
    "stream",
)
"""Body fields shown at the top, in this order, when the body has them."""
_REMINDER = re.compile(r"<system-reminder>.*?(?:</system-reminder>|\Z)", re.DOTALL)
SHORT_TTL, LONG_TTL = "5m", "1h"
FOLD = 4096
"""Characters of one text or JSON a page shows before folding the rest away: a pasted log or
a 2 MB prompt line is a few lines on the page, its whole in the exact bytes."""
PAGE_TEXT = 256 * 1024
"""Characters of text one call page shows in all, however many parts a request has."""
MAX_MESSAGES = 100
FIRST_MESSAGES = 20
"""A request of more than ``MAX_MESSAGES`` messages shows its first ``FIRST_MESSAGES`` (where
its cached prefix starts) and its last ones (what this call added), not the thousand between:
a long session's last request is a 1 MB page of message headings otherwise."""


@dataclass(slots=True)
class Folder:
    """What is left of one page's text budget; :meth:`fold` takes each text's share."""

    left: int = PAGE_TEXT

    def fold(self, text: str) -> tuple[str, int]:
        """The part of ``text`` the page shows, and how many characters it leaves out."""
        shown = text[: min(FOLD, self.left)]
        self.left -= len(shown)
        return shown, len(text) - len(shown)


def size_of(value: object) -> int:
    """A part's weight: its bytes as compact JSON, as Claude Code writes it."""
    return len(orjson.dumps(value))


def pretty(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


@dataclass(frozen=True, slots=True)
class Marker:
    """A ``cache_control`` marker: the prefix up to here is cached for ``ttl``."""

    type: str
    ttl: str


@dataclass(frozen=True, slots=True)
class Segment:
    """A run of text; ``reminder`` for a ``<system-reminder>`` block; ``hidden``: the
    characters folded away after ``text``."""

    text: str
    reminder: bool
    hidden: int = 0


@dataclass(slots=True)
class Block:
    """A system block, or a block of a message's content (or of a tool result's)."""

    kind: str
    size: int
    segments: list[Segment] = field(default_factory=list)
    label: str = ""
    """What names it besides its kind: a tool's name, a tool use's id."""
    data: str | None = None
    """Its JSON, pretty, when it is not text (a tool's input, an image, an unknown block)."""
    data_hidden: int = 0
    inner: list[Block] = field(default_factory=list)
    """A tool result's content blocks."""
    marker: Marker | None = None
    error: bool = False


@dataclass(frozen=True, slots=True)
class Tool:
    index: int
    name: str
    size: int
    deferred: bool
    marker: Marker | None
    data: str
    data_hidden: int


@dataclass(frozen=True, slots=True)
class Message:
    index: int
    role: str
    size: int
    blocks: list[Block]


@dataclass(frozen=True, slots=True)
class Weight:
    """One part of the weight bar."""

    name: str
    css: str
    size: int


@dataclass(frozen=True, slots=True)
class RequestParts:
    fields: list[tuple[str, str]]
    """(name, JSON) of each body field of ``FIELDS`` the body has."""
    tools: list[Tool]
    system: list[Block]
    messages: list[Message]
    """The messages shown (see ``MAX_MESSAGES``), each with its index in the body."""
    message_count: int
    weights: list[Weight]
    size: int
    markers: int


def request_parts(body: dict[str, Any], size: int, folder: Folder | None = None) -> RequestParts:
    """The parts of a parsed request whose exact bytes are ``size`` long, folded by
    ``folder`` (a new page's budget unless one is shared)."""
    folder = folder or Folder()
    tools = [_tool(n, tool, folder) for n, tool in enumerate(listed(body.get("tools")))]
    system_value = body.get("system")
    blocks = [system_value] if isinstance(system_value, str) else listed(system_value)
    system = [_block(block, folder) for block in blocks]
    every = listed(body.get("messages"))
    shown: list[int] | range = range(len(every))
    if len(every) > MAX_MESSAGES:
        shown = [
            *range(FIRST_MESSAGES),
            *range(len(every) - MAX_MESSAGES + FIRST_MESSAGES, len(every)),
        ]
    messages = [_message(n, every[n], folder) for n in shown]
    loaded = sum(tool.size for tool in tools if not tool.deferred)
    deferred = sum(tool.size for tool in tools if tool.deferred)
    by_role: dict[str, int] = {}
    for message in every:
        role = str(message.get("role", "?")) if isinstance(message, dict) else "?"
        by_role[role] = by_role.get(role, 0) + size_of(message)
    counted = loaded + deferred + sum(b.size for b in system) + sum(by_role.values())
    weights = [
        Weight("tools", "w-tools", loaded),
        Weight("deferred tools", "w-deferred", deferred),
        Weight("system", "w-system", sum(block.size for block in system)),
        *(Weight(f"{role} messages", _role_css(role), n) for role, n in by_role.items()),
        Weight("everything else", "w-rest", max(0, size - counted)),
    ]
    markers = sum(tool.marker is not None for tool in tools) + _count_markers(system)
    markers += sum(_markers_in(message) for message in every)
    return RequestParts(
        fields=[(name, pretty(body[name])) for name in FIELDS if name in body],
        tools=tools,
        system=system,
        messages=messages,
        message_count=len(every),
        weights=[weight for weight in weights if weight.size],
        size=size,
        markers=markers,
    )


def marker_of(value: object) -> Marker | None:
    """The part's ``cache_control`` marker; its lifetime 5 minutes unless it asks for 1h."""
    marker = value.get("cache_control") if isinstance(value, dict) else None
    if not isinstance(marker, dict):
        return None
    ttl = marker.get("ttl")
    return Marker(str(marker.get("type", "?")), ttl if isinstance(ttl, str) else SHORT_TTL)


def segments(text: str, folder: Folder | None = None) -> list[Segment]:
    """The text cut into what a reminder says and what the rest says, in order, each folded
    by ``folder`` when one is given."""
    found: list[Segment] = []
    at = 0
    for match in _REMINDER.finditer(text):
        if match.start() > at:
            found.append(_segment(text[at : match.start()], False, folder))
        found.append(_segment(match.group(), True, folder))
        at = match.end()
    if at < len(text) or not found:
        found.append(_segment(text[at:], False, folder))
    return found


def _segment(text: str, reminder: bool, folder: Folder | None) -> Segment:
    if folder is None:
        return Segment(text, reminder)
    shown, hidden = folder.fold(text)
    return Segment(shown, reminder, hidden)


def text_of(value: object) -> str:
    """A part as one text, for a side-by-side comparison: its text where it is text, its
    JSON otherwise."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and set(value) <= {"type", "text", "cache_control"}:
        text = value.get("text")
        if isinstance(text, str):
            return text
    if isinstance(value, dict) and isinstance(value.get("content"), list | str):
        content = value["content"]
        parts = content if isinstance(content, list) else [content]
        return "\n".join(text_of(part) for part in parts)
    return pretty(value)


def _tool(index: int, tool: object, folder: Folder) -> Tool:
    name = tool.get("name") if isinstance(tool, dict) else None
    data, hidden = folder.fold(pretty(tool))
    return Tool(
        index=index,
        name=name if isinstance(name, str) else f"#{index}",
        size=size_of(tool),
        deferred=isinstance(tool, dict) and tool.get("defer_loading") is True,
        marker=marker_of(tool),
        data=data,
        data_hidden=hidden,
    )


def _message(index: int, message: object, folder: Folder) -> Message:
    if not isinstance(message, dict):
        return Message(index, "?", size_of(message), [_block(message, folder)])
    content = message.get("content")
    blocks = _blocks_of(content, folder)
    return Message(index, str(message.get("role", "?")), size_of(message), blocks)


def _blocks_of(content: object, folder: Folder) -> list[Block]:
    """A content's blocks: one for a string, one each for a list's items."""
    if isinstance(content, str):
        return [_block(content, folder)]
    return [_block(value, folder) for value in listed(content)]


def _block(value: object, folder: Folder) -> Block:
    size = size_of(value)
    if isinstance(value, str):
        return Block("text", size, segments(value, folder))
    if not isinstance(value, dict):
        return _with_data(Block("json", size), value, folder)
    kind = str(value.get("type", "?"))
    block = Block(kind, size, marker=marker_of(value))
    if kind == "text" and isinstance(value.get("text"), str):
        block.segments = segments(value["text"], folder)
    elif kind == "thinking" and isinstance(value.get("thinking"), str):
        block.segments = [_segment(value["thinking"], False, folder)]
    elif kind == "tool_use":
        block.label = f"{value.get('name', '?')} ({value.get('id', '?')})"
        _with_data(block, value.get("input"), folder)
    elif kind == "tool_result":
        block.label = str(value.get("tool_use_id", "?"))
        block.error = value.get("is_error") is True
        block.inner = _blocks_of(value.get("content"), folder)
    else:
        _with_data(block, {k: v for k, v in value.items() if k != "cache_control"}, folder)
    return block


def _with_data(block: Block, value: object, folder: Folder) -> Block:
    block.data, block.data_hidden = folder.fold(pretty(value))
    return block


def _markers_in(message: object) -> int:
    """The ``cache_control`` markers of a message's blocks and of its tool results' blocks,
    counted in the body itself, so that messages not shown count too."""
    content = message.get("content") if isinstance(message, dict) else None
    return sum(
        (marker_of(block) is not None) + _markers_in(block)
        for block in listed(content)
        if isinstance(block, dict)
    )


def _count_markers(blocks: list[Block]) -> int:
    return sum((block.marker is not None) + _count_markers(block.inner) for block in blocks)


def listed(value: object) -> list[Any]:
    """A list the body holds, else none: a part of another shape is no list of parts."""
    return value if isinstance(value, list) else []


def unmarked(value: object) -> object:
    """A part without its ``cache_control`` marker, which moves without changing the part."""
    if isinstance(value, dict):
        return {key: item for key, item in value.items() if key != "cache_control"}
    return value


def _role_css(role: str) -> str:
    return {"user": "w-user", "assistant": "w-assistant"}.get(role, "w-other")
