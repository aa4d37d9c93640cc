"""Why a request missed the prompt cache: what changed from the previous request of its chain.

The provider reads a request's cache front to back (tools, then system, then messages) and
reuses what the previous request of the same chain wrote. What is not a change: a message
spelled as a plain string once it is no longer the newest and as a list of one text block while
it is, a ``cache_control`` marker that moved, and the billing block (``system[0]``, whose
``cch``, ``cc_prev_req`` and ``cc_prompt_id`` change every call). What is: the model, a tool
added, removed, changed or moved, a system block, the betas, the effort or thinking settings, a
message rewritten, a new message list after a compaction, and time: the previous call's marker
lifetime passing between the previous call's last transcript line and this call's first. One
cause per request, the earliest in ``PRECEDENCE``; ``kept`` when the history only grew.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import orjson

from asz.view.calls import Call, Transcript
from asz.view.shapes import Shape

PRECEDENCE = (
    "model",
    "tools",
    "system",
    "betas",
    "effort",
    "compaction",
    "messages",
    "ttl",
    "kept",
)
FIRST = "first"
UNKNOWN = "unknown"
"""No previous request to compare with, though the request names one (it is not landed,
or not joined to its call)."""
UNREADABLE = "unreadable"


@dataclass(frozen=True, slots=True)
class Between:
    """What the transcripts say happened between the previous call and this one."""

    gap_seconds: float | None
    compacted: bool


def compare(previous: Shape, current: Shape, between: Between) -> list[tuple[str, str]]:
    """Every ``(cause, detail)`` that holds, in ``PRECEDENCE`` order; ``kept`` when none does."""
    found: list[tuple[str, str]] = []
    if previous.model != current.model:
        found.append(("model", f"{previous.model} -> {current.model}"))
    tools = _tool_change(previous.tools, current.tools)
    if tools:
        found.append(("tools", tools))
    system = _list_change("system block", previous.system, current.system)
    if system:
        found.append(("system", system))
    if previous.betas != current.betas:
        found.append(("betas", f"{show(previous.betas)} -> {show(current.betas)}"))
    if previous.effort != current.effort:
        found.append(("effort", f"effort {show(previous.effort)} -> {show(current.effort)}"))
    elif previous.thinking != current.thinking:
        found.append(("effort", f"thinking {show(previous.thinking)} -> {show(current.thinking)}"))
    found.extend(_message_change(previous, current, between))
    if between.gap_seconds is not None and between.gap_seconds > previous.ttl:
        found.append(
            (
                "ttl",
                f"{_duration(between.gap_seconds)} passed the {_duration(previous.ttl)} lifetime",
            )
        )
    return found or [("kept", "the history only grew")]


def _tool_change(previous: dict[str, int], current: dict[str, int]) -> str | None:
    added = [name for name in current if name not in previous]
    removed = [name for name in previous if name not in current]
    changed = [n for n, v in current.items() if n in previous and previous[n] != v]
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (("added", added), ("removed", removed), ("changed", changed))
        if names
    ]
    if not parts and list(previous) != list(current):
        parts.append("reordered")
    return "; ".join(parts) or None


def _list_change(label: str, previous: list[int], current: list[int]) -> str | None:
    for n, (a, b) in enumerate(zip(previous, current, strict=False)):
        if a != b:
            return f"{label} {n} changed"
    if len(previous) != len(current):
        return f"{len(previous)} -> {len(current)} {label}s"
    return None


def _message_change(previous: Shape, current: Shape, between: Between) -> list[tuple[str, str]]:
    old, new = previous.messages, current.messages
    if old and new and old[0] != new[0] and (between.compacted or len(new) < len(old)):
        return [("compaction", f"a new list of {len(new)} messages (was {len(old)})")]
    for n, (a, b) in enumerate(zip(old, new, strict=False)):
        if a != b:
            return [("messages", f"message {n} ({current.roles[n]}) rewritten")]
    if len(new) < len(old):
        return [("messages", f"messages {len(new)}-{len(old) - 1} dropped")]
    return []


def show(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def _duration(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def seconds_between(earlier: str | None, later: str | None) -> float | None:
    if not earlier or not later:
        return None
    try:
        return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()
    except (ValueError, TypeError):
        return None


def compacted_between(transcript: Transcript, before: Call, after: Call) -> bool:
    return before.stream == after.stream and any(
        epoch.stream == after.stream and before.position < epoch.position < after.position
        for epoch in transcript.epochs
    )
