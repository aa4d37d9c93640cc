"""Readers beside a repack: a reader in the middle of a session while a repack publishes a new
generation and retires the files it counted reads the session again from the new generation,
once, and never reports a problem for it.

The reader and the repacks are real processes of their own (``support.reading``, ``asz
repack``); the session lands in many small files, so that retiring them takes long enough
for the reader to be caught half way many times over.
"""

from __future__ import annotations

import contextlib
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.harness import Capture, Workspace, apply_write, plan_writes, wait_for
from support.reading import read_whole, rounds
from support.repacking import landed_in_passes, repack, sessions

from asz.store import open_store

TESTS = Path(__file__).resolve().parents[1]


@contextlib.contextmanager
def reading(root: Path, session: str, out: Path) -> Iterator[None]:
    """A reader process reading ``session`` in a loop for as long as the block runs, and
    then until it read it whole twice more (``support.reading``)."""
    stop = out.with_suffix(".stop")
    stop.unlink(missing_ok=True)
    env = {**os.environ, "PYTHONPATH": str(TESTS)}
    args = [sys.executable, "-m", "support.reading", str(root), session, str(out), str(stop)]
    reader = subprocess.Popen(args, env=env, stderr=subprocess.PIPE)
    try:
        started = len(rounds(out)) + 1
        wait_for(lambda: len(rounds(out)) >= started, timeout=60, what="a first read")
        yield
        wanted = len(rounds(out)) + 2
        wait_for(lambda: len(rounds(out)) >= wanted, timeout=60, what="reads after it")
    finally:
        stop.touch()
        _, errors = reader.communicate(timeout=60)
    assert reader.returncode == 0, errors.decode()


@pytest.mark.slow
def test_a_reader_never_meets_a_problem_while_repacks_retire_what_it_counted(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path)
    capture = Capture.make(tmp_path / "capture", seed=11, sessions=1, turns=8)
    writes = plan_writes(capture.dir, random.Random(3))
    step = max(1, len(writes) // 24)  # about 8 passes a third: many small files
    batches = [writes[start : start + step] for start in range(0, len(writes), step)]
    third = len(batches) // 3
    out = tmp_path / "reads.jsonl"
    for part in (batches[:third], batches[third : 2 * third], batches[2 * third :]):
        for batch in part:
            for write in batch:
                apply_write(ws.claude, write)
            assert ws.collect_once()[0] == 0
        (session,) = sessions(ws)
        assert read_whole(ws.root, session) == []
        with reading(ws.root, session, out):
            said = repack(ws, session)
        assert said["sessions"][0]["state"] == "repacked"

    read = rounds(out)
    assert len(read) >= 9
    assert [r for r in read if r["problems"]] == []


def test_a_walk_of_body_parts_goes_on_from_the_new_generation(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=5, sessions=1, turns=3), 4)
    (session_id,) = sessions(ws)
    expected = list(open_store(ws.root).open_session(session_id).body_parts().walk())
    session = open_store(ws.root).open_session(session_id)
    parts = session.body_parts()
    walk = parts.walk()
    first = next(walk)

    assert repack(ws, session_id)["sessions"][0]["state"] == "repacked"
    walked = [first]
    for record_id, role in walk:
        walked.append((record_id, role))
        assert parts.span(record_id, 0, parts.size(record_id)) == session.body(record_id)

    assert walked == expected
    assert session.problems == []
