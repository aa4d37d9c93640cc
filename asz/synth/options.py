"""What a synthetic capture should contain; the CLI maps its flags onto these fields."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["CLAUDE_VERSION", "UPGRADED_VERSION", "SynthOptions"]

CLAUDE_VERSION = "2.1.260"
UPGRADED_VERSION = "2.1.262"
"""The version a session's Claude Code is upgraded to when the plan injects an upgrade."""


@dataclass(frozen=True)
class SynthOptions:
    """Knobs of one capture. Equal options always give a byte-identical tree."""

    seed: int = 1
    sessions: int = 2
    turns: int = 6
    tool_calls: int = 2
    subagents: int = 1
    compactions: int = 1
    cache_breaks: bool = True
    uuid_responses: int = 1
    index: bool = False
    from_transcripts: Path | None = None
    tools_file: Path | None = None
    secrets: bool = False
    """Plant one secret of every kind, and near misses, in a tool result of each session."""
    start: datetime = datetime(2026, 9, 18, 9, 0, tzinfo=UTC)

    def to_json(self) -> dict[str, Any]:
        """The options as recorded in expected.json, so a reader can regenerate the capture."""
        out: dict[str, Any] = {}
        for field in fields(self):
            value = getattr(self, field.name)
            if isinstance(value, Path):
                value = str(value)
            elif isinstance(value, datetime):
                value = value.isoformat()
            out[field.name] = value
        return out
