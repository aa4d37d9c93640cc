"""``asz service``: install, remove or inspect the collector as a per-user service.

The units, the plans and their printing live in :mod:`asz.daemon.install`, next to the
service they describe; this module only hands the command line to it.
"""

from __future__ import annotations

import argparse

from asz.config import Config

SUMMARY = "install, remove or inspect the per-user collector service"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", choices=["install", "uninstall", "status"])
    parser.add_argument("--dry-run", action="store_true", help="say what would be done")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.daemon.install import service_command

    return service_command(args.action, config, dry_run=args.dry_run)
