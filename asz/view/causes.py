"""Why a request missed the prompt cache: what changed from the previous request of its chain.

The provider reads a request's cache front to back (tools, then system, then messages) and
reuses what the previous request of the same chain wrote. What is not a change: a message
spelled as a plain string once it is no longer the newest and as a list of one text block while
it is, a ``cache_control`` marker that moved, the billing block (``system[0]``, whose ``cch``,
``cc_prev_req`` and ``cc_prompt_id`` change every call) but for the Claude Code version it
names, tools sent with ``defer_loading`` (the provider keeps them out of the prefix), and a
change of effort on a model that keeps its cache then. What is: the model, an upgrade of Claude
Code, a loaded tool added, removed (denied), changed, moved, loaded from deferred or deferred, a
system block, fast mode (``speed``), the betas, the effort or thinking settings elsewhere, a
message rewritten, a new message list after a compaction, and time: the previous call's marker
lifetime passing between the previous call's last transcript line and this call's first. One
cause per request, the earliest in ``PRECEDENCE``; ``kept`` when the history only grew. What
changed and kept the cache is said in the detail. The models and settings are the contract of
``What Breaks the Cache`` (``docs/view.md`` says which).
"""

from __future__ import annotations

from dataclasses import dataclass

import orjson

from asz.store import BodyManifest
from asz.view.calls import Call, Transcript
from asz.view.evidence import (
    PROVIDER_INCONCLUSIVE,
    duration,
    keeps_cache_on_effort,
)
from asz.view.shapes import Shape, first_difference

__all__ = [
    "BREAKS",
    "FIRST",
    "PRECEDENCE",
    "UNKNOWN",
    "UNREADABLE",
    "Between",
    "agrees_with_provider",
    "compacted_between",
    "compare",
    "show",
    "unreadable_detail",
]

PRECEDENCE = (
    "model",
    "upgrade",
    "tools",
    "system",
    "fast_mode",
    "betas",
    "effort",
    "compaction",
    "messages",
    "ttl",
    "kept",
)
"""A model and a Claude Code version have each a cache of their own and explain the tools
and system that change with them, so they come first; then the parts in the order the provider
reads them, the settings that join the cache key (fast mode before the betas, since it adds
one), a new list, a rewrite, and time."""
BREAKS = frozenset(PRECEDENCE) - {"kept"}
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
    """Every ``(cause, detail)`` that holds, in ``PRECEDENCE`` order; ``kept`` when none does.
    What changed and kept the cache (deferred tools, effort on a model that keeps its cache)
    ends the first detail, so that it is said without being taken for a break; across a
    change of model, whose cache is another one, it is not said."""
    found: list[tuple[str, str]] = []
    kept: list[str] = []
    same_model = previous.model == current.model
    if not same_model:
        found.append(("model", f"{previous.model} -> {current.model}"))
    if previous.version and current.version and previous.version != current.version:
        found.append(("upgrade", f"Claude Code {previous.version} -> {current.version}"))
    tools = _tool_change(previous, current)
    if tools:
        found.append(("tools", tools))
    deferred = _deferred_change(previous, current)
    if deferred and same_model:
        kept.append(deferred)
    system = _list_change("system block", previous.system, current.system)
    if system:
        found.append(("system", system))
    if previous.speed != current.speed:
        found.append(("fast_mode", f"speed {show(previous.speed)} -> {show(current.speed)}"))
    if previous.betas != current.betas:
        found.append(("betas", f"{show(previous.betas)} -> {show(current.betas)}"))
    effort = _effort_change(previous, current)
    if effort and same_model and keeps_cache_on_effort(current.model):
        kept.append(f"{effort} keeps the cache on {current.model}")
    elif effort:
        found.append(("effort", effort))
    found.extend(_message_change(previous, current, between))
    if between.gap_seconds is not None and between.gap_seconds > previous.ttl:
        found.append(
            (
                "ttl",
                f"{duration(between.gap_seconds)} passed the {duration(previous.ttl)} lifetime",
            )
        )
    found = found or [("kept", "the history only grew")]
    if kept:
        cause, detail = found[0]
        found[0] = (cause, "; ".join([detail, *kept]))
    return found


def _tool_change(previous: Shape, current: Shape) -> str | None:
    """What changed among the loaded tools, whose definitions are in the prefix: a tool added,
    loaded from deferred, removed (a denied tool leaves the list), deferred, changed, or the
    list reordered."""
    old, new = previous.tools, current.tools
    added = [name for name in new if name not in old]
    removed = [name for name in old if name not in new]
    changed = [n for n, v in new.items() if n in old and old[n] != v]
    parts = [
        template.format(", ".join(names))
        for template, names in (
            ("added {}", [n for n in added if n not in previous.deferred]),
            ("loaded {} (was deferred)", [n for n in added if n in previous.deferred]),
            ("removed {}", [n for n in removed if n not in current.deferred]),
            ("deferred {} (was loaded)", [n for n in removed if n in current.deferred]),
            ("changed {}", changed),
        )
        if names
    ]
    if not parts and list(old) != list(new):
        parts.append("reordered")
    return "; ".join(parts) or None


def _deferred_change(previous: Shape, current: Shape) -> str | None:
    """What changed among the tools that stayed deferred: outside the prefix, it keeps the
    cache (a tool that turned loaded or deferred is :func:`_tool_change`'s)."""
    old, new = previous.deferred, current.deferred
    parts = [
        f"{label} {', '.join(names)}"
        for label, names in (
            ("added", [n for n in new if n not in old and n not in previous.tools]),
            ("removed", [n for n in old if n not in new and n not in current.tools]),
            ("changed", [n for n, v in new.items() if n in old and old[n] != v]),
        )
        if names
    ]
    return f"deferred tools {'; '.join(parts)}, which keeps the cache" if parts else None


def _effort_change(previous: Shape, current: Shape) -> str | None:
    if previous.effort != current.effort:
        return f"effort {show(previous.effort)} -> {show(current.effort)}"
    if previous.thinking != current.thinking:
        return f"thinking {show(previous.thinking)} -> {show(current.thinking)}"
    return None


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
    n = first_difference(old, new)
    if n < min(len(old), len(new)):
        return [("messages", f"message {n} ({current.roles[n]}) rewritten")]
    if len(new) < len(old):
        return [("messages", f"messages {len(new)}-{len(old) - 1} dropped")]
    return []


def show(value: object) -> str:
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()


def compacted_between(transcript: Transcript, before: Call, after: Call) -> bool:
    return before.stream == after.stream and any(
        epoch.stream == after.stream and before.position < epoch.position < after.position
        for epoch in transcript.epochs
    )


def unreadable_detail(request: BodyManifest) -> str:
    """Why a request has no shape: the ``why`` its manifest carries when the body landed whole
    (not valid UTF-8, not JSON, not a JSON object, ...), else that it does not rebuild (a body
    is cut only when it is a JSON object)."""
    return request.why or "the request does not rebuild"


def agrees_with_provider(cause: str | None, reported: object) -> bool:
    """Whether our cause agrees with the ``cache_miss_reason`` the provider sent: it names a
    divergence (any reason but those of ``PROVIDER_INCONCLUSIVE``; a dict by its ``type``) and
    we found a break, not ``kept``, ``first``, ``unknown`` or ``unreadable``. The provider sends
    no reason when it found no divergence, so a kept call has none to agree with."""
    kind = reported.get("type") if isinstance(reported, dict) else reported
    if kind is None or kind in PROVIDER_INCONCLUSIVE:
        return False
    return cause in BREAKS
