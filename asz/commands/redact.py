"""``asz redact``: what a push, a shared view or an export would redact, seen beforehand.

``--dry-run`` tallies, per session of the local root, the markers each rule would make in
its bodies and transcript lines (never a value); ``--show SESSION`` prints each hit with a
little context, the value already replaced by its marker, so a user can tune ``[redact]``.
The local root itself is never changed.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from asz.commands.args import SESSION_HELP, landed_session, open_root
from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK, UsageError
from asz.words import count

if TYPE_CHECKING:
    from asz.redact import Redactor, Tally
    from asz.store import Session

__all__ = ["SUMMARY", "add_arguments", "make_redactor", "run"]

SUMMARY = "list what would be redacted where data leaves the machine ([redact]), by rule"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "sessions", nargs="*", metavar="SESSION", help=f"{SESSION_HELP} (default: every one)"
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--dry-run",
        action="store_true",
        help="per session, the markers each rule would make and the bodies and lines they "
        "are in, never a value",
    )
    mode.add_argument(
        "--show",
        action="store_true",
        help="each hit of the sessions named, with a little context and the value masked",
    )
    parser.add_argument("--json", action="store_true", help="print the result as JSON")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.output import print_json

    if config.root_url:
        raise UsageError(
            "asz redact reads a storage root directory: an archive holds what was redacted"
        )
    if args.show and not args.sessions:
        raise UsageError("--show needs the sessions to show")
    store = open_root(config)
    redactor = make_redactor(config, make=False)
    sessions = (
        [landed_session(config, text) for text in args.sessions]
        if args.sessions
        else [store.session(session_id) for session_id in store.sessions()]
    )
    if args.show:
        return _show(redactor, sessions, args.json)
    from asz.redact import tally_session

    tallies = {session.id: tally_session(redactor, session) for session in sessions}
    if args.json:
        print_json(
            {
                "enabled": redactor.policy.enabled,
                "policy": redactor.policy.fingerprint,
                "rules": list(redactor.policy.rules),
                "sessions": {sid: tally.as_json() for sid, tally in tallies.items()},
            }
        )
    else:
        _print_tallies(redactor, tallies)
    return EXIT_FAILED if any(tally.failed for tally in tallies.values()) else EXIT_OK


def make_redactor(config: Config, *, make: bool = True) -> Redactor:
    """The redactor the config's ``[redact]`` and key give for the local root: a key kept in
    the root's ``_state`` is used, and made when absent if ``make`` (a push); a dry run
    draws one for itself instead, since its counts do not depend on it. A rule or class the
    policy does not know is a usage error naming the config file (the config, a leaf
    module, checks only the types: the names are the redactor's)."""
    from asz.redact import configured_redactor
    from asz.store import REDACT_KEY_FILE, STATE_DIR

    where = str(config.source_file) if config.source_file else "the defaults"
    key_file = config.root / STATE_DIR / REDACT_KEY_FILE
    try:
        return configured_redactor(config, key_file, make=make)
    except ValueError as err:
        raise UsageError(f"{where}: {err}") from None


def _print_tallies(redactor: Redactor, tallies: dict[str, Tally]) -> None:
    if not redactor.policy.enabled:
        print("redaction is off ([redact] enabled = false): everything would leave raw")
    total = 0
    for session_id, tally in tallies.items():
        total += tally.markers
        rules = ", ".join(f"{rule} {n:,}" for rule, n in tally.rules.most_common())
        print(
            f"{session_id}  {count(tally.markers, 'marker')} in "
            f"{tally.bodies_redacted:,}/{count(tally.bodies, 'body')} and "
            f"{tally.lines_redacted:,}/{count(tally.lines, 'line')}"
            + (f": {rules}" if rules else "")
        )
        for name in tally.failed:
            print(f"  the scan of {name} failed: nothing of it would leave the machine")
    print(
        f"{count(total, 'marker')} over {count(len(tallies), 'session')}; "
        f"rules: {len(redactor.policy.rules)} (policy {redactor.policy.fingerprint})"
    )


def _show(redactor: Redactor, sessions: list[Session], as_json: bool) -> int:
    from asz.output import print_json

    rows = []
    for session in sessions:
        documents = [(record_id, session.body(record_id)) for record_id in session.body_ids()]
        documents.extend(
            (f"{line.source}:{line.line}", line.data.rstrip(b"\r\n"))
            for line in session.transcript_lines()
        )
        for name, raw in documents:
            for finding in redactor.findings(raw):
                row = {
                    "session": session.id,
                    "in": name,
                    "rule": finding.rule,
                    "path": finding.path,
                    "context": finding.context,
                }
                rows.append(row)
                if not as_json:
                    print(f"{name}  {finding.rule}  {finding.path}\n    {finding.context}")
    if as_json:
        print_json(rows)
    else:
        print(f"{count(len(rows), 'hit')}")
    return EXIT_OK
