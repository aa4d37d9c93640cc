"""``asz sessions``: every landed session, newest first, so no one needs ``ls`` of the root.

Each session is read through its summary (``Session.summary``, cached in the root), so a root
of thousands of sessions lists in a fraction of a second once listed. The table shows each id
as its shortest prefix that the other commands accept (at least 8 characters), counted over
every session of the root, not only those shown, so a prefix copied from a filtered listing
still names one session. ``--json`` prints every field in full.
"""

from __future__ import annotations

import argparse
import re
from typing import TYPE_CHECKING

from asz.commands.listing import (
    add_filters,
    list_sessions,
    listing_exit,
    path_shortened,
    project_shown,
    say_none_listed,
    time_headers,
    when_shown,
)
from asz.config import Config
from asz.zones import Zone, zone_of

if TYPE_CHECKING:
    from asz.store import SessionSummary

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "list every landed session, newest first"
_MODEL_NAME = re.compile(r"^claude-|-\d{8}$")
"""What the table leaves out of a model's name: the maker, and the release date."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_filters(parser)
    parser.add_argument(
        "--json",
        action="store_true",
        help="print a JSON list of the sessions, every field in full (docs/api.md)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.commands.problems import report_problems
    from asz.output import print_json
    from asz.store import unique_prefixes

    listed = list_sessions(config, args)
    if args.json:
        print_json([summary.as_dict() for summary in listed.shown])
    elif listed.shown:
        _print_table(listed.shown, unique_prefixes(listed.ids), zone_of(args.local))
    else:
        say_none_listed(config, args)
    return listing_exit(listed, args, report_problems(listed.problems))


def _print_table(shown: list[SessionSummary], prefixes: dict[str, str], zone: Zone) -> None:
    from asz.table import Column, print_table
    from asz.words import size

    first, last = time_headers(zone)
    # On a narrow terminal the least wanted go first: lines, bodies, the first activity...
    columns = [
        Column("SESSION"),
        Column("PROJECT", drop=2, shorten=path_shortened),
        Column(first, drop=7),
        Column(last, drop=1),
        Column("MODELS", drop=4, shorten=_families),
        Column("CALLS", numeric=True, drop=3),
        Column("BODIES", numeric=True, drop=8),
        Column("LINES", numeric=True, drop=9),
        Column("LANDED", numeric=True, drop=5),
    ]
    rows = [
        [
            prefixes[summary.id],
            project_shown(summary.project),
            when_shown(summary.first_activity, zone),
            when_shown(summary.last_activity, zone),
            ", ".join(dict.fromkeys(_MODEL_NAME.sub("", model) for model in summary.models)),
            f"{summary.calls:,}",
            f"{summary.bodies:,}",
            f"{summary.transcript_lines:,}",
            size(summary.landed_bytes),
        ]
        for summary in shown
    ]
    print_table(columns, rows)


def _families(models: str, width: int) -> str:
    """The models cell made to fit ``width``: each model as its family (``opus, haiku``),
    which is what tells sessions apart at a glance; a model of none of them as it is."""
    from rich.cells import cell_len

    from asz.view.families import model_family

    if cell_len(models) <= width:
        return models
    named = [model_family(model) for model in models.split(", ")]
    shown = [
        family if family != "other" else model
        for family, model in zip(named, models.split(", "), strict=True)
    ]
    return ", ".join(dict.fromkeys(shown))
