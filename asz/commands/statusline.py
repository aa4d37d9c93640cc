"""``asz statusline``: Claude Code's status line. It lives in :mod:`asz.statusline`, where the
console script starts it without this table (:mod:`asz.launch`); here it is listed with the
other commands and takes the options they all take."""

from asz.statusline.command import SUMMARY, add_arguments, run

__all__ = ["SUMMARY", "add_arguments", "run"]
