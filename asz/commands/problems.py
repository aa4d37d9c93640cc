"""How a reading command owns up to what it could not read: the problems on stderr, and exit 1.

A reading command (``view``, ``cache``, ``body``, ``restore``, ``verify``) reads on past a
damaged landed file and reports what did read. What it met must then show where a person
looks, not only inside ``--json``, and must fail the command, or a damaged root looks clean.
Each problem is one line on stderr, said once; past ``SHOWN`` of them one line counts the
rest, since a badly damaged root can hold thousands.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

from asz.exits import EXIT_FAILED, EXIT_OK
from asz.words import count

__all__ = ["SHOWN", "report_problems"]

SHOWN = 20


def report_problems(problems: Iterable[object], *, all_in: str | None = None) -> int:
    """Says every problem met on stderr and gives the exit code they make: EXIT_FAILED when
    there was any, EXIT_OK when none. ``all_in`` names where the ones not shown are listed
    (``"--json"``), for a command that has such a place."""
    said = list(dict.fromkeys(str(problem) for problem in problems))
    for problem in said[:SHOWN]:
        print(f"asz: problem: {problem}", file=sys.stderr)
    if len(said) > SHOWN:
        where = f"; {all_in} lists them all" if all_in else ""
        more = count(len(said) - SHOWN, "more problem")
        print(f"asz: {more} not shown, {len(said)} in all{where}", file=sys.stderr)
    return EXIT_FAILED if said else EXIT_OK
