"""``asz statusline``: its arguments, and the run that reads stdin and prints one line.

The console script sends ``asz statusline ...`` here directly (:func:`fast_main`), without
loading the command table, whenever the words after ``statusline`` are this command's own;
anything else (``--root``, ``--config``, ``--help``, ``--install``, a word it does not know)
goes through the whole command line, which registers this same command
(``asz.commands.statusline``) and says what is wrong the usual way.

Showing the line never fails: whatever the input, the transcript or the cache directory hold,
it prints a line and exits 0, since Claude Code blanks the line of a command that fails. What
went wrong, if anything, is one line on stderr, which Claude Code does not show.
"""

from __future__ import annotations

import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from asz.statusline.line import FIELDS

if TYPE_CHECKING:
    import argparse
    from collections.abc import Callable, Iterator

    from asz.config import Config
    from asz.statusline.status_input import StatusInput

__all__ = [
    "SUMMARY",
    "ShowOptions",
    "add_arguments",
    "chosen_fields",
    "fast_main",
    "own_options",
    "run",
    "show",
]

SUMMARY = "print one line on the session's prompt cache for Claude Code's status line"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--fields",
        type=_fields,
        default=FIELDS,
        help=f"what the line shows, in this order: a comma-separated choice of "
        f"{', '.join(FIELDS)} (default: all)",
    )
    parser.add_argument(
        "--json", action="store_true", help="print the figures as one JSON object instead"
    )
    parser.add_argument(
        "--no-color",
        action="store_true",
        help="never colour the last break (also when NO_COLOR is set)",
    )
    parser.add_argument(
        "--with",
        dest="with_command",
        metavar="COMMAND",
        help="run this shell command with the same stdin and show its first line before "
        "asz's (how --install keeps a status line that was there; default: none)",
    )
    action = parser.add_mutually_exclusive_group()
    action.add_argument(
        "--install",
        action="store_true",
        help="add this status line to Claude Code's settings.json, after any status line "
        "already there",
    )
    action.add_argument(
        "--uninstall",
        action="store_true",
        help="take it out again, putting back the status line that was there before",
    )
    parser.add_argument(
        "--dry-run",
        action="store_true",
        help="with --install or --uninstall: show the change, write nothing",
    )
    parser.add_argument(
        "--settings",
        type=Path,
        help="the settings.json to change (default: the one in Claude Code's directory, "
        "as asz sources lists them)",
    )


def _fields(text: str) -> tuple[str, ...]:
    import argparse  # loaded already: this is the type of an option argparse reads

    chosen = chosen_fields(text)
    if chosen is None:
        raise argparse.ArgumentTypeError(
            f"{text!r}: a comma-separated choice of {', '.join(FIELDS)}"
        )
    return chosen


def chosen_fields(text: str) -> tuple[str, ...] | None:
    """The fields ``--fields`` names, or None when it names none or one that is not one."""
    chosen = tuple(part.strip() for part in text.split(",") if part.strip())
    return chosen if chosen and all(part in FIELDS for part in chosen) else None


def run(args: argparse.Namespace, config: Config) -> int:
    if args.install or args.uninstall:
        from asz.statusline.settings import change_settings

        return change_settings(args, config)
    if args.dry_run or args.settings:
        from asz.exits import UsageError

        raise UsageError("--dry-run and --settings go with --install or --uninstall")
    return show(args, lambda: config)


def fast_main(argv: list[str]) -> int | None:
    """Shows the line for ``asz statusline ARGV`` without the command table; None when
    ARGV holds anything but this command's own options for showing the line.

    These few options are read here by hand: argparse, and the help formatter it builds as
    options are added, would load about as many modules again as showing the line does."""
    args = own_options(argv)
    if args is None:
        return None

    def config() -> Config:
        from asz.config_file import load_config

        return load_config()

    return show(args, config)


def own_options(argv: list[str]) -> ShowOptions | None:
    """``--json``, ``--no-color``, ``--fields F`` and ``--with C`` (or ``--fields=F``,
    ``--with=C``), as :func:`add_arguments` defines them; None for any other word, or
    fields that are not."""
    shown = ShowOptions()
    words = iter(argv)
    for word in words:
        if word == "--json":
            shown.json = True
        elif word == "--no-color":
            shown.no_color = True
        elif word == "--fields" or word.startswith("--fields="):
            fields = chosen_fields(_value(word, words))
            if fields is None:
                return None
            shown.fields = fields
        elif word == "--with" or word.startswith("--with="):
            shown.with_command = _value(word, words) or None
        else:
            return None
    return shown


def _value(word: str, words: Iterator[str]) -> str:
    """The value of ``--option=value``, else the next word."""
    return word.partition("=")[2] if "=" in word else next(words, "")


class ShowOptions:
    """What showing the line takes of the arguments (an ``argparse.Namespace`` has them too)."""

    def __init__(self) -> None:
        self.json = False
        self.no_color = False
        self.fields: tuple[str, ...] = FIELDS
        self.with_command: str | None = None


def show(args: ShowOptions | argparse.Namespace, config: Callable[[], Config]) -> int:
    """Prints the line (or its JSON) for what stdin says; always exits 0."""
    from asz.statusline.line import NEUTRAL_WORDS, SEPARATOR, words
    from asz.statusline.status_input import parse_input, read_stdin

    data = read_stdin(sys.stdin)
    try:
        shown = _figures(parse_input(data), config)
    except Exception as err:  # the line must never fail; stderr says what happened
        print(f"asz statusline: {type(err).__name__}: {err}", file=sys.stderr)
        shown = {"status": "failed"}
    color = not args.no_color and not os.environ.get("NO_COLOR")
    neutral = NEUTRAL_WORDS.get(shown["status"])
    shown["line"] = neutral or words(shown, args.fields, color=False)
    text = neutral or words(shown, args.fields, color=color)
    if args.with_command:
        from asz.statusline.combined import first_line

        before = first_line(args.with_command, data)
        shown["before"] = before
        text = f"{before}{SEPARATOR}{text}" if before else text
    if args.json:
        import orjson

        out = orjson.dumps(shown) + b"\n"
    else:
        out = text.encode("utf-8", "replace") + b"\n"
    try:
        sys.stdout.buffer.write(out)
        sys.stdout.buffer.flush()
    except (BrokenPipeError, ValueError):
        pass
    return 0


def _figures(status: StatusInput, config: Callable[[], Config]) -> dict[str, Any]:
    """The figures of the session stdin names, going on from the kept state."""
    if status.session_id is None and status.transcript_path is None:
        return {"status": "no_input"}
    if status.transcript_path is None:
        return {"status": "no_transcript"}
    from asz.config import ConfigError

    try:
        loaded = config()
    except ConfigError as err:
        print(f"asz statusline: {err}", file=sys.stderr)
        return {"status": "config"}
    from asz.statusline.reading import read_session

    return read_session(status, loaded, now=time.time(), today=datetime.now(UTC))
