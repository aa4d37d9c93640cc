"""``asz collect``: one pass (``--once``) or the long-running service.

The pass and the service live in :mod:`asz.passes` and :mod:`asz.daemon.service`; this module
turns the command line into their config and their counts into output and an exit code.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import TYPE_CHECKING

from asz.commands.args import local_root
from asz.config import Config, ServiceConfig
from asz.exits import EXIT_FAILED, EXIT_OK
from asz.output import LOG_FORMATS
from asz.words import CONFLICT_ADVICE, count

if TYPE_CHECKING:
    from asz.tally import Tally

__all__ = ["SUMMARY", "add_arguments", "collect_once", "run", "service_config"]

SUMMARY = "land new transcripts and bodies (a service, or one pass)"


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--once", action="store_true", help="make one pass and exit")
    parser.add_argument("--json", action="store_true", help="print each pass's counts as JSON")
    defaults = ServiceConfig()
    parser.add_argument(
        "--batch-window",
        type=_positive_float,
        metavar="SECONDS",
        help="the service gathers what changed this long before a pass, so a burst of writes "
        f"lands in one pass (default: {defaults.batch_window:g}, or service.batch_window)",
    )
    parser.add_argument(
        "--settle-seconds",
        type=_positive_float,
        metavar="SECONDS",
        help="a body file must stay unchanged this long before the service takes it "
        f"(default: {defaults.settle_seconds:g}, or service.settle_seconds)",
    )
    parser.add_argument(
        "--rescan-interval",
        type=_positive_float,
        metavar="SECONDS",
        help="the service looks at every source this often whatever the watcher said "
        f"(default: {defaults.rescan_interval:g}, or service.rescan_interval)",
    )
    parser.add_argument(
        "--report-interval",
        type=_positive_float,
        metavar="SECONDS",
        help="the service builds a session's cache report at most this often while the session "
        f"keeps landing (default: {defaults.report_interval:g}, or service.report_interval)",
    )
    parser.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help="where the service serves /metrics, /healthz and /readyz "
        f"(default: {defaults.listen}, or service.listen; port 0 picks a free one)",
    )
    parser.add_argument(
        "--log-format",
        choices=LOG_FORMATS,
        default="auto",
        help="the log's lines: console lines for people, JSON lines for machines; auto picks "
        "console on a terminal and JSON anywhere else (default: auto)",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    local_root(config, "asz collect")
    config = service_config(args, config)
    if not args.once:
        from asz.daemon.service import run_service

        return run_service(config, as_json=args.json, log_format=args.log_format)
    from asz.logs import log_to_stderr

    log_to_stderr(args.log_format)
    from asz.adapters.presence import nothing_there

    # A pass over directories that are all absent lands nothing and would look clean.
    if (missing := nothing_there(config)) is not None:
        print(f"asz: {missing}", file=sys.stderr)
        return EXIT_FAILED
    return collect_once(config, as_json=args.json)


def service_config(args: argparse.Namespace, config: Config) -> Config:
    """The config with the service flags given on the command line applied."""
    overrides = {
        key: value
        for key, value in (
            ("batch_window", args.batch_window),
            ("settle_seconds", args.settle_seconds),
            ("rescan_interval", args.rescan_interval),
            ("report_interval", args.report_interval),
            ("listen", args.listen),
        )
        if value is not None
    }
    return replace(config, service=replace(config.service, **overrides)) if overrides else config


def collect_once(config: Config, as_json: bool) -> int:
    """One pass under the root lock; 0 when it was complete."""
    from asz.output import print_json
    from asz.passes import pass_line, run_pass
    from asz.progress import progress
    from asz.store import BodyLander, Busy, Root, UnsafeRoot, collector_lock, open_store
    from asz.view.keeper import ReportKeeper
    from asz.view.prices import price_table

    root = Root(config.root)
    try:
        with collector_lock(root):
            store = open_store(config.root, compression=config.compression)
            lander = BodyLander(store)
            reports = ReportKeeper(store, price_table(config.prices), interval=0)
            with progress("collecting") as shown:
                lander.progress = shown
                counts = run_pass(config, root, lander, progress=shown, reports=reports)
    except Busy as err:
        print(f"asz: {err}; one collector per root", file=sys.stderr)
        return EXIT_FAILED
    except UnsafeRoot as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    if as_json:
        print_json(counts.as_dict())
    else:
        print(pass_line(counts, "" if counts.changed else _held(config)))
    _say_trouble(counts)
    return EXIT_OK if counts.complete else EXIT_FAILED


def _say_trouble(counts: Tally) -> None:
    """The pass's conflicts on stderr as one message, what to do about them first and the
    sources after, and each error once."""
    if counts.conflict_sources:
        print(f"asz: {count(counts.conflicts, 'conflict')}: {CONFLICT_ADVICE}:", file=sys.stderr)
        for source in counts.conflict_sources:
            print(f"  {source}", file=sys.stderr)
    for error in counts.errors:
        print(f"asz: error: {error}", file=sys.stderr)


def _held(config: Config) -> str:
    """What the root already holds, said when a pass found nothing new: one listing per
    session, so it costs little however much landed."""
    from asz.store import open_store

    store = open_store(config.root)
    sessions = store.sessions()
    if not sessions:
        return "nothing landed yet"
    transcripts = sum(len(store.session(session).stream_dirs()) for session in sessions)
    return (
        f"{count(transcripts, 'transcript file')} of {count(len(sessions), 'session')} "
        "already landed"
    )
