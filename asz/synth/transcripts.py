"""Transcript lines in Claude Code's JSONL shape: one object per line, one line per event.

Each method appends one line to the capture at the simulated time and returns the line's
uuid, so that the next line can name it as its parent.
"""

from __future__ import annotations

from typing import Any

import orjson

from asz.synth.clock import iso_ms
from asz.synth.options import CLAUDE_VERSION
from asz.synth.writer import Capture

__all__ = ["Transcript"]


class Transcript:
    """One transcript file (main session or one subagent) and its parent chain."""

    def __init__(
        self,
        capture: Capture,
        path: str,
        *,
        session_id: str,
        cwd: str,
        branch: str,
        slug: str,
        agent_id: str | None = None,
        version: str = CLAUDE_VERSION,
    ) -> None:
        self.capture = capture
        self.version = version
        """The Claude Code version the lines name; an upgrade changes it."""
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.branch = branch
        self.slug = slug
        self.agent_id = agent_id
        self.parent: str | None = None
        self.message_ids: list[str] = []

    def _envelope(self, parent: str | None) -> dict[str, Any]:
        line: dict[str, Any] = {
            "parentUuid": parent,
            "isSidechain": self.agent_id is not None,
            "userType": "external",
            "entrypoint": "cli",
            "cwd": self.cwd,
            "sessionId": self.session_id,
            "version": self.version,
            "gitBranch": self.branch,
        }
        if self.agent_id is not None:
            line["agentId"] = self.agent_id
        line["slug"] = self.slug
        return line

    def _write(self, line: dict[str, Any], ns: int) -> None:
        self.capture.append(self.path, orjson.dumps(line) + b"\n", ns)

    def snapshot(self, message_uuid: str, ns: int) -> None:
        """The file-history snapshot Claude Code writes before each typed prompt."""
        stamp = iso_ms(ns)
        self._write(
            {
                "type": "file-history-snapshot",
                "messageId": message_uuid,
                "snapshot": {
                    "messageId": message_uuid,
                    "trackedFileBackups": {},
                    "timestamp": stamp,
                },
                "isSnapshotUpdate": False,
            },
            ns,
        )

    def user(
        self,
        uuid: str,
        content: str | list[dict[str, Any]],
        prompt_id: str,
        ns: int,
        *,
        root: bool = False,
        extra: dict[str, Any] | None = None,
    ) -> str:
        line = self._envelope(None if root else self.parent)
        line.update(
            type="user",
            message={"role": "user", "content": content},
            uuid=uuid,
            timestamp=iso_ms(ns),
            promptId=prompt_id,
        )
        line.update(extra or {})
        self._write(line, ns)
        self.parent = uuid
        return uuid

    def prompt(self, uuid: str, text: str, prompt_id: str, ns: int, *, root: bool = False) -> str:
        return self.user(uuid, text, prompt_id, ns, root=root, extra={"permissionMode": "default"})

    def tool_result(
        self,
        uuid: str,
        block: dict[str, Any],
        prompt_id: str,
        ns: int,
        *,
        result: Any,
        source: str,
    ) -> str:
        return self.user(
            uuid,
            [block],
            prompt_id,
            ns,
            extra={"toolUseResult": result, "sourceToolAssistantUUID": source},
        )

    def assistant(
        self,
        uuid: str,
        message: dict[str, Any],
        request_id: str | None,
        ns: int,
        *,
        effort: str | None = None,
    ) -> str:
        """One content block of a streamed message; ``message`` carries that block only,
        a running ``output_tokens`` and no stop reason, as Claude Code writes it, and the
        line the turn's ``effort``, as recent builds do."""
        line = self._envelope(self.parent)
        if effort is not None:
            line["effort"] = effort
        line["message"] = message
        if request_id is not None:
            line["requestId"] = request_id
        line.update(type="assistant", uuid=uuid, timestamp=iso_ms(ns))
        self._write(line, ns)
        self.parent = uuid
        if message["id"] not in self.message_ids:
            self.message_ids.append(message["id"])
        return uuid

    def compact_boundary(self, uuid: str, ns: int, *, pre_tokens: int) -> str:
        """The epoch cut: no parent, the previous line as logical parent."""
        line = self._envelope(None)
        line.update(
            logicalParentUuid=self.parent,
            type="system",
            subtype="compact_boundary",
            content="Conversation compacted",
            isMeta=False,
            timestamp=iso_ms(ns),
            uuid=uuid,
            level="info",
            compactMetadata={"trigger": "auto", "preTokens": pre_tokens},
        )
        self._write(line, ns)
        self.parent = uuid
        return uuid

    def compact_summary(self, uuid: str, summary: str, prompt_id: str, ns: int) -> str:
        return self.user(
            uuid,
            summary,
            prompt_id,
            ns,
            extra={"isVisibleInTranscriptOnly": True, "isCompactSummary": True},
        )

    def turn_duration(self, uuid: str, duration_ms: int, ns: int) -> str:
        line = self._envelope(self.parent)
        line.update(
            type="system",
            subtype="turn_duration",
            durationMs=duration_ms,
            timestamp=iso_ms(ns),
            uuid=uuid,
            isMeta=False,
        )
        self._write(line, ns)
        self.parent = uuid
        return uuid

    def ai_title(self, title: str, ns: int) -> None:
        self._write({"type": "ai-title", "aiTitle": title, "sessionId": self.session_id}, ns)
