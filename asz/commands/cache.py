"""``asz cache``: what broke the prompt cache at each request of a session, and what it cost;
with no SESSION, every landed session ranked by what its breaks wasted.

The reports are read through ``asz.view.kept.session_report`` (kept while the landed files do
not change, built from them when they did), ranked and summed per project and per day by
:mod:`asz.view.ranking`;
this module picks the sessions (the same ``--project`` and ``--since`` as ``asz sessions``,
:mod:`.listing`), prints, and reports the problems met building any report (see
:mod:`.problems`) without stopping at the session that met them.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from asz.commands.args import add_session, landed_session
from asz.commands.listing import (
    add_filters,
    filtering,
    list_sessions,
    listing_exit,
    path_shortened,
    project_shown,
    say_none_listed,
    time_headers,
    when_shown,
)
from asz.commands.problems import report_problems
from asz.config import Config
from asz.exits import UsageError
from asz.table import Column
from asz.zones import Zone, zone_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from asz.analytics.tables import TableFacts
    from asz.store import Session, SessionSummary
    from asz.view.ranking import Ranking

__all__ = ["BY", "SUMMARY", "add_arguments", "run"]

SUMMARY = (
    "say what broke the prompt cache at each request of a session, and what it cost; with no "
    "SESSION, rank every session by what its breaks wasted"
)
BY = ("cause", "project", "day")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser, optional=True)
    add_filters(parser)
    parser.add_argument(
        "--by",
        choices=BY,
        help="with no SESSION: list the totals per cause of the breaks, per project or per "
        "day (in UTC, or local with --local) instead of the sessions (default: the sessions, "
        "then all three totals; with --json, the sessions)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as JSON; with no SESSION, a JSON list of the sessions, most "
        "waste first (of the causes, projects or days with --by) (docs/view.md)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    if args.session is None:
        return _every_session(args, config)
    if filtering(args) or args.by is not None:
        raise UsageError("--project, --since and --by rank every session: give them no SESSION")
    return _one_session(args, config)


def _one_session(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.store import unique_prefixes
    from asz.table import print_lines, print_table
    from asz.view import report_cells, report_summary
    from asz.view.cache_text import COLUMNS
    from asz.view.kept import session_report
    from asz.view.prices import price_table

    session = landed_session(config, args.session)
    report = session_report(session, price_table(config.prices))
    if args.json:
        print_json(report)
    else:
        if report["rows"]:
            cells = report_cells(report, unique_prefixes(session.body_ids()))
            print_table([_column(header) for header in COLUMNS], cells)
            print()
        print_lines(report_summary(report))
    return report_problems(report["problems"], all_in="--json")


def _every_session(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.store import unique_prefixes
    from asz.view.kept import session_report
    from asz.view.prices import price_table
    from asz.view.ranking import Ranking

    prices = price_table(config.prices)
    facts: list[TableFacts] = []

    def known(ids: list[str]) -> Callable[[Session], SessionSummary | None]:
        """The analytics tables' summaries, when ``[analytics] url`` names tables."""
        from asz.analytics.tables import table_facts

        found = table_facts(config, ids, prices.fingerprint())
        facts.extend([found] if found is not None else [])
        return found.summary if found is not None else lambda session: None

    listed = list_sessions(config, args, known)
    zone = zone_of(args.local)
    ranking = Ranking(zone)
    problems = [str(problem) for problem in listed.problems]
    met: dict[str, list[str]] = {}
    for problem in listed.problems:
        met.setdefault(problem.session, []).append(str(problem))
    for summary in listed.shown:
        report = facts[0].report(summary.id) if facts else None
        if report is None:
            report = session_report(listed.store.open_session(summary.id), prices)
        problems += report["problems"]
        ranking.add(summary, report, met.get(summary.id, ()))
    if args.json:
        listing = {
            "cause": ranking.causes,
            "project": ranking.projects,
            "day": ranking.days,
        }.get(args.by, ranking.sessions)
        print_json(listing())
    elif listed.shown:
        _print_ranking(ranking, unique_prefixes(listed.ids), args.by, zone)
    else:
        say_none_listed(config, args)
    # The sessions' JSON lists each one's problems; a session left out of it, or a --by
    # listing, has no place for them.
    shown = {summary.id for summary in listed.shown}
    in_json = args.by is None and met.keys() <= shown
    return listing_exit(
        listed, args, report_problems(problems, all_in="--json" if in_json else None)
    )


def _print_ranking(ranking: Ranking, prefixes: dict[str, str], by: str | None, zone: Zone) -> None:
    """The tables ``by`` asks for (when None: the sessions, then what each cause cost beside
    them, then per project and per day), then the sum of them all; times in ``zone``."""
    from asz.table import print_lines
    from asz.view.cache_text import money_said, percent
    from asz.words import count

    if by is None:
        sessions = ranking.sessions()
        named = [
            [
                prefixes[entry["session"]],
                project_shown(entry["project"]),
                when_shown(entry["first"], zone),
                when_shown(entry["last"], zone),
            ]
            for entry in sessions
        ]
        first, last = time_headers(zone)
        columns = (*_SESSION_COLUMNS, Column(first, drop=7), Column(last, drop=3))
        _print_figures(columns, named, sessions)
    if by in (None, "cause"):
        print("by cause, most waste first")
        causes = ranking.causes()
        named = [[entry["cause"], f"{entry['sessions']:,}"] for entry in causes]
        _print_figures((Column("CAUSE"), _SESSIONS), named, causes)
    if by in (None, "project"):
        print("by project")
        projects = ranking.projects()
        named = [[project_shown(entry["project"]), f"{entry['sessions']:,}"] for entry in projects]
        project = Column("PROJECT", shorten=path_shortened)
        _print_figures((project, _SESSIONS), named, projects)
    if by in (None, "day"):
        print(f"by day ({zone.label})")
        days = ranking.days()
        named = [[entry["day"] or "-", f"{entry['sessions']:,}"] for entry in days]
        _print_figures((Column("DAY"), _SESSIONS), named, days)
    total = ranking.total()
    said = (
        f"{count(total['sessions'], 'session')}, {count(total['calls'], 'call')}, "
        f"hit ratio {percent(total['hit_ratio'])}"
    )
    print_lines([said, money_said(total)])


def _print_figures(
    columns: tuple[Column, ...], named: list[list[str]], entries: list[dict[str, Any]]
) -> None:
    """One table: the cells naming each entry under ``columns``, then the entry's figures
    under ``_FIGURES``; and a blank line after."""
    from asz.table import print_table
    from asz.view.cache_text import dollars, percent

    rows = [
        [
            *cells,
            f"{entry['calls']:,}",
            f"{entry['breaks']:,}",
            f"{entry['rewritten_tokens']:,}",
            percent(entry["hit_ratio"]),
            dollars(entry["cost_usd"]),
            dollars(entry["waste_usd"]),
        ]
        for cells, entry in zip(named, entries, strict=True)
    ]
    print_table([*columns, *_FIGURES], rows)
    print()


_SESSION_COLUMNS = (
    Column("SESSION"),
    Column("PROJECT", drop=1, shorten=path_shortened),
)
"""The columns naming a session; its first and last times follow, headed by their zone."""
_SESSIONS = Column("SESSIONS", numeric=True, drop=8)
_FIGURES = (
    Column("CALLS", numeric=True, drop=6),
    Column("BREAKS", numeric=True, drop=4),
    Column("REWRITTEN", numeric=True),
    Column("HIT", numeric=True, drop=5),
    Column("COST $", numeric=True, drop=2),
    Column("WASTE $", numeric=True),
)
"""What every table of the ranking shows of its sessions, projects or days. On a narrow
terminal the id, the re-written tokens and the waste stay; the first time, the calls, the
hit ratio and the breaks go first, in that order."""


_NUMERIC = frozenset({"#", "input", "read", "written", "rewritten", "waste $"})
_DROPPED_FIRST = ("message", "stream", "input", "written", "read")
"""On a narrow terminal these go first, in this order (the message id is in ``asz view``,
the counts in ``--json``): the request prefix, the cause, what was re-written and wasted
stay, and the detail wraps; what was read goes last, only when an 80-column terminal meets a
count of millions."""


_DETAIL_NARROWEST = 26
"""Narrower, a cause's detail wraps every word or two: the message and stream go first. At
26 the table keeps what was read on an 80-column terminal."""


def _column(header: str) -> Column:
    drop = len(_DROPPED_FIRST) - _DROPPED_FIRST.index(header) if header in _DROPPED_FIRST else None
    if header == "detail":
        return Column(header, wraps=True, narrowest=_DETAIL_NARROWEST)
    return Column(header, numeric=header in _NUMERIC, drop=drop)
