"""``asz verify``: checks every landed file and rebuilds every landed body.

The checks live in :mod:`asz.store.verify`; this module picks the sessions and prints the
report.
"""

from __future__ import annotations

import argparse

from asz.commands.args import landed_session
from asz.commands.exits import EXIT_FAILED, EXIT_OK
from asz.config import Config

SUMMARY = "check every landed file and rebuild every landed body"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session", nargs="?", help="only this session")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.store import open_store

    store = open_store(config.root)
    sessions = None if args.session is None else [landed_session(config, args.session).id]
    report = store.verify(sessions)
    if args.json:
        print_json(report.as_dict())
    else:
        for problem in report.problems:
            print(f"problem: {problem}")
        print(
            f"checked {report.sessions} session(s), {report.files} landed file(s), "
            f"{report.bodies} bodies, {report.transcript_lines} transcript line(s), "
            f"{report.index_lines} index line(s): "
            + (f"{len(report.problems)} problem(s)" if report.problems else "all rebuild")
        )
    return EXIT_FAILED if report.problems else EXIT_OK
