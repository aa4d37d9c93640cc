"""``asz restore``: a session's landed transcripts written back to a directory.

:func:`asz.restore.restore_session` does the writing and says what it refused; this
module prints that, since the store itself prints nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from asz.commands.args import landed_session
from asz.commands.exits import EXIT_FAILED, EXIT_OK
from asz.config import Config

SUMMARY = "write a session's landed transcripts back to a directory"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session")
    parser.add_argument("--to", type=Path, required=True, metavar="DIR")


def run(args: argparse.Namespace, config: Config) -> int:
    """0 when every landed source is back, 1 otherwise."""
    from asz.restore import RestoreRefused, restore_session

    session = landed_session(config, args.session)
    to_dir: Path = args.to
    try:
        written = restore_session(session, to_dir)
    except RestoreRefused as err:
        for problem in err.refused:
            print(f"  refused: {problem}", file=sys.stderr)
        print(f"restored {len(err.written)} file(s) under {to_dir}")
        return EXIT_FAILED
    if not written:
        where = session.store.location
        print(f"asz: no landed transcripts of {session.id} under {where}", file=sys.stderr)
        return EXIT_FAILED
    print(f"restored {len(written)} file(s) under {to_dir}")
    return EXIT_OK
