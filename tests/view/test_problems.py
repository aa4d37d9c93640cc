"""Reading commands own up to what they could not read: each problem on stderr, and exit 1.

``asz cache`` and ``asz restore`` are checked beside their reports (test_cache_report.py,
test_restore.py); this file holds ``asz body``, whose damaged root used to look like a body
that is simply not there.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import RunAsz
from support.landing import land_claude

from asz.store import BODY_KIND, open_store
from asz.synth import SynthOptions, synthesize


@pytest.mark.slow
def test_a_body_in_a_damaged_file_fails_rather_than_is_not_found(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=3, sessions=1))
    root = Path(land_claude(tmp_path, run_asz, claude).location)
    body = next(body for body in expected["bodies"] if body["claim"] is not None)
    session, record_id = body["session"], body["id"]
    done = run_asz("body", "--root", str(root), session, record_id)
    assert done.returncode == 0 and done.stderr == b""
    assert done.stdout == (claude / body["file"]).read_bytes()
    assert run_asz("body", "--root", str(root), session, "x.request").returncode == 2

    store = open_store(root)
    for name in store.session(session).landed(BODY_KIND):
        path = Path(store.location) / name.path
        path.write_bytes(path.read_bytes()[:-9])
    for wanted in (record_id, "x.request"):
        done = run_asz("body", "--root", str(root), session, wanted)
        assert done.returncode == 1 and done.stdout == b""
        assert b"is not whole" in done.stderr and str(path).encode() in done.stderr
