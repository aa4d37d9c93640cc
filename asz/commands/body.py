"""``asz body``: one landed body's exact bytes on stdout, rebuilt by the store's reader.

The body is named as people paste it (``Session.find_body``): its record id, the source file
name Claude Code wrote, or a unique prefix of the id.
"""

from __future__ import annotations

import argparse
import sys

from asz.commands.args import add_session, landed_session
from asz.commands.problems import report_problems
from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_USAGE

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "write one landed body's exact bytes to stdout"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_session(parser)
    parser.add_argument(
        "id",
        help="the body's source file name (<uuid>.request.json), that name without .json, "
        "or a unique prefix of it",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.store import AmbiguousId, BodyNotFound, CodecError

    session = landed_session(config, args.session)
    try:
        data = session.body(session.find_body(args.id))
    except AmbiguousId as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BodyNotFound as err:
        # Its message names the problems met; with any, the body may be in a damaged file.
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED if session.problems else EXIT_USAGE
    except CodecError as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return report_problems(session.problems)
