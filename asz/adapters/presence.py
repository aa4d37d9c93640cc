"""Whether the directories asz reads are there, and what to say when none is.

Claude Code makes its directories when it first runs, and the bodies directory only when told
to write bodies, so a missing directory is not an error in itself: the service watches for it.
But a one-shot ``asz collect --once`` that finds none of them has been pointed at the wrong
place (a typo in ``CLAUDE_CONFIG_DIR``, a machine where Claude Code never ran), and a pass that
lands nothing and exits 0 would hide that.
"""

from __future__ import annotations

from pathlib import Path

from asz.config import Config

__all__ = ["absent_dirs", "nothing_there"]


def absent_dirs(config: Config) -> list[Path]:
    """The source directories of the enabled adapters that are not there, in order."""
    return [directory for directory in config.source_dirs if not directory.is_dir()]


def nothing_there(config: Config) -> str | None:
    """What to say when no source directory exists (None when one does).

    When every one of them would be below a Claude Code directory that is itself absent, the
    Claude Code directories are what is named: that is where the mistake is.
    """
    absent = absent_dirs(config)
    if not absent or len(absent) < len(config.source_dirs):
        return None
    claude = config.claude_dirs
    below_claude = all(any(d.is_relative_to(c) for c in claude) for d in absent)
    if below_claude and not any(directory.is_dir() for directory in claude):
        return (
            "nothing to collect: no Claude Code directory exists: "
            + ", ".join(map(str, claude))
            + " (set CLAUDE_CONFIG_DIR, or claude_dir in the config file, to where Claude "
            "Code keeps its projects/)"
        )
    return "nothing to collect: none of these directories exists: " + ", ".join(map(str, absent))
