"""``asz cache``: what broke the prompt cache at each request of a session, and what it cost.

The report is built by :mod:`asz.view`; this module checks the session, prints the report and
the problems met building it (see :mod:`.problems`).
"""

from __future__ import annotations

import argparse

from asz.commands.args import add_session, landed_session
from asz.commands.problems import report_problems
from asz.config import Config
from asz.table import Column

SUMMARY = "say what broke the prompt cache at each request, and what it cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.store import unique_prefixes
    from asz.table import print_table
    from asz.view import cache_report, report_cells, report_summary
    from asz.view.cache_text import COLUMNS
    from asz.view.prices import price_table

    session = landed_session(config, args.session)
    report = cache_report(session, price_table(config.prices))
    if args.json:
        print_json(report)
    else:
        if report["rows"]:
            cells = report_cells(report, unique_prefixes(session.body_ids()))
            print_table([_column(header) for header in COLUMNS], cells)
            print()
        print("\n".join(report_summary(report)))
    return report_problems(report["problems"], all_in="--json")


_NUMERIC = frozenset({"#", "input", "read", "written", "rewritten", "waste $"})
_DROPPED_FIRST = ("message", "stream", "input", "written")
"""On a narrow terminal these go first, in this order (the message id is in ``asz view``,
the input and written counts in ``--json``): the request prefix, the cause, what was read,
re-written and wasted stay, and the detail wraps."""


_DETAIL_NARROWEST = 32
"""Narrower, a cause's detail wraps every word or two: the message and stream go first."""


def _column(header: str) -> Column:
    drop = len(_DROPPED_FIRST) - _DROPPED_FIRST.index(header) if header in _DROPPED_FIRST else None
    if header == "detail":
        return Column(header, wraps=True, narrowest=_DETAIL_NARROWEST)
    return Column(header, numeric=header in _NUMERIC, drop=drop)
