"""``asz repack``: merge sessions' landed files into as few as ``max_delta_bytes`` allows.

The repack lives in :mod:`asz.store._repack`; this module picks the sessions (those named, or
every one quiet for ``[service] repack_after``), holds the root's repack lock, and says what
each became. It runs beside the service: a session is repacked under the landing lock, so the
service's passes wait for it rather than land into it half way. Exit 1 when a session was
damaged (nothing of it repacked) or could not be written.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from asz.commands.args import SESSION_HELP, local_root
from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK, UsageError

if TYPE_CHECKING:
    from asz.store import RepackOutcome

__all__ = ["SUMMARY", "add_arguments", "outcome_line", "run"]

SUMMARY = "merge sessions' landed files into few files, safely, beside the service"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sessions",
        nargs="*",
        metavar="SESSION",
        help=f"repack these sessions now ({SESSION_HELP}); without any, every session that "
        "landed nothing for [service] repack_after seconds",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say how many files each would become; write nothing"
    )
    parser.add_argument(
        "--json", action="store_true", help="print what each session became as JSON"
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.adapters.transcript_cursors import renumber_cursors
    from asz.commands.args import landed_session
    from asz.output import print_json
    from asz.store import (
        RepackBusy,
        UnsafeRoot,
        budgets_of,
        landing_lock,
        open_store,
        quiet_for,
        repack_lock,
        repack_session,
    )

    root = local_root(config, "asz repack")
    if not root.is_dir():
        raise UsageError(f"there is no storage root at {root}")
    store = open_store(root, compression=config.compression)
    if args.sessions:
        sessions = [landed_session(config, text).id for text in args.sessions]
    else:
        after = config.service.repack_after
        sessions = [s for s in store.sessions() if quiet_for(root, s) >= after]
    outcomes: list[RepackOutcome] = []
    failed: list[str] = []
    try:
        with repack_lock(root):
            for session in sessions:
                try:
                    outcomes.append(
                        repack_session(
                            store,
                            session,
                            budgets_of(config),
                            landing=lambda: landing_lock(root),
                            published=renumber_cursors,
                            dry_run=args.dry_run,
                        )
                    )
                except OSError as err:
                    failed.append(f"{session}: {err.strerror or err}")
    except (RepackBusy, UnsafeRoot) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print_json({"sessions": [o.as_dict() for o in outcomes], "errors": failed})
    else:
        for outcome in outcomes:
            print(outcome_line(outcome))
        if not outcomes and not failed:
            print("no session to repack" if args.sessions else "no quiet session to repack")
    for line in failed:
        print(f"asz: {line}", file=sys.stderr)
    damaged = any(o.state == "damaged" for o in outcomes)
    return EXIT_FAILED if failed or damaged else EXIT_OK


def outcome_line(outcome: RepackOutcome) -> str:
    """One session's repack in words."""
    from asz.words import count, size

    before = f"{count(outcome.files_before, 'file')} ({size(outcome.bytes_before)})"
    if outcome.state == "damaged":
        return f"{outcome.session}: damaged, nothing repacked: {outcome.why}"
    if outcome.state == "packed":
        return f"{outcome.session}: {before}, already as few as it can be"
    after = count(outcome.files_after, "file")
    if outcome.bytes_after is not None:
        after += f" ({size(outcome.bytes_after)})"
    verb = "would become" if outcome.state == "planned" else "became"
    return f"{outcome.session}: {before} {verb} {after}, {size(outcome.source_bytes)} of source"
