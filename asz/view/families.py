"""Bounded names for the cache-cost metrics: a model's family, the causes, the token kinds.

The service's metrics are labelled by these and by nothing else, so the number of series stays
fixed however many models, sessions and causes the reports name: a model id is reduced to its
family, a cause no one listed here becomes ``other``. :class:`CacheCounts` carries what one
pass adds to the cache-cost counters
(:meth:`asz.daemon.metrics.ServiceMetrics.add_cache_counts`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["CACHE_CAUSES", "FAMILIES", "TOKEN_KINDS", "CacheCounts", "model_family"]

FAMILIES = ("opus", "sonnet", "haiku", "other", "unknown")
"""``opus``, ``sonnet``, ``haiku``: a model of that family; ``other``: a model that is none of
them (``<synthetic>``, another provider's); ``unknown``: no model at all."""

TOKEN_KINDS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
"""The token counts of a call's ``usage``, cache writes split by their lifetime (every write
counts as a 5-minute one where ``usage`` gives no split, as the price table does)."""

CACHE_CAUSES = (
    "first",
    "model",
    "tools",
    "system",
    "betas",
    "upgrade",
    "effort",
    "fast_mode",
    "compaction",
    "messages",
    "ttl",
    "prefix",
    "kept",
    "unknown",
    "unreadable",
    "no_request",
    "other",
)
"""Every cause a cache-break counter is labelled with; any other cause is counted as
``other``."""

_NAMED = ("opus", "sonnet", "haiku")
_WORDS = re.compile(r"[a-z]+")


def model_family(model: str | None) -> str:
    """The family of a model id, one of :data:`FAMILIES`.

    The family is the first of ``opus``, ``sonnet`` and ``haiku`` that appears as a run of
    letters in the id, in any case, wherever the provider puts it: ``claude-opus-4-6``,
    ``claude-3-5-sonnet-20241022``, ``anthropic.claude-haiku-4-5-20251001-v1:0``,
    ``claude-sonnet-4-5@20250929`` and the alias ``opus`` all name theirs. An id that names
    none of them is ``other`` (``<synthetic>``, ``gpt-4o``, ``claude-instant-1``, a word that
    merely contains one, like ``magnum-opusx``); None, or an id of only white space, is
    ``unknown``.

    >>> model_family("claude-opus-4-6"), model_family("<synthetic>"), model_family(None)
    ('opus', 'other', 'unknown')
    """
    if model is None or not model.strip():
        return "unknown"
    for match in _WORDS.finditer(model.lower()):
        if match.group() in _NAMED:
            return match.group()
    return "other"


@dataclass(frozen=True, slots=True)
class CacheCounts:
    """What to add to the cache-cost counters: deltas, never totals.

    Keys are bounded labels: a family of :data:`FAMILIES`, a kind of :data:`TOKEN_KINDS`, a
    cause (one of :data:`CACHE_CAUSES` or not; the metrics count any other as ``other``).
    A delta that is not positive is ignored by the metrics, since a counter never goes down.
    """

    calls: Mapping[str, int] = field(default_factory=dict)
    """Calls counted, by family."""
    tokens: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Tokens, by (family, kind)."""
    cost_usd: Mapping[str, float] = field(default_factory=dict)
    """What the calls cost at the price table, by family (calls with no price add nothing)."""
    breaks: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Breaks found from usage (calls that re-wrote tokens), by (family, cause)."""
    rewritten_tokens: Mapping[tuple[str, str], int] = field(default_factory=dict)
    """Tokens the breaks re-wrote, by (family, cause)."""
    waste_usd: Mapping[tuple[str, str], float] = field(default_factory=dict)
    """What the breaks wasted at the price table, by (family, cause)."""

    def __post_init__(self) -> None:
        for _family, kind in self.tokens:
            if kind not in TOKEN_KINDS:
                raise ValueError(f"unknown token kind {kind!r}; one of {', '.join(TOKEN_KINDS)}")
