"""The exit codes every ``asz`` command shares, defined once so no part can drift.

0 when the command did all it was asked, 1 when it did not (a pass with a conflict or an
error, a verify problem, a body that does not rebuild), 2 on a usage error (bad arguments, an
unusable config file, a session id that is not one or names no landed session).
"""

from __future__ import annotations

__all__ = ["EXIT_FAILED", "EXIT_OK", "EXIT_USAGE", "UsageError"]

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2


class UsageError(Exception):
    """Wrong input from the person at the keyboard (exit 2)."""
