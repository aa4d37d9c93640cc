"""Checks on the arguments several commands share, so each command refuses the same input alike.

A session id becomes a directory name under the root, so one that is not in Claude Code's
form is refused before anything is opened.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asz.commands.exits import UsageError

if TYPE_CHECKING:
    from asz.config import Config
    from asz.store import Session


def session_arg(session: str) -> str:
    """The session id given, when it is in Claude Code's form; else a usage error."""
    from asz.bodykeys import is_session_id

    if not is_session_id(session):
        raise UsageError(f"{session!r} is not a Claude Code session id")
    return session


def landed_session(config: Config, session: str) -> Session:
    """The landed session the id names, read through the store; a usage error (exit 2) when
    the id is not one or the root holds no such session."""
    from asz.store import UnknownSession, open_store

    try:
        return open_store(config.root).session(session_arg(session))
    except UnknownSession as err:
        raise UsageError(str(err)) from None
