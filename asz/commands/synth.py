"""``asz synth``: a synthetic Claude Code directory with its ground truth.

The generator lives in :mod:`asz.synth`; this module turns the command line into its options
and says what was written.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from asz.config import Config
from asz.exits import EXIT_OK, UsageError
from asz.synth.options import SynthOptions
from asz.words import count

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "write a synthetic Claude Code directory with its ground truth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    d = SynthOptions()
    parser.add_argument(
        "outdir",
        type=Path,
        help="the Claude Code directory to write (projects/, asz/provider-bodies/) and its "
        "ground truth, expected.json",
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=d.seed,
        help="the same seed gives the same bytes (default: %(default)s)",
    )
    parser.add_argument(
        "--sessions", type=int, default=d.sessions, help="sessions to write (default: %(default)s)"
    )
    parser.add_argument(
        "--turns", type=int, default=d.turns, help="user prompts per session (default: %(default)s)"
    )
    parser.add_argument(
        "--tool-calls",
        type=int,
        default=d.tool_calls,
        help="tool calls per turn (default: %(default)s)",
    )
    parser.add_argument(
        "--subagents",
        type=int,
        default=d.subagents,
        help="subagent runs per session (default: %(default)s)",
    )
    parser.add_argument(
        "--compactions",
        type=int,
        default=d.compactions,
        help="compactions per session (default: %(default)s)",
    )
    parser.add_argument(
        "--no-cache-breaks",
        action="store_true",
        help="change nothing that breaks the prompt cache (default: a few breaks, named in "
        "expected.json)",
    )
    parser.add_argument(
        "--uuid-responses",
        type=int,
        default=d.uuid_responses,
        help="responses per session whose file is named by a UUID instead of a request id, as "
        "some Claude Code versions write them (default: %(default)s)",
    )
    parser.add_argument(
        "--index",
        action="store_true",
        help="also write index.jsonl, as Claude Code 2.1.274 and later do (default: not)",
    )
    parser.add_argument(
        "--from-transcripts",
        type=Path,
        metavar="DIR",
        help="write the requests and responses real transcripts imply: DIR is a Claude Code "
        "projects directory, whose transcripts are copied and replayed call by call "
        "(default: invent the sessions)",
    )
    parser.add_argument(
        "--tools",
        type=Path,
        metavar="FILE",
        help="a captured request (JSON) whose tools the requests carry (default: a built-in "
        "list of Claude Code's tools)",
    )
    parser.add_argument(
        "--secrets",
        action="store_true",
        help="plant one secret of every kind the redactor finds, and near misses it must "
        "leave alone, in a tool result of each session, named in expected.json (default: not)",
    )
    parser.add_argument(
        "--start",
        type=datetime.fromisoformat,
        metavar="ISO-TIME",
        help=f"when the first session starts (default: {d.start.isoformat()})",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.synth import NoTranscripts, synthesize

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
        secrets=args.secrets,
        **({"start": args.start} if args.start else {}),
    )
    try:
        expected = synthesize(args.outdir, options)
    except NoTranscripts as err:
        raise UsageError(str(err)) from None
    totals = expected["totals"]
    print(
        f"wrote {count(totals['requests'], 'request')}, {count(totals['responses'], 'response')} "
        f"and the transcripts of {count(len(expected['sessions']), 'session')} under "
        f"{args.outdir}"
    )
    return EXIT_OK
