"""The session list's choices: which sessions a filter keeps and the order a column gives.

Every choice is a query parameter of ``/`` (so a filtered, sorted list is a link), read here
into a :class:`Choice` whose every value is one the page offers: an unknown column or order
or a date that is not a day (``YYYY-MM-DD``) is a :class:`BadQuery`, which the page answers
with 400 saying which; an empty value is no choice (the form sends empty fields).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import date
from typing import Any

from asz.web.library import Listed
from asz.web.pagination import BadQuery
from asz.web.prompts import Prompt

__all__ = [
    "AROUND",
    "COLUMNS",
    "MAX_FOUND",
    "MAX_SEARCH",
    "ORDERS",
    "Choice",
    "Found",
    "choice_of",
    "chosen",
    "found_prompts",
]

MAX_SEARCH = 200
MAX_FOUND = 100
"""Prompts the list shows for a search; it says how many more it found."""
AROUND = 80
"""Characters of a found prompt shown on each side of what it matched."""
ORDERS = ("desc", "asc")


def _figure(name: str) -> Callable[[Listed], Any]:
    return lambda entry: entry.totals.get(name)


COLUMNS: dict[str, Callable[[Listed], Any]] = {
    "last": lambda entry: entry.summary.last_activity,
    "first": lambda entry: entry.summary.first_activity,
    "project": lambda entry: entry.summary.project,
    "calls": lambda entry: entry.summary.calls,
    "bodies": lambda entry: entry.summary.bodies,
    "hit": _figure("hit_ratio"),
    "rewritten": _figure("rewritten_tokens"),
    "waste": _figure("waste_usd"),
    "cost": _figure("cost_usd"),
}
"""What each sortable column sorts by."""


@dataclass(frozen=True, slots=True)
class Choice:
    sort: str = "last"
    descending: bool = True
    project: str = ""
    since: str = ""
    until: str = ""
    search: str = ""

    def query(self, **changes: Any) -> dict[str, str]:
        """The query parameters of this choice with ``changes``, defaults left out."""
        values = {
            "sort": self.sort,
            "order": "desc" if self.descending else "asc",
            "project": self.project,
            "since": self.since,
            "until": self.until,
            "q": self.search,
        }
        values.update(changes)
        return {key: value for key, value in values.items() if value}


def choice_of(params: Mapping[str, str]) -> Choice:
    """The choice the query parameters make; BadQuery for a value the page does not offer."""
    sort = params.get("sort") or "last"
    if sort not in COLUMNS:
        raise BadQuery(f"sort={sort!r} is no column: one of {', '.join(COLUMNS)}")
    order = params.get("order") or "desc"
    if order not in ORDERS:
        raise BadQuery(f"order={order!r} is neither {' nor '.join(ORDERS)}")
    return Choice(
        sort=sort,
        descending=order == "desc",
        project=params.get("project", "")[:MAX_SEARCH],
        since=_date("since", params.get("since", "")),
        until=_date("until", params.get("until", "")),
        search=params.get("q", "").strip()[:MAX_SEARCH],
    )


def chosen(entries: list[Listed], choice: Choice) -> list[Listed]:
    """The entries the filters keep, in the chosen order (unknown values last, ties by id)."""
    kept = [entry for entry in entries if _wanted(entry, choice)]
    kept.sort(key=lambda entry: entry.summary.id)
    key = COLUMNS[choice.sort]
    known = [entry for entry in kept if key(entry) is not None]
    unknown = [entry for entry in kept if key(entry) is None]
    known.sort(key=key, reverse=choice.descending)
    return known + unknown


def _wanted(entry: Listed, choice: Choice) -> bool:
    summary = entry.summary
    if choice.project:
        places = [place for place in (summary.cwd, summary.project_dir) if place]
        if not any(choice.project.lower() in place.lower() for place in places):
            return False
    if choice.since and (summary.last_activity or "") < choice.since:
        return False
    if choice.until and (summary.first_activity or "9999")[:10] > choice.until:
        return False
    wanted = choice.search.lower()
    return not wanted or any(wanted in prompt.lowered for prompt in entry.prompts)


@dataclass(frozen=True, slots=True)
class Found:
    """A prompt a search matched, with its session, and the text around the match."""

    entry: Listed
    prompt: Prompt
    before: str
    match: str
    after: str


def found_prompts(entries: list[Listed], search: str) -> list[Found]:
    """Every prompt of ``entries`` (in their order) that holds ``search``, in any case."""
    wanted = search.lower()
    found = []
    for entry in entries:
        for prompt in entry.prompts:
            at = prompt.lowered.find(wanted)
            if at >= 0:
                found.append(_found(entry, prompt, at, len(wanted)))
    return found


def _found(entry: Listed, prompt: Prompt, at: int, length: int) -> Found:
    # lower() keeps the length of nearly every text; where it does not, show the lower case
    text = prompt.text if len(prompt.text) == len(prompt.lowered) else prompt.lowered
    start, end = max(0, at - AROUND), at + length + AROUND
    before = ("…" if start else "") + text[start:at]
    after = text[at + length : end] + ("…" if end < len(text) else "")
    return Found(entry, prompt, before, text[at : at + length], after)


def _date(name: str, text: str) -> str:
    """The day as the filters compare it (``YYYY-MM-DD``); none for an empty field."""
    if not text:
        return ""
    try:
        return date.fromisoformat(text).isoformat()
    except ValueError:
        raise BadQuery(f"{name}={text!r} is not a day: YYYY-MM-DD, such as 2026-09-18") from None
