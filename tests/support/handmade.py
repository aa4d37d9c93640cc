"""Sessions written by hand: transcript lines and bodies the way Claude Code writes them,
landed with the real lander and body store, so a test reads what a real root would hold;
and the message histories their requests carry."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import orjson

from asz.adapters.provider_index import sync_index
from asz.adapters.session_filter import Verdict
from asz.adapters.transcript_landing import TranscriptLander, TranscriptSource
from asz.bodykeys import read_keys
from asz.store import MAIN_STREAM, Store, open_store
from asz.store._bodies import BodyLander, IncomingBody
from asz.store._layout import stream_dir
from asz.store._root import Root
from asz.tally import Tally

__all__ = [
    "MODEL",
    "PROJECT",
    "SESSION",
    "START",
    "SYSTEM_PROMPT",
    "TOOLS",
    "HandMade",
    "chain",
    "history",
    "spelled",
    "user_message",
]

SESSION = "11111111-2222-4333-8444-555555555555"
MODEL = "claude-opus-4-6"
PROJECT = "-home-dev-proj"
START = datetime(2026, 9, 1, 10, 0, tzinfo=UTC)
TOOLS = [
    {"name": name, "description": f"The {name} tool. " + "x" * 1200, "input_schema": {}}
    for name in ("Agent", "Bash", "Read")
]
SYSTEM_PROMPT = "You are an interactive agent that helps users with software engineering tasks."


def user_message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def spelled(messages: list[dict[str, Any]], ttl: str | None = "1h") -> list[dict[str, Any]]:
    """The message list as Claude Code sends it: the newest message's text as a list of one
    block carrying the marker, every older one as written."""
    out = [dict(m) for m in messages]
    if out:
        newest = out[-1]
        content = newest["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
        marker: dict[str, Any] = {"type": "ephemeral"}
        if ttl:
            marker["ttl"] = ttl
        newest["content"] = [*blocks[:-1], {**blocks[-1], "cache_control": marker}]
    return out


@dataclass
class HandMade:
    """One session written by hand and landed through the store."""

    base: Path
    session: str = SESSION
    streams: dict[str, list[bytes]] = field(default_factory=dict)
    bodies: list[IncomingBody] = field(default_factory=list)
    index: list[dict[str, Any]] = field(default_factory=list)
    seconds: float = 0.0
    _ids: itertools.count = field(default_factory=itertools.count)

    @property
    def store(self) -> Store:
        return open_store(self.base / "root")

    def now(self, advance: float = 1.0) -> str:
        self.seconds += advance
        stamp = START + timedelta(seconds=self.seconds)
        return stamp.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def uuid(self) -> str:
        return f"00000000-0000-4000-8000-{next(self._ids):012d}"

    def line(self, stream: str, value: dict[str, Any], advance: float = 1.0) -> None:
        envelope = {
            "parentUuid": None,
            "isSidechain": stream != MAIN_STREAM,
            "userType": "external",
            "cwd": "/home/dev/proj",
            "sessionId": self.session,
            "version": "2.1.260",
            "uuid": self.uuid(),
            "timestamp": self.now(advance),
        }
        if stream != MAIN_STREAM:
            envelope["agentId"] = stream
        self.streams.setdefault(stream, []).append(orjson.dumps({**envelope, **value}))

    def prompt(self, stream: str, prompt_id: str | None, text: str = "do it") -> None:
        value: dict[str, Any] = {"type": "user", "message": user_message(text)}
        if prompt_id:
            value["promptId"] = prompt_id
        self.line(stream, value)

    def call(
        self,
        stream: str,
        message_id: str,
        request_id: str | None = None,
        *,
        model: str = MODEL,
        texts: int = 2,
        tool_uses: tuple[str, ...] = (),
        advance: float = 1.0,
    ) -> None:
        """The assistant lines of one call: one per content block."""
        blocks: list[dict[str, Any]] = [{"type": "thinking", "thinking": "", "signature": "s"}]
        blocks += [{"type": "text", "text": f"part {n}"} for n in range(texts - 1)]
        blocks += [{"type": "tool_use", "id": t, "name": "Agent", "input": {}} for t in tool_uses]
        for n, block in enumerate(blocks):
            value: dict[str, Any] = {
                "type": "assistant",
                "message": {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": model,
                    "content": [block],
                    "stop_reason": None,
                    "usage": {"input_tokens": 3, "output_tokens": 1},
                },
            }
            if request_id:
                value["requestId"] = request_id
            self.line(stream, value, advance if n == 0 else 0.1)

    def agent_result(self, stream: str, tool_use_id: str, agent: str, prompt_id: str) -> None:
        self.line(
            stream,
            {
                "type": "user",
                "promptId": prompt_id,
                "message": {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": tool_use_id}],
                },
                "toolUseResult": {"status": "completed", "agentId": agent},
            },
        )

    def compaction(self, stream: str, summary: str) -> None:
        self.line(
            stream,
            {
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "compactMetadata": {"trigger": "manual", "preTokens": 1234},
            },
        )
        self.line(
            stream,
            {"type": "user", "message": user_message(summary), "isCompactSummary": True},
        )

    def request(
        self,
        prompt: str | None,
        prev: str | None = None,
        messages: list[dict[str, Any]] | None = None,
        *,
        name: str | None = None,
        ttl: str | None = "1h",
        **fields: Any,
    ) -> str:
        """Lands (later) a request naming ``prompt`` and ``prev``; returns its record id."""
        billing = "x-anthropic-billing-header: cc_version=2.1.260.a1b; cc_entrypoint=cli; "
        billing += f"cch={len(self.bodies):05d};"
        if prev:
            billing += f" cc_prev_req={prev};"
        if prompt:
            billing += f" cc_prompt_id={prompt};"
        marker: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
        body: dict[str, Any] = {
            "model": MODEL,
            "messages": spelled(messages or [user_message("do it")], ttl),
            "system": [
                {"type": "text", "text": billing},
                {"type": "text", "text": "You are Claude Code.", "cache_control": marker},
                {"type": "text", "text": SYSTEM_PROMPT, "cache_control": marker},
            ],
            "tools": TOOLS,
            "metadata": {"user_id": orjson.dumps({"session_id": self.session}).decode()},
            "max_tokens": 32000,
            "thinking": {"type": "adaptive"},
            "output_config": {"effort": "high"},
        }
        body.update(fields)
        stem = name or self.uuid()
        self._add(f"{stem}.request", "request", orjson.dumps(body))
        return f"{stem}.request"

    def response(
        self,
        request_id: str | None,
        message_id: str | None,
        usage: dict[str, Any] | None = None,
        **fields: Any,
    ) -> str:
        body: dict[str, Any] = {"model": MODEL, "type": "message", "role": "assistant"}
        if message_id:
            body["id"] = message_id
        body["content"] = [{"type": "text", "text": "done"}]
        body["stop_reason"] = "end_turn"
        body["usage"] = usage or {"input_tokens": 5, "output_tokens": 7}
        body.update(fields)
        stem = request_id or self.uuid()
        self._add(f"{stem}.response", "response", orjson.dumps(body))
        return f"{stem}.response"

    def _add(self, record_id: str, role: str, data: bytes) -> None:
        stem = record_id.rsplit(".", 1)[0]
        self.bodies.append(
            IncomingBody(
                record_id=record_id,
                role=role,
                src=f"{record_id}.json",
                body=data,
                keys=read_keys(role, stem, data),
                mtime_ns=len(self.bodies),
            )
        )

    def index_line(self, request: str, response: str, message_id: str) -> None:
        self.index.append(
            {
                "session_id": self.session,
                "message_id": message_id,
                "request_file": f"/home/dev/.claude/asz/provider-bodies/{request}.json",
                "response_file": f"/home/dev/.claude/asz/provider-bodies/{response}.json",
            }
        )

    def land(self, gap_in: str | None = None) -> Store:
        """Writes and lands everything; ``gap_in`` loses the landed file of that stream's
        second line, as a damaged or removed file would."""
        store = self.store
        Root(Path(store.location)).ensure()
        session = store.open_session(self.session)
        writer = store.writer(self.session, store.batch())
        lander = TranscriptLander(
            session,
            writer,
            max_delta_bytes=1,  # one line per landed file, so a gap can be made
            on_window=lambda window: None,
            max_windows=100_000,
        )
        for stream, lines in self.streams.items():
            relpath = (
                f"{PROJECT}/{self.session}.jsonl"
                if stream == MAIN_STREAM
                else f"{PROJECT}/{self.session}/subagents/agent-{stream}.jsonl"
            )
            path = self.base / "projects" / relpath
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"".join(line + b"\n" for line in lines))
            tally = Tally()
            lander.land(TranscriptSource(path, relpath, self.session, stream), tally)
            writer.batch.commit()
            assert not tally.errors and not tally.conflict_sources
            if stream == gap_in:
                lost = session.landed_in(stream_dir(self.session, relpath))[1].path
        if self.bodies:
            outcome = BodyLander(store).land(self.session, self.bodies, 2 * 1024 * 1024)
            assert not outcome.tally.errors and not outcome.conflicts
        if self.index:
            bodies_dir = self.base / "provider-bodies"
            bodies_dir.mkdir(exist_ok=True)
            data = b"".join(orjson.dumps(line) + b"\n" for line in self.index)
            (bodies_dir / "index.jsonl").write_bytes(data)
            result = sync_index(bodies_dir, store, lambda s: Verdict.COLLECT, 1 << 20)
            assert not result.tally.errors
        if gap_in is not None:  # last: nothing lands into a session with a gap
            (Path(store.location) / lost).unlink()
        return store


def chain(
    made: HandMade, stream: str, prompt: str, calls: list[tuple[str, str]], prev: str | None = None
) -> list[str]:
    """Lines and bodies of consecutive calls ``(message id, request id)`` of one prompt in a
    stream, each request naming the one before; returns the request record ids."""
    records = []
    for message_id, request_id in calls:
        made.call(stream, message_id, request_id)
        records.append(made.request(prompt, prev))
        made.response(request_id, message_id)
        prev = request_id
    return records


def history(turns: int, rewrite: int | None = None) -> list[dict[str, Any]]:
    """A prompt, then ``turns`` (answer, tool result) pairs; ``rewrite`` changes one message."""
    messages: list[dict[str, Any]] = [user_message("please fix the tests")]
    for n in range(turns):
        messages.append(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": f"t{n}",
                        "name": "Bash",
                        "input": {"command": f"run {n}"},
                    }
                ],
            }
        )
        messages.append(
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": f"t{n}", "content": f"output {n}"},
                    {"type": "text", "text": "<total_tokens>1</total_tokens>"},
                ],
            }
        )
    if rewrite is not None:
        messages[rewrite] = {"role": messages[rewrite]["role"], "content": "something else"}
    return messages
