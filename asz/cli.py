"""The ``asz`` command line: argument parsing and exit codes, nothing else.

Exit codes: 0 when the command did all it was asked, 1 when it did not (a pass with a
conflict or an error, a verify problem, a body that does not rebuild), 2 on a usage error
(bad arguments, an unusable config file, a session id that is not one).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path

from asz import __version__
from asz.config import Config, ConfigError, load_config
from asz.output import log_to_stderr, print_json

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Wrong input from the person at the keyboard (exit 2)."""


def _positive_float(text: str) -> float:
    value = float(text)
    if value < 0:
        raise argparse.ArgumentTypeError("must not be negative")
    return value


def _common() -> argparse.ArgumentParser:
    # SUPPRESS lets --root/--config stand before or after the subcommand.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--root", type=Path, default=argparse.SUPPRESS, help="storage root")
    common.add_argument("--config", type=Path, default=argparse.SUPPRESS, help="TOML config file")
    return common


def build_parser() -> argparse.ArgumentParser:
    common = _common()
    parser = argparse.ArgumentParser(
        prog="asz",
        parents=[common],
        description="Keep Claude Code's provider bodies and transcripts, deduplicated and "
        "verified, joined to the calls they belong to.",
    )
    parser.add_argument("--version", action="version", version=f"asz {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, summary: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, parents=[common], help=summary, description=summary)

    collect = command("collect", "land new transcripts and bodies (a service, or one pass)")
    collect.add_argument("--once", action="store_true", help="make one pass and exit")
    collect.add_argument("--json", action="store_true", help="print each pass's counts as JSON")
    collect.add_argument("--batch-window", type=_positive_float, metavar="SECONDS")
    collect.add_argument("--settle-seconds", type=_positive_float, metavar="SECONDS")
    collect.add_argument("--rescan-interval", type=_positive_float, metavar="SECONDS")
    collect.add_argument("--listen", metavar="HOST:PORT", help="metrics and health endpoint")

    verify = command("verify", "check every landed file and rebuild every landed body")
    verify.add_argument("session", nargs="?", help="only this session")
    verify.add_argument("--json", action="store_true", help="print the report as JSON")

    body = command("body", "write one landed body's exact bytes to stdout")
    body.add_argument("session")
    body.add_argument("id", help="source file name without .json, e.g. <uuid>.request")

    view = command("view", "print a session's calls joined to their bodies (JSON)")
    view.add_argument("session")

    cache = command("cache", "say what broke the prompt cache at each request, and what it cost")
    cache.add_argument("session")
    cache.add_argument("--json", action="store_true", help="print the report as JSON")

    service = command("service", "install, remove or inspect the per-user collector service")
    service.add_argument("action", choices=["install", "uninstall", "status"])
    service.add_argument("--dry-run", action="store_true", help="say what would be done")

    sources = command("sources", "say what each adapter sees")
    sources.add_argument("--json", action="store_true")

    restore = command("restore", "write a session's landed transcripts back to a directory")
    restore.add_argument("session")
    restore.add_argument("--to", type=Path, required=True, metavar="DIR")

    synth = command("synth", "write a synthetic Claude Code directory with its ground truth")
    synth.add_argument("outdir", type=Path)
    synth.add_argument("--seed", type=int, default=1)
    synth.add_argument("--sessions", type=int, default=2)
    synth.add_argument("--turns", type=int, default=6, help="user prompts per session")
    synth.add_argument("--tool-calls", type=int, default=2, help="tool calls per turn")
    synth.add_argument("--subagents", type=int, default=1, help="subagent runs per session")
    synth.add_argument("--compactions", type=int, default=1, help="compactions per session")
    synth.add_argument("--no-cache-breaks", action="store_true")
    synth.add_argument("--uuid-responses", type=int, default=1, help="per session")
    synth.add_argument("--index", action="store_true", help="also write index.jsonl")
    synth.add_argument("--from-transcripts", type=Path, metavar="DIR")
    synth.add_argument("--tools", type=Path, metavar="FILE", help="a captured request's tools")
    synth.add_argument("--start", type=datetime.fromisoformat, metavar="ISO-TIME")

    demo = command("demo", "synthesise a capture, collect it, verify it, say what happened")
    demo.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")
    return parser


def command_names() -> list[str]:
    return sorted(_HANDLERS)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = _HANDLERS[args.command]
    log_to_stderr()
    try:
        config = load_config(
            config_file=getattr(args, "config", None), root=getattr(args, "root", None)
        )
        return handler(args, config)
    except (ConfigError, UsageError) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:
        return EXIT_FAILED


def _collect(args: argparse.Namespace, config: Config) -> int:
    from asz.collect import collect_command

    return collect_command(args, config)


def _verify(args: argparse.Namespace, config: Config) -> int:
    from asz.store.root import Root
    from asz.store.transcripts import transcript_check
    from asz.store.verify import verify_root

    root = Root(config.root)
    sessions = None if args.session is None else [_session_arg(args.session)]
    if sessions:
        _landed_session(root, sessions[0])
    report = verify_root(root, sessions, checks=[transcript_check])
    if args.json:
        print_json(report.as_dict())
    else:
        for problem in report.problems:
            print(f"problem: {problem}")
        print(
            f"checked {report.sessions} session(s), {report.files} landed file(s), "
            f"{report.bodies} bodies, {report.transcript_lines} transcript line(s): "
            + (f"{len(report.problems)} problem(s)" if report.problems else "all rebuild")
        )
    return EXIT_FAILED if report.problems else EXIT_OK


def _body(args: argparse.Namespace, config: Config) -> int:
    from asz.store.codec import CodecError
    from asz.store.reader import BodyNotFound, SessionReader
    from asz.store.root import Root

    reader = SessionReader(Root(config.root), _session_arg(args.session))
    try:
        data = reader.body(args.id)
    except (BodyNotFound, CodecError) as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return EXIT_OK


def _view(args: argparse.Namespace, config: Config) -> int:
    from asz.store.root import Root
    from asz.view import build_view

    root = Root(config.root)
    session = _landed_session(root, args.session)
    print_json(build_view(root, session))
    return EXIT_OK


def _cache(args: argparse.Namespace, config: Config) -> int:
    from asz.store.root import Root
    from asz.view import cache_report, format_cache_report

    root = Root(config.root)
    report = cache_report(root, _landed_session(root, args.session))
    if args.json:
        print_json(report)
    else:
        print(format_cache_report(report))
    return EXIT_OK


def _service(args: argparse.Namespace, config: Config) -> int:
    from asz.daemon.install import service_command

    return service_command(args.action, config, dry_run=args.dry_run)


def _landed_session(root, session: str) -> str:
    session = _session_arg(session)
    if not root.session_dir(session).is_dir():
        raise UsageError(f"no session {session} under {root.path}")
    return session


def _sources(args: argparse.Namespace, config: Config) -> int:
    from asz.sources import sources_command

    return sources_command(config, as_json=args.json)


def _restore(args: argparse.Namespace, config: Config) -> int:
    from asz.store.restore import restore_command

    return restore_command(config, _session_arg(args.session), args.to)


def _synth(args: argparse.Namespace, config: Config) -> int:
    from asz.synth import SynthOptions, synthesize

    options = SynthOptions(
        seed=args.seed,
        sessions=args.sessions,
        turns=args.turns,
        tool_calls=args.tool_calls,
        subagents=args.subagents,
        compactions=args.compactions,
        cache_breaks=not args.no_cache_breaks,
        uuid_responses=args.uuid_responses,
        index=args.index,
        from_transcripts=args.from_transcripts,
        tools_file=args.tools,
        **({"start": args.start} if args.start else {}),
    )
    expected = synthesize(args.outdir, options)
    totals = expected["totals"]
    print(
        f"wrote {totals['requests']} requests, {totals['responses']} responses and "
        f"{len(expected['sessions'])} sessions' transcripts under {args.outdir}"
    )
    return EXIT_OK


def _demo(args: argparse.Namespace, config: Config) -> int:
    from asz.demo import demo_command

    return demo_command(config, keep=args.keep)


def _session_arg(session: str) -> str:
    from asz.bodykeys import is_session_id

    if not is_session_id(session):
        raise UsageError(f"{session!r} is not a Claude Code session id")
    return session


_HANDLERS: dict[str, Callable[[argparse.Namespace, Config], int]] = {
    "collect": _collect,
    "verify": _verify,
    "body": _body,
    "sources": _sources,
    "view": _view,
    "cache": _cache,
    "service": _service,
    "restore": _restore,
    "synth": _synth,
    "demo": _demo,
}
