"""Replays real transcripts into the bodies Claude Code would have written for them.

Each stream of a session (the main transcript, every subagent file, every inline sidechain)
is its own chain. Assistant lines are grouped by ``message.id`` in line order; each group is
one call, whose request carries the messages of the lines before it and whose response
carries the group's blocks. The transcripts themselves are copied byte for byte.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson

from asz.synth import bodies
from asz.synth.catalog import THINKING
from asz.synth.context import agent_prompt, main_prompt, system_blocks
from asz.synth.ids import Ids
from asz.synth.options import SynthOptions
from asz.synth.project import Project
from asz.synth.records import Call, Session, Stream
from asz.synth.shared import Setup, land, make_setup
from asz.synth.writer import PROJECTS_DIR, Body, Capture

__all__ = [
    "SESSION_NAME",
    "Line",
    "NoTranscripts",
    "PendingCall",
    "Replay",
    "SessionReplay",
    "Source",
    "replay",
]

SESSION_NAME = re.compile(
    r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
)
_NS_PER_MS = 1_000_000


@dataclass
class Line:
    """A transcript line that parsed as a JSON object, with its time in nanoseconds."""

    data: dict[str, Any]
    ns: int | None


@dataclass
class Source:
    """One transcript file of a session."""

    relative: str
    lines: list[Line]
    agent_id: str | None


@dataclass
class PendingCall:
    """A call being gathered from its transcript lines: the list before its first line, and
    the blocks of every line that carries its message id."""

    message_id: str
    request_id: str | None
    model: str
    messages: list[bodies.Message]
    prompt_id: str
    first_ns: int | None
    before_ns: int | None
    last_ns: int | None = None
    blocks: list[bodies.Block] = field(default_factory=list)
    cause: str = "kept"
    line_uuid: str | None = None
    transcript_prompt: str | None = None


def _time(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    try:
        moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return int(moment.timestamp() * 1000) * _NS_PER_MS


def _read(path: Path, root: Path) -> Source:
    lines = []
    for raw in path.read_bytes().splitlines():
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        if isinstance(data, dict):
            lines.append(Line(data, _time(data.get("timestamp"))))
    agent = path.stem.removeprefix("agent-") if path.stem.startswith("agent-") else None
    return Source(path.relative_to(root).as_posix(), lines, agent)


def _blocks(content: Any) -> list[bodies.Block]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if isinstance(content, list):
        return [block for block in content if isinstance(block, dict)]
    return []


def _is_prompt(line: dict[str, Any]) -> bool:
    """A line the user typed: not injected context, not a summary, not a tool result."""
    if line.get("isMeta") or line.get("isCompactSummary"):
        return False
    content = line.get("message", {}).get("content")
    return isinstance(content, str) or (
        isinstance(content, list)
        and all(isinstance(b, dict) and b.get("type") != "tool_result" for b in content)
    )


def _stream_of(line: dict[str, Any], source: Source, roots: dict[str, str]) -> str:
    if source.agent_id is not None:
        return source.agent_id
    if line.get("agentId"):
        return str(line["agentId"])
    if not line.get("isSidechain"):
        return "main"
    uuid, parent = line.get("uuid"), line.get("parentUuid")
    root = roots.get(parent, uuid) if parent else uuid
    roots[str(uuid)] = str(root)
    return f"sidechain-{root}"


class SessionReplay:
    """Turns one session's transcripts into request/response bodies."""

    def __init__(self, replay: Replay, session_id: str, folder: str, sources: list[Source]):
        self.replay = replay
        self.ids = replay.ids
        self.session_id = session_id
        self.sources = sources
        first = next((line.data for s in sources for line in s.lines if "cwd" in line.data), {})
        cwd = str(first.get("cwd", ""))
        self.record = Session(id=session_id, cwd=cwd, project_dir=folder)
        self.record.streams.append(Stream("main", "main"))
        self.user = bodies.user_id(replay.setup.device_id, replay.setup.account_uuid, session_id)
        made_up = Project.make(random.Random(session_id), Ids(random.Random(session_id)))
        self.project = replace(made_up, cwd=cwd or made_up.cwd)
        self.prompt_at: dict[str, str] = {}
        self.spawns: dict[str, tuple[str | None, str | None]] = {}
        self.boundaries: list[tuple[str, list[bodies.Message]]] = []

    def run(self) -> Session:
        main_sources = [s for s in self.sources if s.agent_id is None]
        agent_sources = [s for s in self.sources if s.agent_id is not None]
        for source in self.sources:
            self.record.transcripts.append(f"{PROJECTS_DIR}/{source.relative}")
            for line in source.lines:
                message = line.data.get("message")
                if line.data.get("type") == "assistant" and isinstance(message, dict):
                    self.record.transcript_message_ids.add(str(message.get("id")))
        for source in main_sources:
            self._replay_source(source)
        compactions = sorted(
            (s for s in agent_sources if str(s.agent_id).startswith("acompact")),
            key=lambda s: min((line.ns for line in s.lines if line.ns), default=0),
        )
        for source in agent_sources:
            start = len(self.record.calls)
            if source in compactions and compactions.index(source) < len(self.boundaries):
                boundary, before = self.boundaries[compactions.index(source)]
                self._replay_source(source, initial=before)
                if len(self.record.calls) > start:
                    call = self.record.calls[start]
                    self.record.compactions.append(
                        {
                            "request": call.request.name,
                            "response": call.response.name,
                            "boundary_uuid": boundary,
                        }
                    )
            else:
                self._replay_source(source)
        return self.record

    def _replay_source(self, source: Source, initial: list[bodies.Message] | None = None) -> None:
        """Replays the streams of one file. A compaction agent starts from the main list as it
        stood at the boundary: its request summarises that conversation."""
        roots: dict[str, str] = {}
        streams: dict[str, list[Line]] = {}
        for line in source.lines:
            if line.data.get("type") in ("user", "assistant", "system"):
                streams.setdefault(_stream_of(line.data, source, roots), []).append(line)
        for name, lines in streams.items():
            agent = source.agent_id is not None or name != "main"
            self._replay_stream(name, lines, agent=agent, initial=initial or [])

    def _stream_record(self, name: str, agent: bool) -> None:
        if not agent:
            return
        tool_use_id, parent_message = self.spawns.get(name, (None, None))
        kind = "compaction" if name.startswith("acompact") else "subagent"
        self.record.streams.append(Stream(name, kind, tool_use_id, parent_message))

    def _replay_stream(
        self, name: str, lines: list[Line], *, agent: bool, initial: list[bodies.Message]
    ) -> None:
        self._stream_record(name, agent)
        messages = list(initial)
        calls: dict[str, PendingCall] = {}
        order: list[PendingCall] = []
        prompt = self.prompt_at.get(name) or self.ids.uuid()
        named_prompt: str | None = None
        cause = "first"
        previous_ns: int | None = None
        for line in lines:
            data = line.data
            kind = data.get("type")
            if kind == "system" and data.get("subtype") == "compact_boundary":
                if not agent:
                    self.boundaries.append((str(data.get("uuid")), messages))
                messages = []
                cause = "compaction"
            elif kind == "user" and isinstance(data.get("message"), dict):
                if data.get("promptId"):
                    named_prompt = str(data["promptId"])
                if not agent and _is_prompt(data):
                    prompt = named_prompt or self.ids.uuid()
                self._note_spawn(data, prompt, order)
                messages = _append(messages, "user", _blocks(data["message"].get("content")))
            elif kind == "assistant" and isinstance(data.get("message"), dict):
                message = data["message"]
                message_id = message.get("id")
                if not message_id or message.get("model") == "<synthetic>":
                    continue
                call = calls.get(message_id)
                if call is None:
                    request_id = data.get("requestId")
                    call = PendingCall(
                        str(message_id),
                        str(request_id) if request_id else None,
                        str(message.get("model", "")),
                        list(messages),
                        prompt,
                        line.ns,
                        previous_ns,
                        cause=cause,
                        transcript_prompt=named_prompt,
                    )
                    cause = "kept"
                    calls[message_id] = call
                    order.append(call)
                    messages = [*messages, {"role": "assistant", "content": []}]
                blocks = bodies.redact(_blocks(message.get("content")))
                call.blocks.extend(blocks)
                call.last_ns = line.ns
                call.line_uuid = data.get("uuid")
                messages = _extend_assistant(messages, message_id, calls, blocks)
            previous_ns = line.ns if line.ns is not None else previous_ns
        self._emit(name, agent, order)

    def _note_spawn(self, data: dict[str, Any], prompt: str, order: list[PendingCall]) -> None:
        """Remembers which prompt was current when a subagent's result came back, and which
        tool use and message started it, so its stream can name them."""
        result = data.get("toolUseResult")
        if not isinstance(result, dict) or not result.get("agentId"):
            return
        agent_id = str(result["agentId"])
        self.prompt_at[agent_id] = prompt
        tool_use_id = None
        for block in _blocks(data["message"].get("content")):
            if block.get("type") == "tool_result":
                tool_use_id = block.get("tool_use_id")
        parent = next(
            (
                c.message_id
                for c in reversed(order)
                if any(b.get("id") == tool_use_id for b in c.blocks)
            ),
            None,
        )
        self.spawns[agent_id] = (str(tool_use_id) if tool_use_id else None, parent)

    def _emit(self, name: str, agent: bool, order: list[PendingCall]) -> None:
        """Writes each call's bodies. A call already written for another transcript (history
        copied by a resume) was sent once, so it is written once."""
        setup = self.replay.setup
        system = system_blocks(agent_prompt(self.project) if agent else main_prompt(self.project))
        tools = setup.agent_tools if agent else setup.main_tools
        source = f"agent:{name}" if agent else "repl_main_thread"
        prev_request, cached = None, None
        known = [c.first_ns for c in order if c.first_ns is not None]
        floor = (min(known) if known else setup.clock.ns) - 1000 * _NS_PER_MS
        for call in order:
            if call.message_id not in self.replay.emitted:
                self.replay.emitted.add(call.message_id)
                request = self._request(
                    name, call, prev_request=prev_request, system=system, tools=tools, floor=floor
                )
                response = self._response(name, call, request, cached)
                land(
                    setup,
                    request,
                    response,
                    source=source,
                    model=call.model,
                    message_uuid=call.line_uuid,
                )
                self.record.calls.append(Call(name, call.transcript_prompt, request, response))
                floor = response.mtime_ns
            prev_request, cached = call.request_id, self.replay.cached_after.get(call.message_id)

    def _request(
        self,
        name: str,
        call: PendingCall,
        *,
        prev_request: str | None,
        system: list[bodies.Block],
        tools: list[dict[str, Any]],
        floor: int,
    ) -> Body:
        first: list[dict[str, Any]] = next(iter(call.messages), {"content": []})["content"]
        first_text = next((b.get("text", "") for b in first if b.get("type") == "text"), "")
        billing = bodies.billing_block(
            bodies.version_suffix(first_text), self.ids.hex(5), prev_request, call.prompt_id
        )
        body = bodies.request(
            model=call.model,
            messages=call.messages,
            system=[billing, *system],
            tools=tools,
            user=self.user,
            thinking=THINKING,
            effort="high",
        )
        return Body(
            name=f"{self.ids.uuid()}.request",
            role="request",
            data=bodies.dumps(body),
            mtime_ns=_request_time(call, floor),
            session=self.session_id,
            kind="call",
            stream=name,
            message_id=call.message_id,
            request_id=call.request_id,
            names_request=prev_request,
            prompt_id=call.prompt_id,
            cache_cause=call.cause,
        )

    def _response(self, name: str, call: PendingCall, request: Body, cached: int | None) -> Body:
        """The assembled message, named by its request id unless the transcript has none or
        another call used it; a kept call reads all its stream's previous call left cached."""
        stem = call.request_id
        if stem is None or self.replay.capture.has_body(f"{stem}.response"):
            stem = self.ids.uuid()
        last = call.blocks[-1].get("type") if call.blocks else None
        prompt_tokens = bodies.tokens(request.size)
        usage = bodies.usage(
            prompt_tokens=prompt_tokens,
            cached=(cached or 0) if call.cause == "kept" else 0,
            output_tokens=bodies.tokens(len(bodies.dumps(call.blocks))) + 10,
            uncached=3,
        )
        self.replay.cached_after[call.message_id] = bodies.left_cached(usage)
        message = bodies.response(
            message_id=call.message_id,
            model=call.model,
            content=call.blocks,
            stop_reason="tool_use" if last == "tool_use" else "end_turn",
            usage=usage,
        )
        ns = max((call.last_ns or request.mtime_ns) + _NS_PER_MS, request.mtime_ns + _NS_PER_MS)
        return Body(
            name=f"{stem}.response",
            role="response",
            data=bodies.dumps(message),
            mtime_ns=ns,
            session=self.session_id,
            kind="call",
            stream=name,
            message_id=call.message_id,
            request_id=call.request_id,
        )


def _request_time(call: PendingCall, floor: int) -> int:
    """Shortly before the first block arrived, after the line before it was written."""
    if call.first_ns is None:
        return floor + _NS_PER_MS
    start = call.first_ns - 1500 * _NS_PER_MS
    if call.before_ns is not None:
        start = max(start, call.before_ns + _NS_PER_MS)
    return max(min(start, call.first_ns), floor + _NS_PER_MS)


def _append(
    messages: list[bodies.Message], role: str, blocks: list[bodies.Block]
) -> list[bodies.Message]:
    """Adds a message; consecutive messages of one role are merged, as Claude Code does
    before sending. Never mutates a message an earlier request already holds."""
    if not blocks:
        return messages
    if messages and messages[-1]["role"] == role:
        merged = {"role": role, "content": [*messages[-1]["content"], *blocks]}
        return [*messages[:-1], merged]
    return [*messages, {"role": role, "content": blocks}]


def _extend_assistant(
    messages: list[bodies.Message],
    message_id: str,
    calls: dict[str, PendingCall],
    blocks: list[bodies.Block],
) -> list[bodies.Message]:
    """Adds a fragment's blocks to its assistant message, wherever it sits in the list."""
    position = len(calls[message_id].messages)
    if position >= len(messages):
        return messages
    updated = {"role": "assistant", "content": [*messages[position]["content"], *blocks]}
    return [*messages[:position], updated, *messages[position + 1 :]]


class Replay:
    """The whole replay: shared identity and tools, then each session of the directory."""

    def __init__(self, root: Path, setup: Setup, rng: random.Random) -> None:
        self.root = root
        self.setup = setup
        self.capture = setup.capture
        self.ids = Ids(rng)
        self.emitted: set[str] = set()
        self.cached_after: dict[str, int] = {}  # message id -> what its call left cached

    def run(self) -> list[Session]:
        files = sorted(
            p
            for p in self.root.glob("*/**/*")
            if p.is_file() and (p.suffix == ".jsonl" or p.name.endswith(".meta.json"))
        )
        sources = {p: _read(p, self.root) for p in files if p.suffix == ".jsonl"}
        for path in files:
            times = [line.ns for line in sources[path].lines if line.ns] if path in sources else []
            mtime = max(times) if times else self.setup.clock.ns
            self.capture.put(
                f"{PROJECTS_DIR}/{path.relative_to(self.root).as_posix()}", path.read_bytes(), mtime
            )
        sessions = []
        for path in files:
            if path.suffix != ".jsonl" or not SESSION_NAME.match(path.stem):
                continue
            if path.parent.parent != self.root:
                continue
            session_id = path.stem
            members = [sources[path], *self._agents_of(session_id, path.parent, sources)]
            replay = SessionReplay(self, session_id, path.parent.name, members)
            session = replay.run()
            session.sidecars = [
                f"{PROJECTS_DIR}/{p.relative_to(self.root).as_posix()}"
                for p in files
                if p.name.endswith(".meta.json") and p.is_relative_to(path.parent / session_id)
            ]
            sessions.append(session)
        return sessions

    def _agents_of(
        self, session_id: str, folder: Path, sources: dict[Path, Source]
    ) -> list[Source]:
        """Subagent files of a session: under ``<session>/subagents/`` (2.1.2 and later), or
        beside it (2.0.x), where the lines' sessionId tells whose they are."""
        out = []
        for path, source in sources.items():
            if not path.name.startswith("agent-"):
                continue
            nested = path.is_relative_to(folder / session_id)
            flat = path.parent == folder and any(
                line.data.get("sessionId") == session_id for line in source.lines[:5]
            )
            if nested or flat:
                out.append(source)
        return out


class NoTranscripts(ValueError):
    """The directory to replay holds no session transcript: a capture of it would hold nothing,
    which would pass for a replay that worked."""


def replay(options: SynthOptions, capture: Capture) -> list[Session]:
    """The sessions of ``options.from_transcripts`` replayed into ``capture``; NoTranscripts
    when it holds none."""
    root = options.from_transcripts
    if root is None:
        raise ValueError("replay needs options.from_transcripts")
    if not root.is_dir():
        raise NoTranscripts(f"{root} is not a directory")
    rng = random.Random(f"asz.synth:{options.seed}:replay")
    sessions = Replay(root, make_setup(options, capture, rng), rng).run()
    if not sessions:
        hint = f"; did you mean {root / 'projects'}?" if (root / "projects").is_dir() else ""
        raise NoTranscripts(
            f"no Claude Code transcripts under {root} (a projects directory holds "
            f"<project>/<session id>.jsonl){hint}"
        )
    return sessions
