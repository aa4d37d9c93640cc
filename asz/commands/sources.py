"""``asz sources``: what each adapter sees, without landing anything.

It is the first thing to run when nothing lands: it names every directory asz reads, whether
it is there, and how many sessions and bodies each holds; and when none of them is there it
says so on stderr and exits 1, as ``asz collect --once`` would.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK
from asz.words import count

__all__ = ["SUMMARY", "add_arguments", "describe_transcripts", "run"]

SUMMARY = "say what each adapter sees"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--json", action="store_true", help="print what each adapter sees as one JSON object"
    )


def run(args: argparse.Namespace, config: Config) -> int:
    """0 when some directory to read is there, 1 (after the report) when none is."""
    from asz.adapters.presence import nothing_there
    from asz.adapters.provider_census import describe_sources
    from asz.output import print_json

    described: dict[str, Any] = {
        "claude_dirs": [
            {"dir": str(directory), "exists": directory.is_dir()}
            for directory in config.claude_dirs
        ],
        "claude_code_local": describe_transcripts(config),
        "claude_code_provider": describe_sources(config),
    }
    if args.json:
        print_json(described)
    else:
        print("Claude Code directories")
        for entry in described["claude_dirs"]:
            print(f"  {entry['dir']}" + _absent(entry))
        _print_transcripts(described["claude_code_local"])
        _print_bodies(described["claude_code_provider"], config)
    # Nothing to read anywhere is what `collect --once` would fail on: said the same way.
    if (missing := nothing_there(config)) is not None:
        print(f"asz: {missing}", file=sys.stderr)
        return EXIT_FAILED
    return EXIT_OK


def describe_transcripts(config: Config) -> dict[str, Any]:
    """What the projects directories hold: each with its sessions and files, and how many of
    its files are shadowed by the same path under an earlier directory."""
    from asz.adapters.discovery import discover

    found = discover(*config.projects_dirs)
    return {
        "dirs": [
            {
                "dir": str(scanned.path),
                "exists": scanned.exists,
                "same_as": str(scanned.same_as) if scanned.same_as else None,
                "sessions": len(scanned.sessions),
                "files": scanned.files,
                "shadowed": len(scanned.shadowed),
            }
            for scanned in found.dirs
        ],
        "sessions": len(found.sessions),
        "files": sum(len(session.sources) for session in found.sessions.values()),
        "unattributed": len(found.unattributed),
        "shadowed": sum(len(scanned.shadowed) for scanned in found.dirs),
        "errors": found.errors,
    }


def _absent(entry: dict[str, Any]) -> str:
    if entry.get("same_as"):
        return f" (the same directory as {entry['same_as']})"
    return "" if entry["exists"] else " (absent)"


def _shadowed(entry: dict[str, Any]) -> None:
    if entry["shadowed"]:
        print(
            f"    {count(entry['shadowed'], 'file')} here also under an earlier directory: "
            "the earlier copy is the one collected"
        )


def _print_dirs(title: str, entries: list[dict[str, Any]], said: Callable[[Any], str]) -> None:
    """Each directory of one adapter, with what it holds, or why it holds nothing."""
    print(title)
    for entry in entries:
        held = f": {said(entry)}" if entry["exists"] and not entry["same_as"] else _absent(entry)
        print(f"  {entry['dir']}{held}")
        _shadowed(entry)


def _print_transcripts(transcripts: dict[str, Any]) -> None:
    def said(counts: Any) -> str:
        return f"{count(counts['sessions'], 'session')}, {count(counts['files'], 'file')}"

    _print_dirs("transcripts", transcripts["dirs"], said)
    if len(transcripts["dirs"]) > 1:
        print(f"  in all: {said(transcripts)}")
    for error in transcripts["errors"]:
        print(f"  error: {error}")


def _print_bodies(bodies: dict[str, Any], config: Config) -> None:
    from asz.bodykeys import is_session_id

    def said(counts: Any) -> str:
        return f"{count(counts['requests'], 'request')}, {count(counts['responses'], 'response')}"

    _print_dirs("bodies", bodies["dirs"], said)
    if not bodies["exists"]:
        print(
            "  Claude Code writes bodies there when its environment has "
            f"OTEL_LOG_RAW_API_BODIES=file:{_suggested_bodies_dir(config)}"
        )
        return
    if len(bodies["dirs"]) > 1:
        print(f"  in all: {said(bodies)}")
    # Only UUID-form ids are printed: any other value is body text, which stays out of output.
    odd = 0
    for session, requests in bodies["sessions"].items():
        if is_session_id(session):
            print(f"    {session}  {count(requests, 'request')}")
        else:
            odd += requests
    if odd:
        print(f"    {count(odd, 'request')} name a session id that is not in Claude Code's form")
    print(
        f"  {count(len(bodies['sessions']), 'session')} named by requests; a response joins "
        "its session when it is collected"
    )


def _suggested_bodies_dir(config: Config) -> Path:
    """The bodies directory to tell Claude Code to write to: the one configured, else that of
    the first Claude Code directory there is, where Claude Code already keeps its files, else
    that of ``~/.claude``, the one Claude Code documents (and the README names)."""
    if config.adapters.claude_code_provider.source_root:
        return config.bodies_dirs[0]
    pairs = list(zip(config.claude_dirs, config.bodies_dirs, strict=True))
    there = [bodies for claude, bodies in pairs if claude.is_dir()]
    documented = [bodies for claude, bodies in pairs if claude == Path.home() / ".claude"]
    return [*there, *documented, config.bodies_dirs[0]][0]
