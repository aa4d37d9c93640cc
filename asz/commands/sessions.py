"""``asz sessions``: every landed session, newest first, so no one needs ``ls`` of the root.

Each session is read through its summary (``Session.summary``, cached in the root), so a root
of thousands of sessions lists in a fraction of a second once listed. The table shows each id
as its shortest prefix that the other commands accept (at least 8 characters), counted over
every session of the root, not only those shown, so a prefix copied from a filtered listing
still names one session. ``--json`` prints every field in full.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from asz.commands.args import SINCE_HELP, parse_since
from asz.commands.exits import EXIT_USAGE
from asz.config import Config

if TYPE_CHECKING:
    from asz.store import Problem, SessionSummary

SUMMARY = "list every landed session, newest first"
_GLOB = re.compile(r"[*?\[]")
_MODEL_NAME = re.compile(r"^claude-|-\d{8}$")
"""What the table leaves out of a model's name: the maker, and the release date."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project",
        metavar="PATTERN",
        help="only sessions whose project directory (the directory the session started in, "
        "or its directory under Claude Code's projects directory) contains PATTERN, or "
        "matches it when it holds a glob character (*, ?, [...]); case counts (default: every "
        "project)",
    )
    parser.add_argument(
        "--since",
        metavar="WHEN",
        type=_since,
        help=f"only sessions active at or after WHEN: {SINCE_HELP} (default: all time)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of the sessions, every field in full (docs/api.md)",
    )


def _since(text: str) -> datetime:
    try:
        return parse_since(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.commands.problems import report_problems
    from asz.output import print_json
    from asz.store import open_store, unique_prefixes

    if not Path(config.root).is_dir():
        print(f"asz: there is no storage root at {config.root}", file=sys.stderr)
        return EXIT_USAGE
    store = open_store(config.root)
    ids = store.sessions()
    shown: list[SessionSummary] = []
    problems: list[Problem] = []
    for session_id in ids:
        session = store.open_session(session_id)
        summary = session.summary()
        problems += session.problems
        if _wanted(summary, args.project, args.since):
            shown.append(summary)
    shown.sort(key=lambda summary: summary.id)
    shown.sort(key=lambda summary: summary.last_activity or "", reverse=True)
    if args.json:
        print_json([summary.as_dict() for summary in shown])
    elif shown:
        _print_table(shown, unique_prefixes(ids))
    else:
        filtered = args.project is not None or args.since is not None
        said = "no landed session matches" if filtered else "no sessions have landed"
        print(f"asz: {said} under {config.root}", file=sys.stderr)
    return report_problems(problems)


def _wanted(summary: SessionSummary, project: str | None, since: datetime | None) -> bool:
    if since is not None:
        last = summary.last_activity
        if last is None or datetime.fromisoformat(last) < since:
            return False
    if project is None:
        return True
    places = [place for place in (summary.cwd, summary.project_dir) if place]
    if _GLOB.search(project):
        return any(fnmatch.fnmatchcase(place, project) for place in places)
    return any(project in place for place in places)


def _print_table(shown: list[SessionSummary], prefixes: dict[str, str]) -> None:
    from asz.table import Column, print_table
    from asz.words import size

    # On a narrow terminal the least wanted go first: lines, bodies, the first activity...
    columns = [
        Column("SESSION"),
        Column("PROJECT", wraps=True, drop=2),
        Column("FIRST", drop=7),
        Column("LAST", drop=1),
        Column("MODELS", wraps=True, drop=4),
        Column("CALLS", numeric=True, drop=3),
        Column("BODIES", numeric=True, drop=8),
        Column("LINES", numeric=True, drop=9),
        Column("LANDED", numeric=True, drop=5),
    ]
    home = str(Path.home())
    rows = [
        [
            prefixes[summary.id],
            _project(summary.project, home),
            _when(summary.first_activity),
            _when(summary.last_activity),
            ", ".join(dict.fromkeys(_MODEL_NAME.sub("", model) for model in summary.models)),
            f"{summary.calls:,}",
            f"{summary.bodies:,}",
            f"{summary.transcript_lines:,}",
            size(summary.landed_bytes),
        ]
        for summary in shown
    ]
    print_table(columns, rows)


def _project(project: str | None, home: str) -> str:
    """The project as a person reads it: ``~`` for this user's home, ``-`` when unknown."""
    if project is None:
        return "-"
    if project == home or project.startswith(home + "/"):
        return "~" + project[len(home) :]
    return project


def _when(moment: str | None) -> str:
    """A time in this machine's zone, to the minute; ``-`` when unknown."""
    if moment is None:
        return "-"
    return datetime.fromisoformat(moment).astimezone().strftime("%Y-%m-%d %H:%M")
