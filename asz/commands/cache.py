"""``asz cache``: what broke the prompt cache at each request of a session, and what it cost.

The report is built by :mod:`asz.view`; this module checks the session, prints the report and
the problems met building it (see :mod:`.problems`).
"""

from __future__ import annotations

import argparse

from asz.commands.args import add_session, landed_session
from asz.commands.problems import report_problems
from asz.config import Config

SUMMARY = "say what broke the prompt cache at each request, and what it cost"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.store import unique_prefixes
    from asz.view import cache_report, format_cache_report

    session = landed_session(config, args.session)
    report = cache_report(session)
    if args.json:
        print_json(report)
    else:
        print(format_cache_report(report, unique_prefixes(session.body_ids())))
    return report_problems(report["problems"], all_in="--json")
