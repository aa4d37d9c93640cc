"""``asz export otlp``: every landed model call as an OpenTelemetry GenAI span, sent over
OTLP/HTTP to the backend a team already runs (docs/otel.md); ``asz export parquet``: every
call, session and break as rows of Parquet tables in a directory or a bucket
(docs/analytics.md).

The spans are built and sent by :mod:`asz.export`, the tables written by
:mod:`asz.analytics`; this module picks the sessions (SESSION arguments, else every one
``--project`` and ``--since`` pick), names the endpoint or the target, and prints what was
sent and what waits.
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from asz.commands.args import SESSION_HELP, local_root
from asz.commands.listing import add_filters, filtering, list_sessions
from asz.config import Config
from asz.exits import EXIT_FAILED, UsageError

if TYPE_CHECKING:
    from asz.export.otel import SpanSender
    from asz.export.run import ExportTally
    from asz.export.spans import SpanRecord
    from asz.store import Store

__all__ = ["ACTIONS", "SUMMARY", "add_arguments", "run"]

SUMMARY = "send landed model calls to an OpenTelemetry backend as GenAI spans"
ACTIONS = {
    "otlp": "send every landed model call not sent yet as an OpenTelemetry span over "
    "OTLP/HTTP (docs/otel.md)",
    "parquet": "write every landed call, session and break not written yet as rows of "
    "Parquet tables, partitioned by day, in a directory or a bucket (docs/analytics.md)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    from asz.commands.args import common_options

    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    for name, summary in ACTIONS.items():
        action = actions.add_parser(
            name, parents=[common_options()], help=summary, description=summary
        )
        action.add_argument("sessions", nargs="*", metavar="SESSION", help=SESSION_HELP)
        add_filters(action)
        action.add_argument(
            "--json", action="store_true", help="print what was done as one JSON document"
        )
        if name == "parquet":
            action.add_argument(
                "--to",
                metavar="DIR|s3://BUCKET/PREFIX",
                help="where the tables are (default: [analytics] url in the config); a bucket "
                "is reached with [archive]'s endpoint and region",
            )
            continue
        action.add_argument(
            "--endpoint",
            metavar="URL",
            help="the OTLP/HTTP base URL, e.g. http://127.0.0.1:4318 (/v1/traces is added; "
            "default: [otlp] endpoint in the config, else $OTEL_EXPORTER_OTLP_ENDPOINT)",
        )
        action.add_argument(
            "--dry-run",
            action="store_true",
            help="send nothing, read and write no cursor: say every span of the sessions "
            "(with --json, each one), as an endpoint that has none of them would get them",
        )
        action.add_argument(
            "--content",
            action="store_true",
            help="spans also carry what each call sent (system prompt, tools, messages), "
            "through the [redact] policy (default: [otlp] content, off)",
        )


def run(args: argparse.Namespace, config: Config) -> int:
    if args.action == "parquet":
        return _parquet(args, config)
    return _otlp(args, config)


def _picked(args: argparse.Namespace, config: Config) -> tuple[Store, list[str]]:
    """The store, and the sessions SESSION arguments, or else ``--project`` and ``--since``,
    pick."""
    from asz.commands.args import landed_session, open_root

    if args.sessions and filtering(args):
        raise UsageError("--project and --since pick the sessions: give them no SESSION")
    if args.sessions:
        store = open_root(config)
        return store, list(dict.fromkeys(landed_session(config, t).id for t in args.sessions))
    listed = list_sessions(config, args)
    return listed.store, sorted(summary.id for summary in listed.shown)


def _parquet(args: argparse.Namespace, config: Config) -> int:
    from asz.analytics.run import AnalyticsBusy, write_facts
    from asz.commands.problems import report_problems
    from asz.output import print_json
    from asz.words import count

    root = local_root(config, "asz export")
    target = args.to or config.analytics.url
    if not target:
        raise UsageError(
            "no tables named: give --to DIR|s3://bucket/prefix, or set "
            "[analytics] url in the config file"
        )
    store, ids = _picked(args, config)
    try:
        tally = write_facts(config, store, root, target, ids)
    except (AnalyticsBusy, ValueError) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    except OSError as err:  # the target: a bucket that does not answer, a disk that is full
        print(f"asz: {err.filename or target}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    if args.json:
        print_json(tally.as_dict())
    else:
        parts = [
            f"wrote {count(tally.calls, 'call')}, {count(tally.breaks, 'break')} and "
            f"{count(tally.session_rows, 'session row')} of {count(tally.sessions, 'session')} "
            f"in {count(tally.files_written, 'file')}"
        ]
        if tally.sessions_unchanged:
            parts.append(f"{tally.sessions_unchanged:,} unchanged")
        if tally.waiting:
            parts.append(f"{tally.waiting:,} calls waiting for their session to settle")
        if tally.files_compacted:
            parts.append(f"{tally.files_compacted:,} files compacted")
        print(", ".join(parts) + f" ({tally.seconds:.3f} s)")
    return report_problems(tally.problems, all_in="--json")


def _otlp(args: argparse.Namespace, config: Config) -> int:
    from asz.commands.problems import report_problems
    from asz.commands.redact import make_redactor
    from asz.export.cursor import Cursors, ExportBusy, export_lock
    from asz.export.run import SpanExport
    from asz.view.prices import price_table

    root = local_root(config, "asz export")
    store, ids = _picked(args, config)
    otlp = config.otlp
    sender = None
    cursors = None
    if not args.dry_run:
        sender = _sender(args, config)
        cursors = Cursors(store, sender.target.traces_url)
    export = SpanExport(
        store,
        price_table(config.prices),
        sender,
        cursors,
        batch=otlp.batch_spans,
        quiet_seconds=otlp.quiet_seconds,
        redactor=make_redactor(config, make=not args.dry_run),
        content_limit=otlp.content_limit if args.content or otlp.content else None,
    )
    try:
        if args.dry_run:
            tally = export.run(ids)
        else:
            with export_lock(root):
                tally = export.run(ids)
    except ExportBusy as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        if sender is not None:
            sender.close()
    _print(args, tally, export.planned)
    if tally.error is not None:
        print(f"asz: {tally.error}", file=sys.stderr)
    code = report_problems(tally.problems, all_in="--json")
    return EXIT_FAILED if tally.error is not None else code


def _sender(args: argparse.Namespace, config: Config) -> SpanSender:
    from asz.export.otel import EndpointError, SpanSender, resolve_target

    otlp = config.otlp
    try:
        target = resolve_target(
            args.endpoint or otlp.endpoint, otlp.headers, otlp.headers_file, otlp.timeout
        )
    except EndpointError as err:
        raise UsageError(str(err)) from None
    return SpanSender(target)


def _print(args: argparse.Namespace, tally: ExportTally, planned: list[SpanRecord]) -> None:
    from asz.output import print_json
    from asz.words import count

    if args.json:
        document = tally.as_dict()
        document["dry_run"] = args.dry_run
        if args.dry_run:
            document["spans"] = [_said(record) for record in planned]
        print_json(document)
        return
    verb = "would send" if args.dry_run else "sent"
    parts = [f"{verb} {count(tally.spans_sent, 'span')} of {count(tally.sessions, 'session')}"]
    if tally.spans_already_sent:
        parts.append(f"{tally.spans_already_sent:,} sent before")
    if tally.spans_waiting:
        parts.append(f"{tally.spans_waiting:,} waiting for their session to settle")
    if tally.spans_failed:
        parts.append(f"{tally.spans_failed:,} not taken")
    if tally.untimed:
        parts.append(f"{tally.untimed:,} with no time, left out")
    if tally.content_withheld:
        parts.append(
            f"{tally.content_withheld:,} without their content (not readable or redactable)"
        )
    print(", ".join(parts) + f" ({tally.seconds:.3f} s)")


def _said(record: SpanRecord) -> dict[str, object]:
    """A span as ``--dry-run --json`` shows it: ids in hex, times in nanoseconds."""
    return {
        "name": record.name,
        "trace_id": f"{record.trace_id:032x}",
        "span_id": record.key,
        "parent_span_id": None if record.parent_id is None else f"{record.parent_id:016x}",
        "kind": "CLIENT" if record.client else "INTERNAL",
        "start_time_unix_nano": record.start_ns,
        "end_time_unix_nano": record.end_ns,
        "attributes": dict(record.attributes),
        "events": [
            {"name": event.name, "time_unix_nano": event.time_ns, "attributes": event.attributes}
            for event in record.events
        ],
    }
