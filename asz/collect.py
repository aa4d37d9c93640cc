"""``asz collect``: one pass (``--once``) or the long-running service."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from asz.config import Config
from asz.output import print_json
from asz.passes import pass_line, run_pass
from asz.store.bodies import BodyStore
from asz.store.root import Busy, Root, UnsafeRoot, collector_lock

EXIT_OK = 0
EXIT_FAILED = 1


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


def collect_command(args: argparse.Namespace, config: Config) -> int:
    config = service_config(args, config)
    if not args.once:
        from asz.daemon.service import run_service

        return run_service(config, as_json=args.json)
    return collect_once(config, as_json=args.json)


def collect_once(config: Config, as_json: bool) -> int:
    """One pass under the root lock; 0 when it was complete."""
    root = Root(config.root)
    try:
        with collector_lock(root):
            counts = run_pass(config, root, BodyStore(root, config.compression))
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
