"""``asz statusline``: Claude Code's status line."""
