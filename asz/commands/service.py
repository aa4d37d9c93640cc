"""``asz service``: install, remove or inspect the collector (``--web``: the web view) as a
per-user service.

The units, the plans and their printing live in :mod:`asz.daemon.install`, next to the
service they describe; this module only hands the command line to it.
"""

from __future__ import annotations

import argparse

from asz.commands.args import common_options
from asz.config import Config

__all__ = ["ACTIONS", "SUMMARY", "add_arguments", "run"]

SUMMARY = "install, remove or inspect the per-user collector service (--web: the web view)"
ACTIONS = {
    "install": "write the unit (systemd, Linux) or LaunchAgent (macOS) that runs `asz collect` "
    "with this root, config and the Claude Code directories found now, and start it",
    "uninstall": "stop the service and remove what install wrote",
    "status": "say where the unit is and what the service manager says of it",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, summary in ACTIONS.items():
        action = actions.add_parser(
            name, parents=[common_options()], help=summary, description=summary
        )
        action.add_argument(
            "--dry-run",
            action="store_true",
            help="print every step (files written, commands run) and take none",
        )
        action.add_argument(
            "--web",
            action="store_true",
            help="the web view's service instead (`asz serve` on this root at its default "
            "address, docs/web.md), beside the collector's",
        )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.commands.args import local_root, root_directory
    from asz.daemon.install import service_command

    if not args.web:  # the collector lands into a directory; the web view reads an archive too
        local_root(config, "the collector service")
    elif not config.root_url:
        root_directory(config, missing=None)
    return service_command(args.action, config, dry_run=args.dry_run, web=args.web)
