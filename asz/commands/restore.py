"""``asz restore``: a session's landed transcripts written back to a directory.

:func:`asz.restore.restore_session` does the writing and says what it refused; this
module prints that, and the problems met reading the session (see :mod:`.problems`), since
the store itself prints nothing.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from asz.commands.args import add_session, landed_session
from asz.commands.problems import report_problems
from asz.config import Config
from asz.exits import EXIT_FAILED
from asz.words import count

if TYPE_CHECKING:
    from asz.restore import Restored

__all__ = ["SUMMARY", "add_arguments", "run"]

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
            restored = restore_session(session, to_dir, shown)
    except RestoreRefused as err:
        restored, refused = err.restored, err.refused
    if restored.files or refused:
        print(_restored_said(restored, to_dir))
    else:
        where = session.backend.location
        print(f"asz: no landed transcripts of {session.id} under {where}", file=sys.stderr)
    # A damaged transcript's refusal already names the problems that made it.
    named = "\n".join(refused)
    met = [problem for problem in map(str, session.problems) if problem not in named]
    code = report_problems([*refused, *met])
    return code if restored.files else EXIT_FAILED


def _restored_said(restored: Restored, to_dir: Path) -> str:
    """What a restore did, in words: the files it wrote, and those it found already holding
    the landed bytes (a second restore writes none, and says so)."""
    said = f"restored {count(len(restored.written), 'file')} under {to_dir}"
    if restored.present:
        said += f"; {count(len(restored.present), 'file')} already held the landed bytes"
    return said
