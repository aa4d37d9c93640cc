"""Model calls, streams and compactions, read from a session's landed transcript lines.

A call is every assistant line of the session sharing one ``message.id``: Claude Code writes
one line per content block, so a call is split over several lines, and line order is the only
order there is (a ``requestId`` can repeat across calls and is never used to group). A call
made up by Claude Code itself (``model == "<synthetic>"``: an error text, "No response
requested.") is kept and marked, since it never went to the provider.

A stream is the main transcript or one subagent's. A subagent is started by a ``tool_use`` of
a call in its parent stream; the parent's ``tool_result`` for it carries
``toolUseResult.agentId`` (and, while the subagent runs, ``agent_progress`` lines carry the
same pair). A stream whose landed lines do not start at line 1 or skip a line has a gap: a
call may be missing from it, so "the call before" is not known there.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import orjson

from asz.store import MAIN_STREAM, TranscriptLine
from asz.synthetic import SYNTHETIC_MODEL
from asz.view.evidence import Seen, seen_on_line

__all__ = ["Call", "Epoch", "Stream", "StreamStart", "Transcript", "facts", "read_transcript"]


@dataclass(slots=True)
class Call:
    """One model call as its transcript lines tell it."""

    stream: str
    message_id: str
    position: int
    """Index of its first line within its stream's lines."""
    request_id: str | None = None
    prompt_id: str | None = None
    model: str | None = None
    synthetic: bool = False
    time: str | None = None
    last_time: str | None = None
    fragments: int = 0
    tool_uses: list[str] = field(default_factory=list)
    version: str | None = None
    """The Claude Code ``version`` of its first line that names one."""
    usage: dict[str, Any] | None = None
    """``message.usage`` of the call's last line that carries one: a call's lines repeat it
    while the message streams, and the last is the final count."""
    on_lines: dict[str, Any] = field(default_factory=dict)
    """``version``, ``effort``, ``verdict`` and ``missed`` as its lines carry them
    (:func:`asz.view.evidence.seen_on_line`); the last line's that says each."""


def facts(call: Call) -> dict[str, Any]:
    """What the call's lines say of it (a :class:`asz.view.evidence.Seen` as JSON, with its
    ``usage.speed``), as the evidence of a cause reads it."""
    seen = Seen(model=call.model, time=call.time, last_time=call.last_time, **call.on_lines)
    return {**seen.to_json(), "speed": (call.usage or {}).get("speed")}


@dataclass(frozen=True, slots=True)
class StreamStart:
    """The call, and the ``tool_use`` in it, that started a subagent stream."""

    stream: str
    message_id: str
    tool_use_id: str


@dataclass(slots=True)
class Stream:
    name: str
    sources: list[str] = field(default_factory=list)
    lines: int = 0
    first_time: str | None = None
    last_time: str | None = None
    gap: str | None = None
    """Why the landed lines are not whole, or None."""
    gap_position: int | None = None
    """The position of the first line after the first gap: a call before it and one after it
    may have had a call between them that did not land."""
    started_by: StreamStart | None = None
    calls: list[Call] = field(default_factory=list)


@dataclass(slots=True)
class Epoch:
    """A compaction: the ``compact_boundary`` line and the summary that follows it."""

    stream: str
    position: int
    uuid: str | None
    time: str | None
    trigger: str | None
    pre_tokens: int | None
    summary: str | None = None


@dataclass(slots=True)
class Transcript:
    streams: dict[str, Stream] = field(default_factory=dict)
    calls: dict[str, Call] = field(default_factory=dict)
    """Message id -> call, in the order their first lines were read."""
    epochs: list[Epoch] = field(default_factory=list)
    cwds: list[str] = field(default_factory=list)
    project_dirs: list[str] = field(default_factory=list)
    first_time: str | None = None
    last_time: str | None = None
    lines: int = 0
    unreadable_lines: int = 0

    def ordered_streams(self) -> list[Stream]:
        """The main stream first, then subagents by their first line's time."""
        others = sorted(
            (s for s in self.streams.values() if s.name != MAIN_STREAM),
            key=lambda s: (s.first_time or "", s.name),
        )
        main = self.streams.get(MAIN_STREAM)
        return [main, *others] if main else others

    def ordered_calls(self) -> list[Call]:
        """Calls stream by stream (in stream order), each stream's in line order."""
        return [call for stream in self.ordered_streams() for call in stream.calls]


@dataclass(slots=True)
class _SourceCursor:
    """Where the next line of a source must start for its landed lines to be whole."""

    offset: int = 0
    line: int = 1


class _Reader:
    def __init__(self) -> None:
        self.result = Transcript()
        self._cursors: dict[str, _SourceCursor] = {}
        self._prompts: dict[str, str | None] = {}
        self._open_epochs: dict[str, Epoch] = {}
        self._tool_calls: dict[str, str] = {}  # tool_use id -> message id
        self._agent_starts: dict[str, str] = {}  # agent id -> tool_use id
        self._cwds: dict[str, None] = {}
        self._dirs: dict[str, None] = {}

    def line(self, landed: TranscriptLine) -> None:
        result = self.result
        stream = result.streams.get(landed.stream)
        if stream is None:
            stream = result.streams[landed.stream] = Stream(landed.stream)
        self._check_whole(stream, landed)
        position = stream.lines
        stream.lines += 1
        result.lines += 1
        try:
            value = orjson.loads(landed.data)
        except orjson.JSONDecodeError:
            result.unreadable_lines += 1
            return
        if not isinstance(value, dict):
            return
        time = _text(value.get("timestamp"))
        if time:
            _widen(stream, time)
            if result.first_time is None or time < result.first_time:
                result.first_time = time
            if result.last_time is None or time > result.last_time:
                result.last_time = time
        cwd = _text(value.get("cwd"))
        if cwd:
            self._cwds.setdefault(cwd, None)
        kind = value.get("type")
        if kind == "assistant":
            self._assistant(value, stream, position, time)
        elif kind == "user":
            self._user(value, stream.name)
        elif kind == "system" and value.get("subtype") == "compact_boundary":
            self._boundary(value, stream.name, position, time)
        elif kind == "progress":
            data = value.get("data")
            if isinstance(data, dict) and data.get("type") == "agent_progress":
                self._agent_start(_text(data.get("agentId")), _text(value.get("parentToolUseID")))

    def _check_whole(self, stream: Stream, landed: TranscriptLine) -> None:
        cursor = self._cursors.get(landed.source)
        if cursor is None:
            cursor = self._cursors[landed.source] = _SourceCursor()
            stream.sources.append(landed.source)
            self._dirs.setdefault(landed.source.split("/", 1)[0], None)
        if stream.gap is None and (landed.line, landed.offset) != (cursor.line, cursor.offset):
            stream.gap_position = stream.lines
            stream.gap = (
                f"{landed.source}: line {landed.line} at byte {landed.offset} follows "
                f"line {cursor.line - 1}, which ends at byte {cursor.offset}"
                if cursor.line > 1
                else f"{landed.source}: the landed lines start at line {landed.line}"
            )
        cursor.offset = landed.offset + len(landed.data)
        cursor.line = landed.line + 1

    def _assistant(
        self, value: dict[str, Any], stream: Stream, position: int, time: str | None
    ) -> None:
        message = value.get("message")
        if not isinstance(message, dict):
            return
        message_id = _text(message.get("id"))
        if not message_id:
            return
        call = self.result.calls.get(message_id)
        if call is None:
            call = Call(stream.name, message_id, position, prompt_id=self._prompts.get(stream.name))
            call.time = time
            self.result.calls[message_id] = call
            stream.calls.append(call)
        call.fragments += 1
        call.last_time = time or call.last_time
        call.request_id = call.request_id or _text(value.get("requestId"))
        call.version = call.version or _text(value.get("version"))
        model = _text(message.get("model"))
        call.model = call.model or model
        call.synthetic = call.synthetic or model == SYNTHETIC_MODEL
        usage = message.get("usage")
        if isinstance(usage, dict):
            call.usage = usage
        for key, said in seen_on_line(value, message).items():
            if said is not None:
                call.on_lines[key] = said
        for block in _blocks(message.get("content")):
            tool_use = _text(block.get("id")) if block.get("type") == "tool_use" else None
            if tool_use:
                call.tool_uses.append(tool_use)
                self._tool_calls.setdefault(tool_use, message_id)

    def _user(self, value: dict[str, Any], stream: str) -> None:
        prompt = _text(value.get("promptId"))
        if prompt:
            self._prompts[stream] = prompt
        message = value.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        result = value.get("toolUseResult")
        if isinstance(result, dict):
            agent = _text(result.get("agentId"))
            for block in _blocks(content):
                if block.get("type") == "tool_result":
                    self._agent_start(agent, _text(block.get("tool_use_id")))
        epoch = self._open_epochs.get(stream)
        if epoch is not None and value.get("isCompactSummary") is True:
            epoch.summary = _plain_text(content)
            del self._open_epochs[stream]

    def _boundary(
        self, value: dict[str, Any], stream: str, position: int, time: str | None
    ) -> None:
        meta = value.get("compactMetadata")
        meta = meta if isinstance(meta, dict) else {}
        pre_tokens = meta.get("preTokens")
        epoch = Epoch(
            stream=stream,
            position=position,
            uuid=_text(value.get("uuid")),
            time=time,
            trigger=_text(meta.get("trigger")),
            pre_tokens=pre_tokens if isinstance(pre_tokens, int) else None,
        )
        self.result.epochs.append(epoch)
        self._open_epochs[stream] = epoch

    def _agent_start(self, agent: str | None, tool_use: str | None) -> None:
        if agent and tool_use:
            self._agent_starts.setdefault(agent, tool_use)

    def finish(self) -> Transcript:
        result = self.result
        for agent, tool_use in self._agent_starts.items():
            stream = result.streams.get(agent)
            message_id = self._tool_calls.get(tool_use)
            if stream is not None and message_id is not None and stream.started_by is None:
                parent = result.calls[message_id].stream
                if parent != agent:
                    stream.started_by = StreamStart(parent, message_id, tool_use)
        result.cwds = list(self._cwds)
        result.project_dirs = list(self._dirs)
        return result


def read_transcript(lines: Iterable[TranscriptLine]) -> Transcript:
    """Calls, streams and compactions of a session, from its landed lines in landed order."""
    reader = _Reader()
    for landed in lines:
        reader.line(landed)
    return reader.finish()


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _widen(stream: Stream, time: str) -> None:
    if stream.first_time is None or time < stream.first_time:
        stream.first_time = time
    if stream.last_time is None or time > stream.last_time:
        stream.last_time = time


def _blocks(content: object) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        return []
    return [block for block in content if isinstance(block, dict)]


def _plain_text(content: object) -> str | None:
    """A message's text: the string itself, or its text blocks joined."""
    if isinstance(content, str):
        return content
    texts = [block["text"] for block in _blocks(content) if isinstance(block.get("text"), str)]
    return "\n".join(texts) if texts else None
