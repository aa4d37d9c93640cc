"""The status line that was there before asz's, shown before it (``--with COMMAND``).

Claude Code runs one status line command; ``asz statusline --install`` keeps the one the user
had by having asz run it, through the shell as Claude Code would, with the same JSON on
stdin, and show its first line before asz's. What it prints is the user's own, so it is
shown as it comes (colours included). A command that fails, says nothing, or takes longer
than :data:`TIMEOUT` seconds shows nothing, and asz's line stands alone.
"""

from __future__ import annotations

import subprocess

__all__ = ["TIMEOUT", "first_line"]

TIMEOUT = 5.0


def first_line(command: str, stdin: bytes) -> str:
    """The first line ``command`` prints given ``stdin``; empty when it prints none."""
    try:
        done = subprocess.run(
            ["/bin/sh", "-c", command],
            input=stdin,
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return ""
    lines = done.stdout.decode("utf-8", "replace").splitlines()
    return lines[0] if lines else ""
