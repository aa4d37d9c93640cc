"""``asz body``: one landed body's exact bytes on stdout, rebuilt by the store's reader."""

from __future__ import annotations

import argparse
import sys

from asz.commands.args import landed_session
from asz.commands.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from asz.config import Config

SUMMARY = "write one landed body's exact bytes to stdout"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session")
    parser.add_argument("id", help="source file name without .json, e.g. <uuid>.request")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.store import BodyNotFound, CodecError

    session = landed_session(config, args.session)
    try:
        data = session.body(args.id)
    except BodyNotFound as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_USAGE
    except CodecError as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return EXIT_OK
