"""The session list's choices: which sessions a filter keeps and the order a column gives.

Every choice is a query parameter of ``/`` (so a filtered, sorted list is a link), read here
into a :class:`Choice` whose every value is one the page offers: an unknown column or order
is the default, a date that is not ``YYYY-MM-DD`` is no filter.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from asz.web.library import Listed

MAX_SEARCH = 200
_DATE = re.compile(r"\d{4}-\d\d-\d\d")


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
    sort = params.get("sort", "last")
    return Choice(
        sort=sort if sort in COLUMNS else "last",
        descending=params.get("order", "desc") != "asc",
        project=params.get("project", "")[:MAX_SEARCH],
        since=_date(params.get("since", "")),
        until=_date(params.get("until", "")),
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
    return not choice.search or choice.search.lower() in entry.prompts


def _date(text: str) -> str:
    return text if _DATE.fullmatch(text) else ""
