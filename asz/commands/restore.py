"""``asz restore``: a session's landed transcripts written back to a directory.

:func:`asz.restore.restore_session` does the writing and says what it refused; this
module prints that, and the problems met reading the session (see :mod:`.problems`), since
the store itself prints nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asz.commands.args import add_session, landed_session
from asz.commands.exits import EXIT_FAILED
from asz.commands.problems import report_problems
from asz.config import Config

SUMMARY = "write a session's landed transcripts back to a directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser)
    parser.add_argument(
        "--to",
        type=Path,
        required=True,
        metavar="DIR",
        help="where to write the transcripts, each at its path under Claude Code's projects "
        "directory (required; a file already there with other bytes is left alone and named)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    """0 when every landed source is back and nothing read was damaged, 1 otherwise."""
    from asz.progress import progress
    from asz.restore import RestoreRefused, restore_session

    session = landed_session(config, args.session)
    to_dir: Path = args.to
    refused: list[str] = []
    try:
        with progress("restoring") as shown:
            written = restore_session(session, to_dir, shown)
    except RestoreRefused as err:
        written, refused = err.written, err.refused
    if written or refused:
        print(f"restored {len(written)} file(s) under {to_dir}")
    else:
        where = session.store.location
        print(f"asz: no landed transcripts of {session.id} under {where}", file=sys.stderr)
    # A damaged transcript's refusal already names the problems that made it.
    named = "\n".join(refused)
    met = [problem for problem in map(str, session.problems) if problem not in named]
    code = report_problems([*refused, *met])
    return code if written else EXIT_FAILED
