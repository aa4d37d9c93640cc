"""The cause of a break named from whatever evidence there is, each marked with where it came
from, so that a session with no bodies still says why its cache broke.

Four sources, strongest first (``SOURCES``):

- ``bodies``: the comparison of a request with the previous request of its chain
  (:mod:`.causes`), which sees every part of the prompt;
- ``api``: the provider's own verdict, ``cache_miss_reason`` in the response or on the
  transcript's assistant message (``message.diagnostics``); ``previous_message_not_found``
  and ``unavailable`` say it could not compare, so they name nothing;
- ``transcript``: what the lines say changed between the stream's previous call and this one:
  the model, the Claude Code version (an upgrade), the effort, fast mode (``usage.speed``),
  and time, when the gap passed the lifetime of the stream's last write (1 h when that write
  asked for an hour, else 5 min);
- ``usage``: where the change began, from what the call still read: less than the tools and
  system prefix (the stream's first read: the markers before the messages are cached beyond
  one session) is ``prefix``, the prefix or more is ``messages``. It locates, it does not tell.

Nothing here loads the store: ``asz statusline`` names the cause of a break as it folds lines.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

import orjson

from asz.view.usage import Usage

__all__ = [
    "AGREES",
    "API_CAUSES",
    "EFFORT_KEEPS_CACHE",
    "EXPLAINS",
    "FIVE_MINUTES",
    "ONE_HOUR",
    "PROVIDER_INCONCLUSIVE",
    "SOURCES",
    "Named",
    "Seen",
    "StreamEvidence",
    "agrees",
    "api_cause",
    "duration",
    "keeps_cache_on_effort",
    "lifetime",
    "seconds_apart",
    "seen_on_line",
    "strongest",
    "transcript_causes",
    "usage_cause",
]

SOURCES = ("bodies", "api", "transcript", "usage")
EFFORT_KEEPS_CACHE = frozenset(
    {"claude-opus-5-5", "claude-sonnet-5-5", "claude-haiku-5-5", "claude-fable-5-1"}
)
"""The models whose cache a change of effort keeps (Opus 5.5, Sonnet 5.5, Haiku 5.5 and
Fable 5.1); on every other model it is a full miss. Matched by id, or by an id with a date
suffix (``-YYYYMMDD``)."""
PROVIDER_INCONCLUSIVE = frozenset({"previous_message_not_found", "unavailable"})
"""``cache_miss_reason`` values by which the provider says it could not compare, not that the
prefix changed."""
API_CAUSES = {
    "model_changed": "model",
    "system_changed": "system",
    "tools_changed": "tools",
    "messages_changed": "messages",
}
AGREES = {
    "model": frozenset({"model"}),
    "system": frozenset({"system", "upgrade", "prefix"}),
    "tools": frozenset({"tools", "upgrade", "prefix"}),
    "messages": frozenset({"messages", "compaction"}),
}
"""API cause -> the causes of other evidence that agree with it: an upgrade changes the
system prompt and the tools; ``prefix`` is where a system or tools change begins."""
EXPLAINS = frozenset({"upgrade"})
"""Causes that explain the change the API names, and are shown in its place."""
FIVE_MINUTES = 300.0
ONE_HOUR = 3600.0
_DATED = re.compile(r"-\d{8}\Z")


class Named(NamedTuple):
    source: str
    cause: str
    detail: str


@dataclass(frozen=True, slots=True)
class Seen:
    """What a call's transcript lines say of it, besides its usage."""

    model: str | None = None
    version: str | None = None
    effort: str | None = None
    time: str | None = None
    """Its first line's."""
    last_time: str | None = None
    verdict: str | None = None
    """``message.diagnostics.cache_miss_reason`` (its ``type`` when it is an object)."""
    missed: int | None = None
    """``cache_missed_input_tokens`` of the verdict."""

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    @classmethod
    def of_json(cls, value: Mapping[str, Any]) -> Seen:
        return cls(**{name: value.get(name) for name in cls.__slots__})


def seen_on_line(envelope: Mapping[str, Any], message: Mapping[str, Any]) -> dict[str, Any]:
    """``version``, ``effort``, ``verdict`` and ``missed`` one assistant line carries (None
    where it does not): ``perTurnEffort`` wins over ``effort``."""
    effort = envelope.get("perTurnEffort", envelope.get("effort"))
    diagnostics = message.get("diagnostics")
    reason = diagnostics.get("cache_miss_reason") if isinstance(diagnostics, dict) else None
    missed = reason.get("cache_missed_input_tokens") if isinstance(reason, dict) else None
    kind = reason.get("type") if isinstance(reason, dict) else reason
    return {
        "version": _text(envelope.get("version")),
        "effort": None if effort is None else _said(effort),
        "verdict": _text(kind),
        "missed": missed if isinstance(missed, int) and not isinstance(missed, bool) else None,
    }


def keeps_cache_on_effort(model: object) -> bool:
    """Whether ``model`` keeps its cache when the effort changes (``EFFORT_KEEPS_CACHE``)."""
    return isinstance(model, str) and _DATED.sub("", model) in EFFORT_KEEPS_CACHE


def lifetime(usage: Usage | None, before: float | None) -> float | None:
    """The lifetime of what a call left in the cache: an hour when it wrote for an hour, five
    minutes when it wrote only for five (or gave no split); ``before`` when it wrote nothing."""
    if usage is None or not usage.cache_creation:
        return before
    return ONE_HOUR if usage.write_1h else FIVE_MINUTES


def api_cause(verdict: object, missed: int | None = None) -> Named | None:
    """The cause the provider's verdict names; None when it names none or could not compare."""
    kind = verdict.get("type") if isinstance(verdict, dict) else verdict
    cause = API_CAUSES.get(kind) if isinstance(kind, str) else None
    if cause is None:
        return None
    if missed is None and isinstance(verdict, dict):
        found = verdict.get("cache_missed_input_tokens")
        missed = found if isinstance(found, int) else None
    said = f", {missed} tokens missed" if missed is not None else ""
    return Named("api", cause, f"the API: {kind}{said}")


def transcript_causes(
    previous: Seen,
    current: Seen,
    *,
    speeds: tuple[object, object] = (None, None),
    gap_seconds: float | None,
    ttl: float | None,
) -> list[Named]:
    """Every cause the lines name between a stream's previous call and this one, strongest
    first; ``ttl`` is the lifetime of the stream's last write (None: unknown, taken as 5 min,
    as the price table takes a write with no split)."""
    found = []
    if previous.model and current.model and previous.model != current.model:
        found.append(("model", f"{previous.model} -> {current.model}"))
    if previous.version and current.version and previous.version != current.version:
        found.append(("upgrade", f"Claude Code {previous.version} -> {current.version}"))
    if (
        previous.effort is not None
        and current.effort is not None
        and previous.effort != current.effort
        and not (previous.model == current.model and keeps_cache_on_effort(current.model))
    ):
        found.append(("effort", f"effort {previous.effort} -> {current.effort}"))
    old, new = speeds
    if old is not None and new is not None and old != new:
        found.append(("fast_mode", f"speed {_said(old)} -> {_said(new)}"))
    lasts = FIVE_MINUTES if ttl is None else ttl
    if gap_seconds is not None and gap_seconds > lasts:
        found.append(("ttl", f"{duration(gap_seconds)} passed the {duration(lasts)} lifetime"))
    return [Named("transcript", cause, detail) for cause, detail in found]


def usage_cause(read: int | None, expected: int | None, prefix: int | None) -> Named | None:
    """Where the change began, from what a break still read; None when usage cannot say
    (no read, or none to tell the prefix from the messages by)."""
    if read is None or expected is None:
        return None
    if read == 0:
        return Named("usage", "prefix", f"read nothing of the {expected} tokens expected")
    if prefix is None:
        return None
    if read < prefix:
        return Named("usage", "prefix", f"read {read} of the {prefix}-token tools and system")
    if read == prefix:
        return Named(
            "usage", "messages", f"read only the {prefix}-token tools and system: from message 0"
        )
    return Named("usage", "messages", f"read {read} of {expected}: within the messages")


def strongest(named: list[Named]) -> Named | None:
    """The evidence of the strongest source; of one source, its first. An upgrade the lines
    name is shown before the system or tools change the API names, since it explains it (as
    the bodies' comparison puts an upgrade first)."""
    ranked = sorted(named, key=lambda item: SOURCES.index(item.source))
    best = ranked[0] if ranked else None
    if best is not None and best.source == "api":
        for item in ranked:
            if (
                item.cause in EXPLAINS
                and item.cause != best.cause
                and agrees(best.cause, item.cause)
            ):
                return item
    return best


def agrees(api: str, other: str) -> bool:
    """Whether a cause found from other evidence agrees with the API's."""
    return other in AGREES.get(api, frozenset())


def duration(seconds: float) -> str:
    whole = round(seconds)
    hours, rest = divmod(whole, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def _said(value: object) -> str:
    """A value as JSON, as the bodies' comparison says it; what JSON cannot hold (an integer
    past 64 bits) as Python writes it."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:
        return repr(value)


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


class StreamEvidence:
    """What naming a stream's next break needs of the calls before it: the previous call as
    its lines tell it, the stream's prefix (what its latest start read) and the lifetime of
    its latest write; kept as plain JSON between runs of ``asz statusline``."""

    __slots__ = ("prefix", "previous", "ttl")

    def __init__(
        self,
        previous: dict[str, Any] | None = None,
        prefix: int | None = None,
        ttl: float | None = None,
    ) -> None:
        self.previous = previous
        """The previous call's :class:`Seen` as JSON, with its ``speed``."""
        self.prefix = prefix
        self.ttl = ttl

    def named(
        self, call: Mapping[str, Any], usage: Usage | None, expected: int | None
    ) -> list[Named]:
        """Every cause the API, the lines and usage name for a break at ``call`` (its
        :class:`Seen` as JSON, with its ``speed``) that should have read ``expected``,
        strongest source first."""
        named = []
        verdict = api_cause(call.get("verdict"), call.get("missed"))
        if verdict is not None:
            named.append(verdict)
        if self.previous is not None:
            named += transcript_causes(
                Seen.of_json(self.previous),
                Seen.of_json(call),
                speeds=(self.previous.get("speed"), call.get("speed")),
                gap_seconds=seconds_apart(self.previous.get("last_time"), call.get("time")),
                ttl=self.ttl,
            )
        located = usage_cause(usage.cache_read if usage else None, expected, self.prefix)
        if located is not None:
            named.append(located)
        return named

    def advance(self, call: Mapping[str, Any], usage: Usage | None, start: bool) -> None:
        """Takes in a closed call; ``start`` when it was a start of its stream."""
        if start and usage is not None and usage.cache_read:
            self.prefix = usage.cache_read
        self.ttl = lifetime(usage, self.ttl)
        self.previous = {name: call.get(name) for name in (*Seen.__slots__, "speed")}

    def state(self) -> dict[str, Any]:
        return {"previous": self.previous, "prefix": self.prefix, "ttl": self.ttl}

    @classmethod
    def of_state(cls, value: Mapping[str, Any] | None) -> StreamEvidence:
        """The evidence a :meth:`state` was taken of; empty for None (a state kept before
        causes were named from the lines)."""
        if value is None:
            return cls()
        previous = value["previous"]
        prefix, ttl = value["prefix"], value["ttl"]
        return cls(
            dict(previous) if previous is not None else None,
            None if prefix is None else int(prefix),
            None if ttl is None else float(ttl),
        )


def seconds_apart(earlier: object, later: object) -> float | None:
    """Seconds from one ISO time to another; None when either is not one."""
    if not isinstance(earlier, str) or not isinstance(later, str):
        return None
    try:
        return (datetime.fromisoformat(later) - datetime.fromisoformat(earlier)).total_seconds()
    except (ValueError, TypeError):
        return None
