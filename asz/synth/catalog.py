"""The fixed texts of a capture: tool definitions, system prompts, reminders, side-call prompts.

The long texts live in ``data/`` and were written for this project; this module only loads
them and turns them into the JSON shapes a request carries.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "AGENT_MODEL",
    "API_VERDICTS",
    "CACHE_1H",
    "CACHE_1H_GLOBAL",
    "CACHE_5M",
    "CONTEXT_MANAGEMENT",
    "CONTEXT_TOKENS",
    "EFFORT_KEEPS_CACHE",
    "IDENTITY",
    "MAIN_MODEL",
    "MAX_TOKENS",
    "OUTPUT_STYLE",
    "REDACTED",
    "SCHEMA_DRAFT",
    "SUMMARY_CLOSING",
    "SUMMARY_PREAMBLE",
    "SWITCH_MODEL",
    "THINKING",
    "TITLE_MAX_TOKENS",
    "TITLE_MODEL",
    "TITLE_PROMPT",
    "TITLE_SYSTEM",
    "Tool",
    "agent_subset",
    "builtin_tools",
    "fill",
    "late_tool",
    "parse_tools",
    "sections",
    "text",
    "tool_set",
    "tools_from_file",
]

IDENTITY = "You are Claude Code, Anthropic's official CLI for Claude."
MAIN_MODEL = "claude-opus-4-6"
SWITCH_MODEL = "claude-opus-5-5"
EFFORT_KEEPS_CACHE = frozenset({SWITCH_MODEL})
"""The models of a capture on which a change of effort keeps the cache: the model switched to
is one of those Claude Code's documentation names (Opus 5.5), so that a capture holds an
effort change that breaks nothing as well as one that breaks the cache."""
API_VERDICTS = {
    "model": "model_changed",
    "system": "system_changed",
    "upgrade": "system_changed",
    "tools": "tools_changed",
    "messages": "messages_changed",
}
"""The ``cache_miss_reason`` the provider gives a break of each cause, written on the lines of
an injected break as recent Claude Code writes it (``message.diagnostics``); a cause it does
not compare (effort, fast mode, time) gets ``unavailable``."""
AGENT_MODEL = "claude-sonnet-4-6"
TITLE_MODEL = "claude-haiku-4-5-20251001"
MAX_TOKENS = 64000
TITLE_MAX_TOKENS = 512
CONTEXT_TOKENS = 200_000
SCHEMA_DRAFT = "https://json-schema.org/draft/2020-12/schema"
CACHE_1H: dict[str, str] = {"type": "ephemeral", "ttl": "1h"}
CACHE_5M: dict[str, str] = {"type": "ephemeral"}
"""The marker of what lives five minutes: subagents' messages."""
CACHE_1H_GLOBAL: dict[str, str] = {"type": "ephemeral", "ttl": "1h", "scope": "global"}
THINKING: dict[str, str] = {"type": "adaptive", "display": "omitted"}
CONTEXT_MANAGEMENT: dict[str, Any] = {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]}
REDACTED = "<REDACTED>"

TITLE_SYSTEM = (
    "Summarize this coding conversation in under 50 characters.\n"
    "Capture the main task, key files, problems addressed, and current status."
)
TITLE_PROMPT = (
    "Please write a 5-10 word title for the following conversation:\n\n"
    "User: {prompt}\n\nClaude: {answer}\n\n"
    "Respond with the title for the conversation and nothing else."
)
SUMMARY_PREAMBLE = (
    "This session continues an earlier conversation that ran out of context. "
    "The summary below covers the earlier part of the conversation.\n\n"
)
SUMMARY_CLOSING = (
    "\n\nContinue with the task you were working on when the summary was written, "
    "without asking the user further questions."
)
OUTPUT_STYLE = (
    "\n\n# Output style: Explanatory\n"
    "The user switched to the Explanatory output style. Besides doing the work, explain the "
    "reasoning behind implementation choices and point out patterns in the codebase that the "
    "user may want to reuse. Put these explanations in short paragraphs marked with "
    '"Insight:" before or after the code they are about, and keep them to two or three '
    "sentences each."
)


@dataclass(frozen=True)
class Tool:
    """One tool definition and the tool lists it belongs to (main, agent, late)."""

    name: str
    sets: tuple[str, ...]
    description: str
    schema: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        schema = self.schema
        if not self.name.startswith("mcp__"):
            schema = {"$schema": SCHEMA_DRAFT, **schema}
        out = {"name": self.name, "description": self.description, "input_schema": schema}
        return {**out, "defer_loading": True} if "deferred" in self.sets else out


@cache
def text(name: str) -> str:
    """A data file's text."""
    return resources.files("asz.synth").joinpath("data", name).read_text(encoding="utf-8")


@cache
def sections(name: str) -> dict[str, tuple[str, ...]]:
    """The ``@@name`` sections of a data file, in order; a name may repeat. Lines before the
    first section are a comment for people editing the file."""
    found: dict[str, list[str]] = {}
    current = ""
    lines: list[str] = []
    for line in [*text(name).split("\n"), "@@"]:
        if line.startswith("@@"):
            if current:
                found.setdefault(current, []).append("\n".join(lines).strip("\n") + "\n")
            current, lines = line.removeprefix("@@"), []
        elif current:
            lines.append(line)
    return {key: tuple(values) for key, values in found.items()}


def fill(template: str, **values: str) -> str:
    """Fills ``{name}`` slots; unlike ``str.format`` it leaves every other brace alone, which
    the code and JSON inside the templates need."""
    for key, value in values.items():
        template = template.replace("{" + key + "}", value)
    return template


def parse_tools(source: str) -> tuple[Tool, ...]:
    """Reads the ``@@tool`` sections of tools.txt (format described at the top of that file)."""
    tools: list[Tool] = []
    header: list[str] | None = None
    parts: dict[str, list[str]] = {}
    part = ""

    def close() -> None:
        if header is not None:
            description = "\n".join(parts["description"]).strip("\n")
            schema = orjson.loads("\n".join(parts["schema"]))
            tools.append(Tool(header[0], tuple(header[1:]), description, schema))

    for line in source.split("\n"):
        if line.startswith("@@tool "):
            close()
            header = line.removeprefix("@@tool ").split()
            parts = {"description": [], "schema": []}
            part = ""
        elif header is None:
            continue
        elif line in ("@@description", "@@schema"):
            part = line.removeprefix("@@")
        elif part:
            parts[part].append(line)
    close()
    return tuple(tools)


@cache
def builtin_tools() -> tuple[Tool, ...]:
    return parse_tools(text("tools.txt"))


def tool_set(name: str) -> list[dict[str, Any]]:
    """The tools of one list ("main", "agent" or "late") as request JSON; a deferred tool
    carries ``defer_loading``."""
    return [tool.to_json() for tool in builtin_tools() if name in tool.sets]


def tools_from_file(path: Path) -> list[dict[str, Any]]:
    """The tool list of a captured request body, so a capture can carry a real tool list."""
    body = orjson.loads(path.read_bytes())
    if not isinstance(body, dict) or not isinstance(body.get("tools"), list):
        raise ValueError(f"{path} holds no request object with a tools list")
    return list(body["tools"])


def late_tool(late: list[dict[str, Any]], present: list[dict[str, Any]]) -> dict[str, Any]:
    """A tool for the "tool added" cache break: the first late tool not yet in the list, or a
    made-up MCP tool when a supplied tool list already holds them all."""
    names = {tool.get("name") for tool in present}
    for tool in late:
        if tool["name"] not in names:
            return tool
    return {
        "name": f"mcp__scratch__note_{len(names)}",
        "description": "Append a line to the session's scratch notes file.",
        "input_schema": {
            "type": "object",
            "properties": {"text": {"type": "string"}},
            "required": ["text"],
        },
    }


def agent_subset(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The subagent's tools out of a main list: those the built-in agent list names, or the
    whole list when it shares no name with it."""
    wanted = {tool.name for tool in builtin_tools() if "agent" in tool.sets}
    chosen = [tool for tool in tools if tool.get("name") in wanted]
    return chosen or list(tools)
