"""``asz collect``: one pass (``--once``) or the long-running service.

The pass and the service live in :mod:`asz.passes` and :mod:`asz.daemon.service`; this module
turns the command line into their config and their counts into output and an exit code.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from asz.commands.exits import EXIT_FAILED, EXIT_OK
from asz.config import Config

SUMMARY = "land new transcripts and bodies (a service, or one pass)"


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="make one pass and exit")
    parser.add_argument("--json", action="store_true", help="print each pass's counts as JSON")
    parser.add_argument("--batch-window", type=_positive_float, metavar="SECONDS")
    parser.add_argument("--settle-seconds", type=_positive_float, metavar="SECONDS")
    parser.add_argument("--rescan-interval", type=_positive_float, metavar="SECONDS")
    parser.add_argument("--listen", metavar="HOST:PORT", help="metrics and health endpoint")


def run(args: argparse.Namespace, config: Config) -> int:
    config = service_config(args, config)
    if not args.once:
        from asz.daemon.service import run_service

        return run_service(config, as_json=args.json)
    return collect_once(config, as_json=args.json)


def service_config(args: argparse.Namespace, config: Config) -> Config:
    """The config with the service flags given on the command line applied."""
    overrides = {
        key: value
        for key, value in (
            ("batch_window", args.batch_window),
            ("settle_seconds", args.settle_seconds),
            ("rescan_interval", args.rescan_interval),
            ("listen", args.listen),
        )
        if value is not None
    }
    return replace(config, service=replace(config.service, **overrides)) if overrides else config


def collect_once(config: Config, as_json: bool) -> int:
    """One pass under the root lock; 0 when it was complete."""
    from asz.output import print_json
    from asz.passes import pass_line, run_pass
    from asz.store import open_store
    from asz.store.bodies import BodyLander
    from asz.store.root import Busy, Root, UnsafeRoot, collector_lock

    root = Root(config.root)
    try:
        with collector_lock(root):
            lander = BodyLander(open_store(config.root, compression=config.compression))
            counts = run_pass(config, root, lander)
    except Busy as err:
        print(f"asz: {err}; one collector per root", file=sys.stderr)
        return EXIT_FAILED
    except UnsafeRoot as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        print_json(counts.as_dict())
    elif counts.changed or counts.bodies_waiting or counts.bodies_unreadable:
        print(pass_line(counts))
    for source in counts.conflict_sources:
        print(f"  conflict: {source}", file=sys.stderr)
    for error in counts.errors:
        print(f"  error: {error}", file=sys.stderr)
    return EXIT_OK if counts.complete else EXIT_FAILED
