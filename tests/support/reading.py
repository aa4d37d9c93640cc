"""A reader of one landed session in a loop, as a process of its own: what a person's
``asz`` command or the web view does while the service repacks the session beside it.

    python -m support.reading ROOT SESSION OUT STOP

Each time round it opens the session afresh and reads all of it through the store's readers
(``asz verify`` of it, every body, transcript, line and index line, its facts and summary,
every body's parts as the view's comparisons walk them),
then appends a JSON line to ``OUT``: the round's number and every problem or failure it
met. It stops once the file ``STOP`` exists.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from asz.store import open_store

__all__ = ["read_whole", "rounds"]


def read_whole(root: Path, session_id: str) -> list[str]:
    """Reads all of one session; every problem it meets, and any failure."""
    store = open_store(root)
    session = store.open_session(session_id)
    try:
        checked = [str(problem) for problem in store.verify([session_id]).problems]
        for record_id in session.body_ids():
            session.body(record_id)
        for path in session.transcript_paths():
            session.transcript(path)
        sum(1 for _ in session.transcript_lines())
        session.index_lines()
        session.facts()
        session.summary()
        parts = session.body_parts()
        for record_id, _role in parts.walk():
            parts.span(record_id, 0, parts.size(record_id))
    except Exception as err:  # every failure is what the reader reports
        return [*map(str, session.problems), f"{type(err).__name__}: {err}"]
    return checked + [str(problem) for problem in session.problems]


def rounds(out: Path) -> list[dict[str, object]]:
    """The rounds a reader has written to ``out`` so far."""
    data = out.read_bytes() if out.exists() else b""
    return [orjson.loads(line) for line in data[: data.rfind(b"\n") + 1].splitlines()]


def main(root: str, session_id: str, out: str, stop: str) -> None:
    number = 0
    with open(out, "ab", buffering=0) as said:
        while not Path(stop).exists():
            problems = read_whole(Path(root), session_id)
            number += 1
            said.write(orjson.dumps({"round": number, "problems": problems}) + b"\n")


if __name__ == "__main__":
    main(*sys.argv[1:5])
