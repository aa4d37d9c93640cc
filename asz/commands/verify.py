"""``asz verify``: checks every landed file and rebuilds every landed body.

The checks live in :mod:`asz.store._verify` (and, for the kept cache reports, which the view
makes, in :mod:`asz.view.kept`); this module picks the sessions and prints the report.
"""

from __future__ import annotations

import argparse

from asz.commands.args import add_session, landed_session, open_root
from asz.config import Config

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "check every landed file and rebuild every landed body"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser, optional=True)
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.commands.problems import report_problems
    from asz.output import print_json
    from asz.progress import progress
    from asz.view.kept import check_kept
    from asz.view.prices import price_table
    from asz.words import count, listing

    # A typo in --root must not read as a root that verifies.
    store = open_root(config)
    sessions = None if args.session is None else [landed_session(config, args.session).id]
    with progress("verifying") as shown:
        report = store.verify(sessions, shown)
    prices = price_table(config.prices)
    for session_id in store.sessions() if sessions is None else sessions:
        check_kept(store.open_session(session_id), prices, report.problems)
    if args.json:
        print_json(report.as_dict())
    elif not report.sessions and not report.problems:
        print(f"the root {config.location} holds no landed session: nothing to verify")
    else:
        checked = listing(
            [
                count(report.sessions, "session"),
                count(report.files, "landed file"),
                count(report.bodies, "body"),
                count(report.transcript_lines, "transcript line"),
                count(report.index_lines, "index line"),
            ]
        )
        found = count(len(report.problems), "problem") if report.problems else "all rebuild"
        print(f"checked {checked}: {found}")
    return report_problems(report.problems, all_in="--json")
