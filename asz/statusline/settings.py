"""``asz statusline --install`` / ``--uninstall``: the ``statusLine`` entry of Claude Code's
``settings.json``.

The file is the user's: every other key is kept as it was, in its order, and a status line
command already there is kept too: asz's command runs it (``--with``) and shows its first line
before asz's own, and ``--uninstall`` puts it back as it was. The file is written whole to a
temporary file beside it and renamed over it, with the mode it had; a ``settings.json`` that
is a symbolic link (a dotfiles checkout) is written at the file it names, so the link stays.
``--dry-run`` prints the change as a diff and writes nothing.

Which file: ``--settings``, else ``settings.json`` in Claude Code's directory as asz finds it
(``asz sources``): the first of those directories that holds one, else the first that exists.
"""

from __future__ import annotations

import argparse
import difflib
import json
import os
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

from asz.config import Config
from asz.exits import EXIT_FAILED, EXIT_OK, UsageError

__all__ = [
    "KEY",
    "SETTINGS_FILE",
    "change_settings",
    "installed",
    "own_command",
    "settings_file",
    "uninstalled",
]

KEY = "statusLine"
SETTINGS_FILE = "settings.json"


def change_settings(args: argparse.Namespace, config: Config) -> int:
    path = args.settings or settings_file(config.claude_dirs)
    before = _read(path)
    ours = own_command()
    try:
        after = uninstalled(before) if args.uninstall else installed(before, ours)
    except ValueError as err:
        raise UsageError(f"{path}: {err}") from None
    if after is None:
        said = (
            "asz is in its status line already" if args.install else "its status line is not asz's"
        )
        print(f"{path}: {said}; nothing to change")
        return EXIT_OK
    if args.dry_run:
        sys.stdout.writelines(
            difflib.unified_diff(
                _text(before).splitlines(keepends=True),
                _text(after).splitlines(keepends=True),
                f"{path} (now)",
                f"{path} (with --{'uninstall' if args.uninstall else 'install'})",
            )
        )
        return EXIT_OK
    try:
        _write(path, after)
    except OSError as err:
        print(f"asz: cannot write {path}: {err.strerror}", file=sys.stderr)
        return EXIT_FAILED
    done = "took asz out of" if args.uninstall else "added asz to"
    print(f"{path}: {done} Claude Code's status line")
    return EXIT_OK


def settings_file(claude_dirs: tuple[Path, ...]) -> Path:
    """The ``settings.json`` Claude Code reads among its directories, as described above."""
    for directory in claude_dirs:
        if (directory / SETTINGS_FILE).is_file():
            return directory / SETTINGS_FILE
    existing = [directory for directory in claude_dirs if directory.is_dir()]
    return (existing or list(claude_dirs))[0] / SETTINGS_FILE


def own_command() -> str:
    """How this asz is started from a shell: the console script that runs, else
    ``python -m asz`` with this interpreter."""
    script = Path(sys.argv[0])
    if script.name == "asz":
        return f"{shlex.quote(os.path.abspath(script))} statusline"
    return f"{shlex.quote(sys.executable)} -m asz statusline"


def installed(settings: dict[str, Any], ours: str) -> dict[str, Any] | None:
    """The settings with asz's status line, after the command there was; None when asz's
    is there already. ValueError for a status line that is not a command: it is not asz's
    to replace."""
    entry = settings.get(KEY)
    if entry is None:
        return {**settings, KEY: {"type": "command", "command": ours, "padding": 0}}
    if not isinstance(entry, dict) or not isinstance(entry.get("command"), str):
        raise ValueError(
            f"its {KEY} is not a command asz can run before its own: {json.dumps(entry)}; "
            "remove it, then run this again"
        )
    if _ours(entry["command"]) is not None:
        return None
    command = f"{ours} --with {shlex.quote(entry['command'])}"
    return {**settings, KEY: {**entry, "type": "command", "command": command}}


def uninstalled(settings: dict[str, Any]) -> dict[str, Any] | None:
    """The settings with the status line as it was before asz's; None when it is not asz's."""
    entry = settings.get(KEY)
    if not isinstance(entry, dict):
        return None
    words = _ours(entry.get("command"))
    if words is None:
        return None
    before = _option(words, "--with")
    if before is None:
        return {key: value for key, value in settings.items() if key != KEY}
    return {**settings, KEY: {**entry, "command": before}}


def _ours(command: object) -> list[str] | None:
    """The words after ``statusline`` when ``command`` starts asz's status line."""
    if not isinstance(command, str):
        return None
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    if words[:1] and Path(words[0]).name == "asz" and words[1:2] == ["statusline"]:
        return words[2:]
    if words[1:4] == ["-m", "asz", "statusline"]:
        return words[4:]
    return None


def _option(words: list[str], name: str) -> str | None:
    for at, word in enumerate(words):
        if word == name and at + 1 < len(words):
            return words[at + 1]
        if word.startswith(name + "="):
            return word.partition("=")[2]
    return None


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text("utf-8")
    except FileNotFoundError:
        return {}
    except OSError as err:
        raise UsageError(f"cannot read {path}: {err.strerror}") from None
    try:
        value = json.loads(text) if text.strip() else {}
    except ValueError as err:
        raise UsageError(f"{path} is not JSON ({err}); fix it, then run this again") from None
    if not isinstance(value, dict):
        raise UsageError(f"{path} does not hold a JSON object; fix it, then run this again")
    return value


def _text(settings: dict[str, Any]) -> str:
    return json.dumps(settings, indent=2, ensure_ascii=False) + "\n"


def _write(path: Path, settings: dict[str, Any]) -> None:
    """Replaces the file at once, with its mode; through a link, at the file it names."""
    target = Path(os.path.realpath(path))
    try:
        mode = target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = None
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            file.write(_text(settings))
            file.flush()
            os.fsync(file.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
