"""Checks on the arguments several commands share, so each command reads the same input alike.

A session is named the way people paste it (any case, or a unique prefix): the store resolves
it (``Store.find_session``), and every session-taking command goes through
:func:`landed_session`, so each accepts and refuses the same text with the same words.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from asz.exits import UsageError
from asz.zones import IN_UTC, Zone

if TYPE_CHECKING:
    from asz.config import Config
    from asz.store import Session, Store

__all__ = [
    "NO_ROOT",
    "SESSION_HELP",
    "SINCE_HELP",
    "add_session",
    "add_zone",
    "common_options",
    "landed_session",
    "local_root",
    "open_root",
    "parse_since",
    "root_argument",
    "root_directory",
]

_AGE = re.compile(r"(\d{1,6})([mhdw])")
_AGE_UNITS = {"m": "minutes", "h": "hours", "d": "days", "w": "weeks"}
SINCE_HELP = (
    "a date (2026-01-31, from midnight UTC, or local with --local), an ISO time "
    "(2026-01-31T09:30, UTC or local alike unless it names a zone, e.g. +02:00), or an age: "
    "30m, 24h, 7d, 2w"
)


SESSION_HELP = "a session id in any case, or a unique prefix of one (as `asz sessions` shows it)"


def common_options() -> argparse.ArgumentParser:
    """--root and --config, which every command (and every action of one) takes; SUPPRESS
    lets them stand before or after the command."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--root",
        type=root_argument,
        default=argparse.SUPPRESS,
        help="the storage root (default: $ASZ_ROOT, else root in the config file, else "
        "$XDG_DATA_HOME/asz, i.e. ~/.local/share/asz); the reading commands also read a team "
        "archive, s3://bucket/prefix",
    )
    common.add_argument(
        "--config",
        type=Path,
        default=argparse.SUPPRESS,
        help="a TOML config file (default: $XDG_CONFIG_HOME/asz/asz.toml, i.e. "
        "~/.config/asz/asz.toml, when it exists)",
    )
    return common


def root_argument(text: str) -> Path | str:
    """A directory, or an archive's URL kept as written (a path would fold its ``//``)."""
    return text if "://" in text else Path(text)


NO_ROOT = "there is no storage root at"
"""How a command says the storage root directory it was given is not there."""


def open_root(config: Config, missing: str | None = NO_ROOT) -> Store:
    """The root a reading command reads: the archive ``--root`` names (with ``[archive]``'s
    endpoint, region and cache), or a directory, which must exist unless ``missing`` is None:
    a typo in --root must not read as an empty root (``missing`` starts the usage error)."""
    from asz.store import open_store

    if config.root_url:
        from asz.archive import open_archive

        store = open_store(open_archive(config.root_url, config.archive))
        try:  # an archive that cannot be listed is as absent as a missing directory
            listed = store.backend.list("")  # kept: the command's own listing costs nothing more
        except OSError as err:
            raise UsageError(f"cannot read the archive {config.root_url}: {err.strerror}") from None
        if not listed:  # a typo in the prefix lists nothing, as a typo in a path names nothing
            raise UsageError(f"nothing under {config.root_url}: is the prefix right?")
        return store
    return open_store(root_directory(config, missing))


def root_directory(config: Config, missing: str | None = NO_ROOT) -> Path:
    """The storage root directory, checked before any command reads or writes in it: a usage
    error when it names something that is not a directory (a file given by mistake must not
    end in a traceback, nor read as a missing root), and, unless ``missing`` is None, when
    nothing is there (``missing`` starts the message)."""
    root = config.root
    if root.exists() and not root.is_dir():
        raise UsageError(f"the storage root {root} is not a directory")
    if missing is not None and not root.is_dir():
        raise UsageError(f"{missing} {root}")
    return root


def local_root(config: Config, command: str) -> Path:
    """The directory a command that writes into a root works in (made when absent); a usage
    error when --root names an archive, which only ``asz push`` writes to, from a root, or
    something that is not a directory."""
    if config.root_url:
        raise UsageError(
            f"{command} works on a storage root directory, not on {config.root_url}; "
            "an archive is read with --root and written by asz push"
        )
    return root_directory(config, missing=None)


def add_zone(parser: argparse.ArgumentParser) -> None:
    """``--local``, read into ``args.local``: the zone the command shows its times in."""
    parser.add_argument(
        "--local",
        action="store_true",
        help="show times in this machine's zone, labelled local, instead of UTC, and read a "
        "--since time without a zone in it (docs/configuration.md)",
    )


def add_session(parser: argparse.ArgumentParser, *, optional: bool = False) -> None:
    """The SESSION argument every session-taking command reads the same way."""
    if optional:
        parser.add_argument("session", nargs="?", help=f"only this session: {SESSION_HELP}")
    else:
        parser.add_argument("session", help=SESSION_HELP)


def landed_session(config: Config, session: str) -> Session:
    """The landed session the text names (its id in any case, or a unique prefix), read
    through the store; a usage error (exit 2) when it cannot name one, names none, or starts
    several ids (the message names a few)."""
    from asz.store import AmbiguousId, NotASession, UnknownSession

    store = open_root(config, missing=None)  # an id that is not one is said first
    try:
        return store.find_session(session)
    except UnknownSession as err:
        if not config.root_url:  # when there is no root, that is what to say
            root_directory(config)
        raise UsageError(str(err)) from None
    except (NotASession, AmbiguousId) as err:
        raise UsageError(str(err)) from None


def parse_since(text: str, now: datetime | None = None, zone: Zone = IN_UTC) -> datetime:
    """The moment ``text`` names (see ``SINCE_HELP``), aware; ValueError when it names none.

    An age counts back from ``now`` (the current time when None); a date or a time that names
    no zone is in ``zone``, the one the listing shows its times in, so that a time copied
    from it picks what it showed.
    """
    wanted = text.strip()
    age = _AGE.fullmatch(wanted)
    if age is not None:
        count, unit = age.groups()
        try:
            return (now or datetime.now(UTC)) - timedelta(**{_AGE_UNITS[unit]: int(count)})
        except OverflowError:  # further back than any date: since the beginning
            return datetime.min.replace(tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(wanted)
    except ValueError:
        raise ValueError(f"{text!r} is not a date, an ISO time or an age ({SINCE_HELP})") from None
    return zone.read(moment)
