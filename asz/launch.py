"""The ``asz`` console script: ``asz statusline`` starts without the rest of the command line.

Claude Code runs its status line command after every message, so that command's start is
most of what it costs; the command table (:mod:`asz.commands`) loads every command and the
store, several times the start of Python itself. So ``asz statusline`` followed only by its
own options for showing the line goes straight to :func:`asz.statusline.command.fast_main`;
everything else, ``asz --root R statusline`` and ``asz statusline --install`` included, goes
through the table, which lists the same command.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    words = list(sys.argv[1:] if argv is None else argv)
    if words[:1] == ["statusline"]:
        from asz.statusline.command import fast_main

        done = fast_main(words[1:])
        if done is not None:
            return done
    from asz.commands import main as command_line

    return command_line(words)
