"""Ids as people paste them, resolved in one place for every command.

People copy a session id from a listing, a path or a log line, in whatever case it was
printed, and a body id as the file name they saw in Claude Code's directory. So:

- a session is named by its id in any case, or by a prefix of it (``MIN_PREFIX`` characters
  or more), matched without regard to case; the landed directory's own spelling is the one
  used, and an id whose exact spelling landed always names that session;
- a body is named by its record id, by its source file name (``<uuid>.request.json``; a path
  to it works too), or by a prefix of its record id (``MIN_PREFIX`` characters or more);
- a prefix that starts more than one id is :class:`AmbiguousId`, naming a few of them.

:func:`unique_prefixes` gives, for a listing, the shortest prefix of each id that these rules
resolve to it and to nothing else, so an id shown shortened can still be pasted.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable

from asz.store._errors import AmbiguousId, StoreError
from asz.store._layout import NotASession

__all__ = [
    "BODY_SUFFIX",
    "MIN_PREFIX",
    "SHOWN_PREFIX",
    "bodies_starting",
    "body_text",
    "only",
    "session_text",
    "sessions_starting",
    "unique_prefixes",
]

MIN_PREFIX = 4
"""The fewest characters a prefix may have: a shorter one names a session or a body only by
the luck of what has landed so far."""
SHOWN_PREFIX = 8
"""The fewest characters a listing shows of an id (a UUID's first group)."""
BODY_SUFFIX = ".json"
_NAMED = 4
"""How many candidates an ambiguous prefix's message names."""
_SESSION_CHARS = re.compile(r"[0-9A-Fa-f-]+")


def session_text(text: str) -> str:
    """The session id or prefix in ``text`` (surrounding blanks and a trailing ``/`` of a
    pasted directory name dropped); NotASession when it cannot start a session id."""
    wanted = text.strip().rstrip("/")
    if len(wanted) < MIN_PREFIX or not _SESSION_CHARS.fullmatch(wanted):
        raise NotASession(
            f"{text!r} is not a Claude Code session id, nor the first {MIN_PREFIX} or more "
            "characters of one"
        )
    return wanted


def sessions_starting(wanted: str, sessions: Iterable[str]) -> list[str]:
    """The ids of ``sessions`` that ``wanted`` starts, whatever the case of either."""
    folded = wanted.lower()
    return sorted(session for session in sessions if session.lower().startswith(folded))


def body_text(text: str) -> str:
    """The record id, or prefix of one, in ``text``: a path's last part, less ``.json``."""
    name = os.path.basename(text.strip())
    return name.removesuffix(BODY_SUFFIX) if name.endswith(BODY_SUFFIX) else name


def bodies_starting(wanted: str, body_ids: Iterable[str]) -> list[str]:
    """The record ids ``wanted`` starts (exactly, case and all: record ids are matched as
    Claude Code wrote them); none for a prefix shorter than ``MIN_PREFIX``."""
    if len(wanted) < MIN_PREFIX:
        return []
    return sorted(body_id for body_id in body_ids if body_id.startswith(wanted))


def only(text: str, what: str, found: list[str], missing: StoreError) -> str:
    """The one id in ``found``; ``missing`` when there is none, AmbiguousId when there are
    several (naming the first few)."""
    if not found:
        raise missing
    if len(found) > 1:
        named = ", ".join(found[:_NAMED])
        more = f" and {len(found) - _NAMED} more" if len(found) > _NAMED else ""
        raise AmbiguousId(
            f"{text!r} starts {len(found)} {what}: {named}{more}; give more of the id", found
        )
    return found[0]


def unique_prefixes(ids: Iterable[str], minimum: int = SHOWN_PREFIX) -> dict[str, str]:
    """Each id's shortest prefix of at least ``minimum`` characters that starts no other id,
    case aside (the whole id when every prefix does: it then names itself exactly)."""
    ordered = sorted(ids, key=str.lower)
    folded = [ident.lower() for ident in ordered]
    shown = {}
    for i, ident in enumerate(ordered):
        need = minimum
        for neighbour in (i - 1, i + 1):
            if 0 <= neighbour < len(folded):
                need = max(need, _common(folded[i], folded[neighbour]) + 1)
        shown[ident] = ident[:need]
    return shown


def _common(a: str, b: str) -> int:
    """How many first characters ``a`` and ``b`` share."""
    for i, (x, y) in enumerate(zip(a, b, strict=False)):
        if x != y:
            return i
    return min(len(a), len(b))
