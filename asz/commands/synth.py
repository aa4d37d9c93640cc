"""``asz synth``: a synthetic Claude Code directory with its ground truth.

The generator lives in :mod:`asz.synth`; this module turns the command line into its options
and says what was written.
"""

from __future__ import annotations

import argparse
from datetime import datetime
from pathlib import Path

from asz.commands.exits import EXIT_OK, UsageError
from asz.config import Config

SUMMARY = "write a synthetic Claude Code directory with its ground truth"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("outdir", type=Path)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--turns", type=int, default=6, help="user prompts per session")
    parser.add_argument("--tool-calls", type=int, default=2, help="tool calls per turn")
    parser.add_argument("--subagents", type=int, default=1, help="subagent runs per session")
    parser.add_argument("--compactions", type=int, default=1, help="compactions per session")
    parser.add_argument("--no-cache-breaks", action="store_true")
    parser.add_argument("--uuid-responses", type=int, default=1, help="per session")
    parser.add_argument("--index", action="store_true", help="also write index.jsonl")
    parser.add_argument("--from-transcripts", type=Path, metavar="DIR")
    parser.add_argument("--tools", type=Path, metavar="FILE", help="a captured request's tools")
    parser.add_argument("--start", type=datetime.fromisoformat, metavar="ISO-TIME")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.synth import NoTranscripts, SynthOptions, synthesize

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
    try:
        expected = synthesize(args.outdir, options)
    except NoTranscripts as err:
        raise UsageError(str(err)) from None
    totals = expected["totals"]
    print(
        f"wrote {totals['requests']} requests, {totals['responses']} responses and "
        f"{len(expected['sessions'])} sessions' transcripts under {args.outdir}"
    )
    return EXIT_OK
