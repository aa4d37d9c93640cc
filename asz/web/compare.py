"""What changed from the previous request of a chain to this one, part by part.

The cache report says which cause broke the cache (``asz.view.causes``) and what it cost; this
shows the parts behind it: each tool added, removed, changed, loaded or deferred, each system
block that changed, the first message that was rewritten, and the body fields that changed,
each old beside new (:mod:`.diff`). It compares two whole parsed requests, which a call page
reads anyway. What is no change for the cache is left out the same way the report leaves it
out: ``cache_control`` markers, the one-block and string spellings of a message, and the
billing block but for its Claude Code version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from asz.view.shapes import BILLING_PREFIX, normalised_message
from asz.web.diff import Row, side_by_side
from asz.web.request import FIELDS, listed, pretty, text_of, unmarked

__all__ = ["Change", "Difference", "difference"]


@dataclass(frozen=True, slots=True)
class Change:
    """One changed part: ``part`` (tool, system block, message, field), its name, what
    happened to it, and the two sides."""

    part: str
    name: str
    what: str
    rows: list[Row]


@dataclass(slots=True)
class Difference:
    changes: list[Change] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    """What changed that has no two sides to show: messages added, a new list."""


def difference(old: dict[str, Any], new: dict[str, Any]) -> Difference:
    """How ``new`` differs from ``old``, the previous request of its chain."""
    found = Difference()
    _fields(old, new, found)
    _tools(old, new, found)
    _system(old, new, found)
    _messages(old, new, found)
    return found


def _fields(old: dict[str, Any], new: dict[str, Any], found: Difference) -> None:
    for name in FIELDS:
        if name != "stream" and old.get(name) != new.get(name):
            before = pretty(old[name]) if name in old else ""
            after = pretty(new[name]) if name in new else ""
            what = "added" if name not in old else "removed" if name not in new else "changed"
            found.changes.append(Change("field", name, what, side_by_side(before, after)))


def _tools(old: dict[str, Any], new: dict[str, Any], found: Difference) -> None:
    before, after = _tools_by_name(old), _tools_by_name(new)
    for name, tool in after.items():
        if name not in before:
            what = "added (deferred)" if _deferred(tool) else "added"
            found.changes.append(Change("tool", name, what, side_by_side("", pretty(tool))))
    for name, tool in before.items():
        if name not in after:
            found.changes.append(Change("tool", name, "removed", side_by_side(pretty(tool), "")))
    for name in before.keys() & after.keys():
        was, now = before[name], after[name]
        if unmarked(was) == unmarked(now):
            continue
        if _deferred(was) != _deferred(now):
            what = "deferred (was loaded)" if _deferred(now) else "loaded (was deferred)"
        else:
            what = "changed"
        found.changes.append(Change("tool", name, what, side_by_side(pretty(was), pretty(now))))
    loaded_before = [name for name, tool in before.items() if not _deferred(tool)]
    loaded_after = [name for name, tool in after.items() if not _deferred(tool)]
    kept = [name for name in loaded_after if name in loaded_before]
    if kept != [name for name in loaded_before if name in loaded_after]:
        found.notes.append("the loaded tools were reordered")


def _system(old: dict[str, Any], new: dict[str, Any], found: Difference) -> None:
    before, after = _blocks(old.get("system")), _blocks(new.get("system"))
    for n in range(max(len(before), len(after))):
        was = before[n] if n < len(before) else None
        now = after[n] if n < len(after) else None
        if _billing(was) and _billing(now):
            continue  # its ids change on every call; its version is a field of the report
        if was is not None and now is not None and unmarked(was) == unmarked(now):
            continue
        what = "added" if was is None else "removed" if now is None else "changed"
        rows = side_by_side(_text(was), _text(now))
        found.changes.append(Change("system block", f"system[{n}]", what, rows))


def _messages(old: dict[str, Any], new: dict[str, Any], found: Difference) -> None:
    before, after = listed(old.get("messages")), listed(new.get("messages"))
    shared = min(len(before), len(after))
    first = next(
        (n for n in range(shared) if normalised_message(before[n]) != normalised_message(after[n])),
        shared,
    )
    if first == 0 and shared:
        found.notes.append(f"a new list of {len(after)} messages (was {len(before)})")
        return
    if first < shared:
        rows = side_by_side(text_of(before[first]), text_of(after[first]))
        role = after[first].get("role", "?") if isinstance(after[first], dict) else "?"
        found.changes.append(Change("message", f"messages[{first}] ({role})", "rewritten", rows))
    if len(after) < len(before):
        found.notes.append(f"{len(before) - len(after)} messages dropped")
    elif len(after) > len(before) and first == shared:
        found.notes.append(f"the history grew by {len(after) - len(before)} messages")


def _tools_by_name(body: dict[str, Any]) -> dict[str, Any]:
    named: dict[str, Any] = {}
    for n, tool in enumerate(listed(body.get("tools"))):
        name = tool.get("name") if isinstance(tool, dict) else None
        named[name if isinstance(name, str) else f"#{n}"] = tool
    return named


def _deferred(tool: object) -> bool:
    return isinstance(tool, dict) and tool.get("defer_loading") is True


def _blocks(system: object) -> list[Any]:
    return [system] if isinstance(system, str) else listed(system)


def _billing(block: object) -> bool:
    text = block.get("text") if isinstance(block, dict) else block
    return isinstance(text, str) and text.startswith(BILLING_PREFIX)


def _text(block: object) -> str:
    return "" if block is None else text_of(block)
