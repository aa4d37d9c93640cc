"""Bodies for the codec's tests and benchmark, and an oracle for where they should be cut.

A ``Chain`` is one conversation (a main agent or a subagent): every call resends the whole
message list, the cache marker sits on the newest message only, a message of one text block is
a list while newest and a plain string afterwards, the first message is a reminder block plus
the prompt, and the first system block is the billing header naming the previous request and
the prompt. Bodies are compact JSON with the keys in Claude Code's order.

``JsonWriter`` writes any JSON object (keys may repeat, numbers may be written as is) and
records, independently of the scanner, the spans the codec should cut at: each element of a
top-level ``tools`` array, every non-key string of at least MIN_PIECE bytes outside those, and
where ``messages[0]`` is.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

import orjson
from hypothesis import strategies as st

from asz.store._scan import MIN_PIECE, Layout

__all__ = [
    "CHARS",
    "CHILD_REMINDER",
    "KEYS",
    "LONG_TEXT",
    "MAIN_REMINDER",
    "MODEL",
    "ODD_SCALAR",
    "PLAIN_SCALAR",
    "SESSION",
    "SPACING",
    "SUBAGENT_TOOLS",
    "SYSTEM_PROMPT",
    "TOOLS",
    "TOOL_NAMES",
    "TOP",
    "Call",
    "Chain",
    "JsonWriter",
    "Obj",
    "Raw",
    "filler",
    "growing",
    "interleaved",
    "objects",
    "tool",
    "uuid_like",
    "values",
]

SESSION = "0b7e4c1a-5d2f-4e8b-9c3a-7f6e5d4c3b2a"
MODEL = "claude-opus-4-6"

_PROSE = (
    "the tool reads file path line output search pattern result agent task schema value "
    "request model cache message session prompt context parameter returns string number "
    "optional required description example when use this only must never always after"
)
_WORDS = _PROSE.split()
_SEPARATORS = (" ",) * 14 + ("\n", "\n", ' "', '" ', "\t")


def filler(seed: int | str, size: int) -> str:
    """Deterministic prose of about ``size`` characters, with newlines and quotes to escape."""
    rng = random.Random(seed)
    out: list[str] = []
    length = 0
    while length < size:
        word = rng.choice(_WORDS)
        sep = rng.choice(_SEPARATORS)
        out.append(word + sep)
        length += len(word) + len(sep)
    return "".join(out)[:size]


def tool(name: str, size: int) -> dict[str, Any]:
    """A tool definition whose description and schema come to about ``size`` bytes."""
    return {
        "name": name,
        "description": filler(name, size // 2),
        "input_schema": {
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "properties": {
                f"{name.lower()}_{i}": {
                    "type": "string",
                    "description": filler(f"{name}{i}", size // 12),
                }
                for i in range(5)
            },
            "required": [f"{name.lower()}_0"],
            "additionalProperties": False,
        },
    }


TOOL_NAMES = ("Agent", "Bash", "Edit", "Glob", "Grep", "Read", "Skill", "Write", "WebFetch")
TOOLS = [tool(name, 3_700) for name in TOOL_NAMES] + [
    tool(f"mcp__graph__{name}", 3_700) for name in ("search", "trace", "status", "callers")
]
SUBAGENT_TOOLS = TOOLS[:6]
SYSTEM_PROMPT = filler("system", 10_000)
MAIN_REMINDER = "<system-reminder>\n" + filler("claude-md", 6_000) + "\n</system-reminder>"
CHILD_REMINDER = "<system-reminder>\n" + filler("agent-md", 5_000) + "\n</system-reminder>"


def uuid_like(seed: int | str) -> str:
    rng = random.Random(f"uuid{seed}")
    hexes = "".join(rng.choice("0123456789abcdef") for _ in range(32))
    return f"{hexes[:8]}-{hexes[8:12]}-{hexes[12:16]}-{hexes[16:20]}-{hexes[20:]}"


@dataclass
class Chain:
    """One conversation's message list and what its next request names."""

    reminder: str
    first_prompt: str
    tools: list[dict[str, Any]] = field(default_factory=lambda: TOOLS)
    session: str = SESSION
    model: str = MODEL
    messages: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    prev_request: str | None = None

    def __post_init__(self) -> None:
        if not self.messages:
            self.messages = [("user", [_text(self.reminder), _text(self.first_prompt)])]

    def request(self, prompt_id: str | None) -> bytes:
        """The body of the next call, naming ``prompt_id`` (None for a compaction)."""
        billing = (
            "x-anthropic-billing-header: cc_version=2.1.260.a1b; cc_entrypoint=cli; cch=00000;"
        )
        if self.prev_request:
            billing += f" cc_prev_req={self.prev_request};"
        if prompt_id:
            billing += f" cc_prompt_id={prompt_id};"
        user_id = orjson.dumps(
            {"device_id": "d" * 64, "account_uuid": uuid_like("acct"), "session_id": self.session}
        ).decode()
        body = {
            "model": self.model,
            "messages": self._rendered(),
            "system": [
                {"type": "text", "text": billing},
                {
                    "type": "text",
                    "text": "You are Claude Code, Anthropic's official CLI for Claude.",
                    "cache_control": {"type": "ephemeral"},
                },
                {"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}},
            ],
            "tools": self.tools,
            "metadata": {"user_id": user_id},
            "max_tokens": 32000,
            "thinking": {"type": "adaptive"},
            "stream": True,
        }
        return orjson.dumps(body)

    def answer(self, request_id: str, text: str, tool_output: str | None = None) -> bytes:
        """Record the model's answer (and a tool's output sent back), return the response body."""
        content: list[dict[str, Any]] = [{"type": "thinking", "thinking": "<REDACTED>"}]
        content.append(_text(text))
        self.messages.append(("assistant", content))
        if tool_output is not None:
            self.messages.append(("user", [_text(tool_output)]))
        self.prev_request = request_id
        response = {
            "id": f"msg_{request_id[4:]}",
            "type": "message",
            "role": "assistant",
            "model": self.model,
            "content": content,
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 41_000, "output_tokens": 90},
        }
        return orjson.dumps(response)

    def say(self, text: str) -> None:
        """The user types the next prompt."""
        self.messages.append(("user", [_text(text)]))

    def compact(self, summary: str) -> None:
        """A compaction: the message list starts again from a summary."""
        self.messages = [("user", [_text(self.reminder), _text(summary)])]

    def _rendered(self) -> list[dict[str, Any]]:
        rendered = []
        last = len(self.messages) - 1
        for i, (role, blocks) in enumerate(self.messages):
            if i == last:
                marked = [*blocks[:-1], {**blocks[-1], "cache_control": {"type": "ephemeral"}}]
                rendered.append({"role": role, "content": marked})
            elif len(blocks) == 1 and set(blocks[0]) == {"type", "text"}:
                rendered.append({"role": role, "content": blocks[0]["text"]})
            else:
                rendered.append({"role": role, "content": blocks})
        return rendered


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


@dataclass(frozen=True)
class Call:
    """One model call: its number, its chain, and the request and response bodies."""

    number: int
    chain: str
    request_id: str
    request: bytes
    response: bytes


def interleaved(shared_reminder: bool) -> list[Call]:
    """Main calls 1-2, subagent 3-4, main 5, subagent 6, main 7, a compaction, main 8-9."""
    main = Chain(MAIN_REMINDER, "Find where the cache is built and explain it.")
    child = Chain(
        MAIN_REMINDER if shared_reminder else CHILD_REMINDER,
        "Search the code for the cache builder.",
        tools=SUBAGENT_TOOLS,
    )
    chains = {"main": main, "child": child}
    order = ["main", "main", "child", "child", "main", "child", "main", "compact", "main", "main"]
    calls: list[Call] = []
    number = 0
    for step, name in enumerate(order):
        if name == "compact":
            main.compact("Summary of the work so far: " + filler("summary", 3_000))
            continue
        number += 1
        chain = chains[name]
        request_id = f"req_011C{number:020d}"
        request = chain.request(prompt_id=uuid_like(f"prompt{name}"))
        output = filler(f"output{step}", 2_500) if step % 2 else None
        response = chain.answer(request_id, f"Step {step}: " + filler(step, 400), output)
        if output is None:
            chain.say(f"Now look at part {step}.")
        calls.append(Call(number, name, request_id, request, response))
    return calls


def growing(count: int) -> list[bytes]:
    """``count`` requests of one chain, each resending the last with one more exchange."""
    chain = Chain(MAIN_REMINDER, "Keep going.")
    bodies = []
    for i in range(count):
        bodies.append(chain.request(prompt_id=uuid_like("grow")))
        chain.answer(f"req_grow{i:04d}", filler(f"grow{i}", 300))
        chain.say(f"And then step {i}.")
    return bodies


class Obj(list):  # type: ignore[type-arg]
    """A JSON object as (key, value) pairs, in order, repeats allowed."""


class Raw(bytes):
    """A number token written byte for byte."""


class JsonWriter:
    def __init__(self, spacing: str = "", ascii_only: bool = False) -> None:
        self.space = spacing.encode()
        self.ascii_only = ascii_only
        self.out = bytearray()
        self.pieces: list[tuple[int, int]] = []
        self.first_message: tuple[int, int] | None = None

    def document(self, top: Obj) -> tuple[bytes, Layout]:
        """Write a top-level object; return its bytes and the shape the scanner should find."""
        self.out += self.space
        self._object(top, top_level=True, cut=True)
        self.out += self.space
        return bytes(self.out), Layout(pieces=self.pieces, first_message=self.first_message)

    def _value(self, value: object, cut: bool) -> None:
        if isinstance(value, Obj):
            self._object(value, top_level=False, cut=cut)
        elif isinstance(value, list):
            self._array(value, cut)
        elif isinstance(value, Raw):
            self.out += value
        elif isinstance(value, str):
            self._string(value, cut)
        else:
            self.out += json.dumps(value).encode()

    def _string(self, text: str, cut: bool) -> None:
        try:
            data = json.dumps(text, ensure_ascii=self.ascii_only).encode()
        except UnicodeEncodeError:  # a lone surrogate can only be written escaped
            data = json.dumps(text).encode()
        start = len(self.out)
        self.out += data
        if cut and len(data) >= MIN_PIECE:
            self.pieces.append((start, len(self.out)))

    def _object(self, obj: Obj, top_level: bool, cut: bool) -> None:
        self.out += b"{" + self.space
        for i, (key, value) in enumerate(obj):
            if i:
                self.out += b"," + self.space
            self._string(key, cut=False)
            self.out += self.space + b":" + self.space
            is_array = isinstance(value, list) and not isinstance(value, Obj)
            if top_level and key == "tools" and is_array:
                self._array(value, cut=False, record_items=True)
            elif top_level and key == "messages" and is_array:
                self._array(value, cut, first_only=self.first_message is None)
            else:
                self._value(value, cut)
        self.out += self.space + b"}"

    def _array(
        self, items: list[object], cut: bool, record_items: bool = False, first_only: bool = False
    ) -> None:
        self.out += b"[" + self.space
        for i, item in enumerate(items):
            if i:
                self.out += self.space + b"," + self.space
            start = len(self.out)
            self._value(item, cut)
            if record_items:
                self.pieces.append((start, len(self.out)))
            if first_only and i == 0:
                self.first_message = (start, len(self.out))
        self.out += self.space + b"]"


# -- hypothesis strategies for JSON objects to write -------------------------------------------

SPACING = st.sampled_from(["", " ", "\n  ", "\t\r\n "])
CHARS = st.sampled_from(["a", '"', "\\", "é", "\n", "€", "𝄞", "/", "\x01"])
LONG_TEXT = st.builds(
    lambda char, count, tail: char * count + tail,
    CHARS,
    st.integers(150, 1100),
    st.text(max_size=4),
)
PLAIN_SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**63), 2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=12),
    LONG_TEXT,
)
# Valid JSON that orjson refuses, so the standard-library check has to take it.
ODD_SCALAR = st.one_of(
    PLAIN_SCALAR,
    st.sampled_from([Raw(b"1E400"), Raw(b"-0"), Raw(b"1.0"), Raw(b"9" * 30), "\ud800 lone"]),
)
KEYS = st.one_of(
    st.sampled_from(["tools", "messages", "model", "t"]), st.text(max_size=8), LONG_TEXT
)


def values(scalar: st.SearchStrategy) -> st.SearchStrategy:
    """Any JSON value whose leaves come from ``scalar``."""

    def nested(children: st.SearchStrategy) -> st.SearchStrategy:
        pairs = st.lists(st.tuples(KEYS, children), max_size=4)
        return st.one_of(st.lists(children, max_size=4), pairs.map(Obj))

    return st.recursive(scalar, nested, max_leaves=12)


def objects(scalar: st.SearchStrategy) -> st.SearchStrategy:
    """A top-level object, often with ``messages`` and ``tools`` arrays, keys may repeat."""
    value = values(scalar)
    member = st.one_of(
        st.tuples(st.just("messages"), st.lists(value, max_size=4)),
        st.tuples(st.just("tools"), st.lists(value, max_size=4)),
        st.tuples(KEYS, value),
    )
    return st.lists(member, max_size=6).map(Obj)


TOP = st.one_of(objects(PLAIN_SCALAR), objects(ODD_SCALAR))
