"""What the commands that list every landed session share, so each picks and shows alike.

``asz sessions`` and ``asz cache`` (with no SESSION) both list the sessions of a root: they
take the same ``--project`` and ``--since``, read every session through its summary
(``Session.summary``, cached in the root), say the same thing when nothing is landed or
nothing matches, and show a project and a time the same way. One place for each, so that a
filter that picks a session in one listing picks it in the other.
"""

from __future__ import annotations

import argparse
import fnmatch
import re
import sys
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from asz.commands.args import SINCE_HELP, add_zone, open_root, parse_since
from asz.exits import EXIT_USAGE
from asz.zones import Zone, zone_of

if TYPE_CHECKING:
    from collections.abc import Callable

    from asz.config import Config
    from asz.store import Problem, Session, SessionSummary, Store

__all__ = [
    "Listed",
    "add_filters",
    "filtering",
    "list_sessions",
    "listing_exit",
    "path_shortened",
    "project_shown",
    "say_none_listed",
    "time_headers",
    "when_shown",
]

_GLOB = re.compile(r"[*?\[]")


def add_filters(parser: argparse.ArgumentParser) -> None:
    """``--project``, ``--since`` and ``--local``, read into ``args.project``, ``args.since``
    (the text, read in the zone ``--local`` picks) and ``args.local``."""
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
    add_zone(parser)


def _since(text: str) -> str:
    """The text, once it reads as a moment: which moment depends on ``--local``, read later."""
    try:
        parse_since(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None
    return text


def filtering(args: argparse.Namespace) -> bool:
    """Whether ``--project`` or ``--since`` was given."""
    return args.project is not None or args.since is not None


@dataclass(frozen=True, slots=True)
class Listed:
    """The sessions a listing shows, newest first, and what it met reading every one."""

    store: Store
    ids: list[str]
    """Every session of the root, shown or not: a shown prefix is counted over them all, so
    a prefix copied from a filtered listing still names one session."""
    shown: list[SessionSummary]
    problems: list[Problem]


def list_sessions(
    config: Config,
    args: argparse.Namespace,
    known: Callable[[list[str]], Callable[[Session], SessionSummary | None]] | None = None,
) -> Listed:
    """The landed sessions ``args.project`` and ``args.since`` pick, newest first; a usage
    error (exit 2) when there is no root to list. ``known``, given every session id, gives
    what tells a session's summary without reading it (the analytics tables), or None."""
    store = open_root(config)
    since = None if args.since is None else parse_since(args.since, zone=zone_of(args.local))
    ids = store.sessions()
    shown: list[SessionSummary] = []
    problems: list[Problem] = []
    summary_of = known(ids) if known is not None else lambda session: None
    for session_id in ids:
        session = store.open_session(session_id)
        summary = summary_of(session) or session.summary()
        problems += session.problems
        if _wanted(summary, args.project, since):
            shown.append(summary)
    shown.sort(key=lambda summary: summary.id)
    shown.sort(key=lambda summary: summary.last_activity or "", reverse=True)
    return Listed(store, ids, shown, problems)


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


def say_none_listed(config: Config, args: argparse.Namespace) -> None:
    """On stderr, why a listing printed nothing: nothing landed, or nothing matched."""
    said = "no landed session matches" if filtering(args) else "no sessions have landed"
    print(f"asz: {said} under {config.location}", file=sys.stderr)


def listing_exit(listed: Listed, args: argparse.Namespace, problems: int) -> int:
    """A listing's exit code: EXIT_USAGE when ``--project`` or ``--since`` picked no session
    (what was asked for is not there, which a script must tell from an empty answer), else
    ``problems``, the code of what it met reading. An empty root is no such case: every
    session of it is listed."""
    return EXIT_USAGE if filtering(args) and not listed.shown else problems


def project_shown(project: str | None) -> str:
    """The project as a person reads it: ``~`` for this user's home, ``-`` when unknown."""
    if project is None:
        return "-"
    home = str(Path.home())
    if project == home or project.startswith(home + "/"):
        return "~" + project[len(home) :]
    return project


def path_shortened(path: str, width: int) -> str:
    """A path made to fit ``width`` from the left, whole names kept (``…/src/harborview``),
    since its last names say which project it is; its last name alone when no more fits."""
    from rich.cells import cell_len

    names = path.split("/")
    if cell_len(path) <= width or len(names) < 2:
        return path
    for keep in range(len(names) - 1, 0, -1):
        shown = "…/" + "/".join(names[-keep:])
        if cell_len(shown) <= width:
            return shown
    return shown


def time_headers(zone: Zone) -> tuple[str, str]:
    """The headers over the first and last times :func:`when_shown` gives, naming their zone:
    every header over a time says which."""
    return f"FIRST ({zone.label})", f"LAST ({zone.label})"


def when_shown(moment: str | None, zone: Zone) -> str:
    """A time in ``zone`` (UTC unless ``--local``), to the minute; ``-`` when unknown. One zone
    for every command, so that a time read in one listing is found as it is in another."""
    shown = zone.moment(moment)
    return "-" if shown is None else shown.strftime("%Y-%m-%d %H:%M")
