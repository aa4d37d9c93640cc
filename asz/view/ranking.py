"""Every session's cache report at once: the sessions ranked by what their breaks wasted, and
the same sums per project and per day.

A person asking "where did the cache cost me" wants the worst session first, not a report to
open per session, and then what kind of change cost the most. A session's figures are its
report's ``totals`` unchanged, so the ranking and ``asz cache SESSION`` never disagree. A
project's, a day's and a cause's are summed from the reports' call rows, each call on the date
of its ``time`` (in UTC, or the zone asked for; a session running past midnight counts on both
days) and under the
cause of its request (``no_request`` where none landed), so the groups add up to the sessions
they hold. A request joined to no call (a side request: a session's title, a compaction
summary) carries no usage, so it is in no group. See ``docs/view.md``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from asz.store import SessionSummary
from asz.view.prices import DIGITS
from asz.view.records import CacheReport, CacheRow
from asz.view.spend import NO_REQUEST
from asz.view.usage import hit_ratio
from asz.zones import IN_UTC, Zone

__all__ = ["Ranking", "calls_by_cause", "cause_of", "day_of"]


@dataclass(slots=True)
class _Tally:
    """Sums over calls (report rows with a message id): a project's, a day's, or all."""

    sessions: set[str] = field(default_factory=set)
    calls: int = 0
    breaks: int = 0
    rewritten_tokens: int = 0
    input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cost_usd: float | None = None
    waste_usd: float | None = None
    unpriced_calls: int = 0

    def add(self, session: str, row: CacheRow) -> None:
        self.sessions.add(session)
        self.calls += 1
        rewritten = row["rewritten_tokens"] or 0
        self.breaks += rewritten > 0
        self.rewritten_tokens += rewritten
        self.input_tokens += row["input_tokens"] or 0
        self.cache_read_input_tokens += row["cache_read_input_tokens"] or 0
        self.cache_creation_input_tokens += row["cache_creation_input_tokens"] or 0
        if row["cost_usd"] is not None:
            self.cost_usd = (self.cost_usd or 0) + row["cost_usd"]
        elif row["input_tokens"] is not None:
            self.unpriced_calls += 1
        if row["waste_usd"] is not None:
            self.waste_usd = (self.waste_usd or 0) + row["waste_usd"]

    def as_dict(self) -> dict[str, Any]:
        """The sums as JSON: the fields of a session's ``totals`` that add up across
        sessions, with ``null`` money where no call was priced."""
        read = self.cache_read_input_tokens
        return {
            "sessions": len(self.sessions),
            "calls": self.calls,
            "breaks": self.breaks,
            "rewritten_tokens": self.rewritten_tokens,
            "input_tokens": self.input_tokens,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": self.cache_creation_input_tokens,
            "hit_ratio": hit_ratio(read, self.cache_creation_input_tokens, self.input_tokens),
            "cost_usd": _rounded(self.cost_usd),
            "waste_usd": _rounded(self.waste_usd),
            "unpriced_calls": self.unpriced_calls,
        }


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, DIGITS)


class Ranking:
    """The sessions added so far, and their calls summed per project, per day and in all.

    A report is read into a few numbers and let go, so a root of thousands of sessions is
    ranked in the memory of one report."""

    def __init__(self, zone: Zone = IN_UTC) -> None:
        self._zone = zone
        """The zone whose dates the calls are summed per day on."""
        self._sessions: list[dict[str, Any]] = []
        self._projects: dict[str | None, _Tally] = {}
        self._days: dict[str | None, _Tally] = {}
        self._causes: dict[str, _Tally] = {}
        self._all = _Tally()
        self._unpriced: set[str] = set()

    def add(
        self, summary: SessionSummary, report: CacheReport, problems: Iterable[str] = ()
    ) -> None:
        """Counts one session: its summary (where and when it ran), its cache report, and
        the problems met reading its summary (the report's own are added to them)."""
        totals = report["totals"]
        calls = [row for row in report["rows"] if row["message_id"] is not None]
        self._sessions.append(
            {
                "session": summary.id,
                "project": summary.project,
                "first": summary.first_activity,
                "last": summary.last_activity,
                "calls": len(calls),
                "requests": totals["requests"],
                "breaks": totals["breaks"],
                "rewritten_tokens": totals["rewritten_tokens"],
                "input_tokens": totals["input_tokens"],
                "cache_read_input_tokens": totals["cache_read_input_tokens"],
                "cache_creation_input_tokens": totals["cache_creation_input_tokens"],
                "hit_ratio": totals["hit_ratio"],
                "cost_usd": totals["cost_usd"],
                "waste_usd": totals["waste_usd"],
                "unpriced_models": totals["unpriced_models"],
                "problems": list(dict.fromkeys([*problems, *report["problems"]])),
            }
        )
        self._unpriced.update(totals["unpriced_models"])
        project = self._projects.setdefault(summary.project, _Tally())
        project.sessions.add(summary.id)  # a session with no call is still the project's
        for row in calls:
            day = self._days.setdefault(day_of(row["time"], self._zone), _Tally())
            cause = self._causes.setdefault(cause_of(row), _Tally())
            for tally in (project, day, cause, self._all):
                tally.add(summary.id, row)

    def sessions(self) -> list[dict[str, Any]]:
        """Every session added, most waste first (see :func:`_most_waste_first`)."""
        return _most_waste_first(self._sessions)

    def projects(self) -> list[dict[str, Any]]:
        """Per project (``null`` when unknown), most waste first."""
        found = [{"project": name, **tally.as_dict()} for name, tally in self._projects.items()]
        return _most_waste_first(found)

    def days(self) -> list[dict[str, Any]]:
        """Per date of the calls (in the ranking's zone), newest first; calls with no time
        last (``null``)."""
        found = [{"day": day, **tally.as_dict()} for day, tally in self._days.items()]
        found.sort(key=lambda entry: entry["day"] or "", reverse=True)
        return sorted(found, key=lambda entry: entry["day"] is None)

    def causes(self) -> list[dict[str, Any]]:
        """Per cause of the calls' requests, most waste first: what kind of change cost the
        most, over every session added."""
        return _by_cause(self._causes)

    def total(self) -> dict[str, Any]:
        """Every added session's calls in one sum, with the models no price was found for;
        ``sessions`` counts every session added, with calls or not."""
        return {
            **self._all.as_dict(),
            "sessions": len(self._sessions),
            "unpriced_models": sorted(self._unpriced),
        }


def calls_by_cause(report: CacheReport) -> list[dict[str, Any]]:
    """One report's calls summed per cause, most waste first, as :meth:`Ranking.causes` sums
    them: each cause with its calls, breaks, tokens and dollars, so that a cause is read with
    what it cost. A request joined to no call is in none: it carries no usage."""
    causes: dict[str, _Tally] = {}
    for row in report["rows"]:
        if row["message_id"] is not None:
            causes.setdefault(cause_of(row), _Tally()).add(report["session"], row)
    return _by_cause(causes)


def cause_of(row: CacheRow) -> str:
    """The cause a call row is summed under: its request's, or ``no_request`` when its
    request did not land (the usage says whether it broke, not why), as the service's
    counters count it."""
    cause: str | None = row["cause"]
    return cause or NO_REQUEST


def _by_cause(causes: dict[str, _Tally]) -> list[dict[str, Any]]:
    return _most_waste_first([{"cause": name, **tally.as_dict()} for name, tally in causes.items()])


def _most_waste_first(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Known waste first, most first; then unknown waste (``null``: no price, or only
    starts), most re-written tokens first. Ties keep the order they came in."""
    return sorted(
        entries,
        key=lambda entry: (
            entry["waste_usd"] is None,
            -(entry["waste_usd"] or 0),
            -entry["rewritten_tokens"],
        ),
    )


def day_of(time: str | None, zone: Zone) -> str | None:
    """The date (``2026-01-31``) in ``zone`` of a time as Claude Code writes it (in UTC);
    None without one."""
    moment = zone.moment(time)
    return None if moment is None else moment.date().isoformat()
