"""A Claude Code directory written by hand, the way Claude Code writes it: in place.

Shared by the service, metrics and notify tests and by ``bench/service.py``, so it imports
nothing a test extra provides: a benchmark runs with what the README installs.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

__all__ = ["Claude", "request_body", "response_body"]


def request_body(
    session: str,
    text: str = "hello",
    prev: str | None = None,
    *,
    prompt: str | None = "p1",
    tools: bool = False,
    padding: int = 100,
) -> bytes:
    """A request of 2.1.260's shape, naming ``session`` in ``metadata.user_id`` (which is how
    its session is found), its previous request and prompt in the billing block, and padded
    like a real system prompt; ``tools`` adds two tool definitions worth cutting out."""
    billing = "x-anthropic-billing-header: cc_version=2.1.260; cch=00000;"
    if prev:
        billing += f" cc_prev_req={prev};"
    if prompt:
        billing += f" cc_prompt_id={prompt};"
    user_id = orjson.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session})
    body: dict[str, object] = {
        "model": "claude-test",
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "system": [
            {"type": "text", "text": billing},
            {"type": "text", "text": "You are Claude Code. " + "Be careful. " * padding},
        ],
    }
    if tools:
        body["tools"] = [
            {"name": "Read", "description": "Reads a file. " * 120, "input_schema": {}},
            {"name": "Grep", "description": "Searches files. " * 120, "input_schema": {}},
        ]
    body["metadata"] = {"user_id": user_id.decode()}
    body["max_tokens"] = 32000
    return orjson.dumps(body)


def response_body(message_id: str, text: str = "done") -> bytes:
    """A whole response; only its ``id`` ties it to a transcript's call."""
    return orjson.dumps(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": "claude-test",
            "content": [{"type": "text", "text": text}],
            "stop_reason": "end_turn",
        }
    )


class Claude:
    """A Claude Code directory that tests write into the way Claude Code does: in place."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @property
    def bodies(self) -> Path:
        return self.path / "asz" / "provider-bodies"

    def transcript_path(self, session: str, project: str = "-home-u-proj") -> Path:
        return self.path / "projects" / project / f"{session}.jsonl"

    def body(self, name: str, data: bytes, mtime: float | None = None) -> Path:
        path = self.bodies / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if mtime is not None:
            os.utime(path, (mtime, mtime))
        return path

    def start_transcript(self, session: str, project: str = "-home-u-proj") -> None:
        cwd = "/" + project.strip("-").replace("-", "/")
        line = {
            "type": "user",
            "sessionId": session,
            "uuid": f"{session}-u",
            "parentUuid": None,
            "cwd": cwd,
            "message": {"role": "user", "content": "hi"},
        }
        self._append(self.transcript_path(session, project), line)

    def assistant_line(self, session: str, message_id: str, project: str = "-home-u-proj") -> None:
        cwd = "/" + project.strip("-").replace("-", "/")
        line = {
            "type": "assistant",
            "sessionId": session,
            "uuid": f"{session}-{message_id}",
            "parentUuid": f"{session}-u",
            "cwd": cwd,
            "message": {"id": message_id, "role": "assistant", "model": "claude-test"},
        }
        self._append(self.transcript_path(session, project), line)

    @staticmethod
    def _append(path: Path, line: dict[str, Any]) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("ab") as handle:
            handle.write(orjson.dumps(line) + b"\n")
