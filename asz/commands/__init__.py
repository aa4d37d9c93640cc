"""The ``asz`` command line: every command in one table, one module each, one set of exit codes.

Each module in this package is one command: its ``SUMMARY`` (the help line), its
``add_arguments(parser)`` and its ``run(args, config) -> int``. This module assembles them
into one parser, loads the config, and turns a usage error into exit 2 (see :mod:`.exits`).
The modules import their heavy parts inside ``run``, so ``asz --help`` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Protocol

from asz import __version__
from asz.commands import (
    body,
    cache,
    collect,
    demo,
    export,
    push,
    redact,
    repack,
    restore,
    serve,
    service,
    sessions,
    sources,
    sql,
    statusline,
    synth,
    verify,
    view,
)
from asz.commands.args import common_options
from asz.config import Config, ConfigError
from asz.config_file import load_config
from asz.exits import EXIT_FAILED, EXIT_USAGE, UsageError
from asz.store import StorageUnavailable

__all__ = ["COMMANDS", "Command", "build_parser", "command_names", "main"]


class Command(Protocol):
    """What a command module provides."""

    SUMMARY: str

    def add_arguments(self, parser: argparse.ArgumentParser) -> None: ...

    def run(self, args: argparse.Namespace, config: Config) -> int: ...


# In the order ``asz --help`` lists them.
COMMANDS: dict[str, Command] = {
    "collect": collect,
    "push": push,
    "redact": redact,
    "sessions": sessions,
    "verify": verify,
    "body": body,
    "view": view,
    "cache": cache,
    "export": export,
    "sql": sql,
    "serve": serve,
    "service": service,
    "sources": sources,
    "statusline": statusline,
    "repack": repack,
    "restore": restore,
    "synth": synth,
    "demo": demo,
}


def build_parser() -> argparse.ArgumentParser:
    common = common_options()
    parser = argparse.ArgumentParser(
        prog="asz",
        parents=[common],
        description="Keep Claude Code's provider bodies and transcripts, deduplicated and "
        "verified, joined to the calls they belong to.",
    )
    parser.add_argument("--version", action="version", version=f"asz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in COMMANDS.items():
        command.add_arguments(
            sub.add_parser(
                name, parents=[common], help=command.SUMMARY, description=command.SUMMARY
            )
        )
    return parser


def command_names() -> list[str]:
    return sorted(COMMANDS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    command = COMMANDS[args.command]
    # Imported here: structlog's console renderer is slow to load, and `asz --help` loads this.
    from asz.logs import log_to_stderr

    log_to_stderr()
    try:
        config = load_config(
            config_file=getattr(args, "config", None), root=getattr(args, "root", None)
        )
        return command.run(args, config)
    except (ConfigError, UsageError) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_FAILED
    except StorageUnavailable as err:
        print(f"asz: {err.filename}: {err.strerror}", file=sys.stderr)
        return EXIT_FAILED
