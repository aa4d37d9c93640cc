"""The context Claude Code injects around the conversation: system blocks, the reminder blocks
of a chain's first user message, and the role:"system" notes placed between messages."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from asz.synth.catalog import CACHE_1H, CACHE_1H_GLOBAL, CONTEXT_TOKENS, IDENTITY, fill, text
from asz.synth.project import Project

__all__ = [
    "DEFERRED_TOOLS",
    "agent_prompt",
    "agent_reminders",
    "encode_cwd",
    "environment_note",
    "main_prompt",
    "main_reminders",
    "reminder",
    "system_blocks",
    "token_note",
]

_CLAUDE_MD_HEAD = (
    "As you answer the user's questions, you can use the following context:\n"
    "# claudeMd\n"
    "The instructions below come from the user and from the codebase. Follow them: they take "
    "precedence over your default behaviour.\n\n"
)
_CLAUDE_MD_FOOT = (
    "\n      IMPORTANT: this context may or may not be relevant to your tasks. Do not respond "
    "to it unless it is highly relevant to the task at hand.\n"
)


def encode_cwd(cwd: str) -> str:
    """The project directory name Claude Code derives from a cwd: every character outside
    ``[A-Za-z0-9]`` becomes ``-``."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


def reminder(body: str) -> dict[str, str]:
    return {"type": "text", "text": f"<system-reminder>\n{body.rstrip()}\n</system-reminder>\n"}


def system_blocks(prompt: str) -> list[dict[str, Any]]:
    """The identity line and the prompt; the billing block is prepended per request because
    it changes on every call."""
    return [
        {"type": "text", "text": IDENTITY, "cache_control": dict(CACHE_1H_GLOBAL)},
        {"type": "text", "text": prompt, "cache_control": dict(CACHE_1H)},
    ]


def _environment(project: Project) -> dict[str, str]:
    return {
        "cwd": project.cwd,
        "platform": project.platform,
        "shell": project.shell,
        "os_version": project.os_version,
    }


def main_prompt(project: Project) -> str:
    memory_dir = f"{project.home}/.claude/projects/{encode_cwd(project.cwd)}/memory/"
    return fill(
        text("system_prompt.md"),
        memory_dir=memory_dir,
        branch=project.branch,
        git_status=project.git_status(),
        recent_commits="\n".join(project.commits[:5]),
        **_environment(project),
    )


def agent_prompt(project: Project) -> str:
    return fill(text("agent_prompt.md"), **_environment(project))


def _claude_md(project: Project, today: datetime, *, full: bool) -> str:
    project_md = fill(
        text("claude_md_project.md"),
        project=project.name,
        summary=project.summary[0].upper() + project.summary[1:],
        package=project.package,
        layout=project.layout(),
    )
    parts = [
        _CLAUDE_MD_HEAD,
        f"Contents of {project.home}/.claude/CLAUDE.md (user's private global instructions "
        f"for all projects):\n\n{text('claude_md_user.md')}\n",
        f"Contents of {project.cwd}/CLAUDE.md (project instructions, checked into the "
        f"codebase):\n\n{project_md}\n",
    ]
    if full:
        for name in ("testing", "style", "api"):
            rules = fill(text(f"rules_{name}.md"), package=project.package)
            parts.append(
                f"Contents of {project.cwd}/.claude/rules/{name}.md (project rules, checked "
                f"into the codebase):\n\n{rules}\n"
            )
        memory = f"{project.home}/.claude/projects/{encode_cwd(project.cwd)}/memory/MEMORY.md"
        parts.append(
            f"Contents of {memory} (user's auto-memory, persists across conversations):\n\n"
            f"{project.memory_index()}\n"
        )
    parts.append(f"# userEmail\nThe user's email address is {project.email}.\n")
    parts.append(f"# currentDate\nToday's date is {today:%Y-%m-%d}.\n")
    parts.append(_CLAUDE_MD_FOOT)
    return "".join(parts)


DEFERRED_TOOLS = (
    "mcp__slack__post_message",
    "mcp__slack__list_channels",
    "mcp__slack__get_thread",
    "mcp__slack__search_messages",
    "mcp__notion__search",
    "mcp__notion__get_page",
    "mcp__notion__create_page",
    "mcp__notion__update_block",
    "mcp__grafana__query_prometheus",
    "mcp__grafana__list_dashboards",
    "mcp__grafana__get_dashboard",
    "mcp__grafana__list_alerts",
    "mcp__figma__get_file",
    "mcp__figma__get_node_image",
    "mcp__figma__list_comments",
    "mcp__linear__create_issue",
    "mcp__linear__list_issues",
    "mcp__linear__update_issue",
    "mcp__linear__add_comment",
    "mcp__datadog__search_logs",
    "mcp__datadog__get_monitor",
    "mcp__datadog__list_incidents",
    "mcp__kubernetes__get_pods",
    "mcp__kubernetes__get_logs",
    "mcp__kubernetes__describe_deployment",
    "mcp__aws__describe_instances",
    "mcp__aws__get_cost_and_usage",
    "mcp__aws__list_buckets",
)


def main_reminders(project: Project, today: datetime) -> list[dict[str, str]]:
    """The blocks placed before the typed prompt in the main chain's first user message."""
    issues = "\n".join(project.issues())
    deferred = "\n".join(DEFERRED_TOOLS)
    return [
        reminder(
            "The following deferred tools are now available via ToolSearch. Their schemas are "
            "NOT loaded: search for a tool with ToolSearch before calling it.\n" + deferred
        ),
        reminder(text("mcp_instructions.md")),
        reminder(text("skills.md")),
        reminder(_claude_md(project, today, full=True)),
        reminder(
            f"SessionStart hook additional context: open issues assigned to {project.first} "
            f"in {project.name}:\n{issues}\nRun `gh issue view <number>` for details."
        ),
    ]


def agent_reminders(project: Project, today: datetime) -> list[dict[str, str]]:
    """A subagent gets the instruction files but not the skills, MCP notes or memory."""
    return [reminder(_claude_md(project, today, full=False))]


def token_note(request_bytes: int) -> str:
    """The ``<total_tokens>`` note Claude Code places after a prompt or a tool result."""
    used = request_bytes // 4
    left = max(CONTEXT_TOKENS - used, 0)
    return (
        f"Token usage: {used}/{CONTEXT_TOKENS}; {left} remaining.\n"
        f"<total_tokens>{left} tokens left</total_tokens>"
    )


def environment_note(project: Project) -> str:
    changed = ", ".join(project.modified)
    return (
        f"Environment: working directory {project.cwd}, branch {project.branch}, "
        f"{project.platform}/{project.shell}. Uncommitted changes in: {changed}."
    )
