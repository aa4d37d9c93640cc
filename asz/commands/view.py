"""``asz view``: a session's calls joined to their bodies, as a timeline or as one JSON document.

The document is built by :mod:`asz.view`, and the timeline from the document; this module
checks the session and prints one or the other, the timeline as wide as the terminal, and the
problems met reading the session on stderr (see :mod:`.problems`).
"""

from __future__ import annotations

import argparse
import shutil

from asz.commands.args import add_session, add_zone, landed_session
from asz.commands.problems import report_problems
from asz.config import Config

__all__ = ["SUMMARY", "WIDTH_OFF_TERMINAL", "add_arguments", "run"]

SUMMARY = "show a session's streams, calls, tokens and joined bodies, in time"
WIDTH_OFF_TERMINAL = 120
"""The timeline's width when stdout is not a terminal and ``COLUMNS`` does not say one."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser)
    add_zone(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the view document (schema asz.view/1, docs/view.md) instead of the timeline",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.view import build_view, format_timeline
    from asz.zones import zone_of

    view = build_view(landed_session(config, args.session))
    if args.json:
        print_json(view)
    else:
        width = shutil.get_terminal_size((WIDTH_OFF_TERMINAL, 24)).columns
        print(format_timeline(view, width, zone_of(args.local)))
    return report_problems(view["problems"], all_in="--json")
