"""``asz view``: a session's calls joined to their bodies, as one JSON document.

The document is built by :mod:`asz.view`; this module checks the session and prints it.
"""

from __future__ import annotations

import argparse

from asz.commands.args import landed_session
from asz.commands.exits import EXIT_OK
from asz.config import Config

SUMMARY = "print a session's calls joined to their bodies (JSON)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("session")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json
    from asz.view import build_view

    print_json(build_view(landed_session(config, args.session)))
    return EXIT_OK
