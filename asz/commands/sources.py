"""``asz sources``: what each adapter sees, without landing anything.

It is the first thing to run when nothing lands: it names the directories asz reads, whether
they exist, and how many sessions and bodies are there.
"""

from __future__ import annotations

import argparse

from asz.commands.exits import EXIT_OK
from asz.config import Config

SUMMARY = "say what each adapter sees"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.adapters.discovery import discover
    from asz.adapters.provider_census import describe_sources
    from asz.bodykeys import is_session_id
    from asz.output import print_json

    found = discover(config.projects_dir)
    transcripts = {
        "dir": str(config.projects_dir),
        "exists": config.projects_dir.is_dir(),
        "sessions": len(found.sessions),
        "files": sum(len(session.sources) for session in found.sessions.values()),
        "unattributed": len(found.unattributed),
        "errors": found.errors,
    }
    bodies = describe_sources(config)
    if args.json:
        print_json({"claude_code_local": transcripts, "claude_code_provider": bodies})
        return EXIT_OK
    print("claude-code-local")
    print(f"  transcripts  : {transcripts['dir']}" + ("" if transcripts["exists"] else " (absent)"))
    print(f"  sessions     : {transcripts['sessions']} ({transcripts['files']} files)")
    for error in found.errors:
        print(f"  error        : {error}")
    print("claude-code-provider")
    if not bodies["exists"]:
        print(f"  bodies       : {bodies['dir']} (absent)")
        print(
            "  Claude Code writes bodies there when its environment has "
            f"OTEL_LOG_RAW_API_BODIES=file:{bodies['dir']}"
        )
        return EXIT_OK
    print(f"  bodies       : {bodies['dir']}")
    print(f"  files        : {bodies['requests']} request(s), {bodies['responses']} response(s)")
    # Only UUID-form ids are printed: any other value is body text, which stays out of output.
    odd = 0
    for session, count in bodies["sessions"].items():
        if is_session_id(session):
            print(f"    {session}  {count} request(s)")
        else:
            odd += count
    if odd:
        print(f"    {odd} request(s) name a session id that is not in Claude Code's form")
    print(
        f"  {len(bodies['sessions'])} session(s) named by requests; a response joins its "
        "session when it is collected"
    )
    return EXIT_OK
