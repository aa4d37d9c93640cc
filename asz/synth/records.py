"""What a generated or replayed session is made of, as the ground truth needs it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asz.synth.writer import Body

__all__ = ["Call", "Change", "Session", "Stream"]


@dataclass
class Call:
    """One model call of a stream: its request body and its response body. ``prompt_id`` is
    the prompt the transcript names for the call (what a reader can know), if any."""

    stream: str
    prompt_id: str | None
    request: Body
    response: Body


@dataclass(frozen=True)
class Change:
    """What the simulation changed before a call, as the ground truth records it: the plan's
    name for it (``tools_loaded``, ``ttl_5m``, ...) and what was done."""

    injected: str
    detail: str


@dataclass
class Stream:
    """A transcript stream: ``main``, a subagent, or the compaction agent."""

    stream: str
    kind: str
    tool_use_id: str | None = None
    parent_message_id: str | None = None
    agent_type: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"stream": self.stream, "kind": self.kind}
        if self.kind != "main":
            out.update(
                tool_use_id=self.tool_use_id,
                parent_message_id=self.parent_message_id,
                agent_type=self.agent_type,
            )
        return out


@dataclass
class Session:
    id: str
    cwd: str
    project_dir: str
    transcripts: list[str] = field(default_factory=list)
    sidecars: list[str] = field(default_factory=list)
    streams: list[Stream] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    breaks: list[dict[str, Any]] = field(default_factory=list)
    kept_changes: list[dict[str, Any]] = field(default_factory=list)
    """Changes that keep the cache (an effort change on a model that keeps it)."""
    transcript_message_ids: set[str] = field(default_factory=set)
    planted: list[dict[str, Any]] = field(default_factory=list)
    """With ``--secrets``: each planted value, the rule that must find it (none for a near
    miss) and what must be gone after redaction."""
