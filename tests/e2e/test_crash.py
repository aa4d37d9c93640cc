"""Crash consistency: a collector killed at any moment loses nothing and lands nothing twice.

Two kinds of crash. A named crash point (``ASZ_CRASH_AT``) ends the real ``asz`` process in one
of the narrow gaps of the landing path (written but not published, published but not in the
ledger, in the ledger but the cursor not saved), which random kills would rarely hit. Random
SIGKILLs, while a synthesised capture is written into the Claude Code directory the way Claude
Code writes it, cover everything else, in the service and in ``collect --once`` loops. After
the crashes a clean pass runs, and :func:`harness.check_root` must find nothing wrong.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import pytest
from support.harness import (
    Capture,
    CrashPlan,
    Workspace,
    apply_write,
    check_root,
    crash_run,
    plan_writes,
    settle,
)

from asz.crashpoints import ENV, EXIT_CODE, GENERATION_POINTS, POINTS
from asz.store import BODY_KIND, open_store
from asz.store._layout import landed_name


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def capture(tmp_path: Path, seed: int = 1) -> Capture:
    return Capture.make(tmp_path / "capture", seed=seed, sessions=2, turns=3)


@pytest.mark.slow
@pytest.mark.parametrize("point", POINTS)
def test_a_crash_at_each_named_point_loses_nothing_and_lands_nothing_twice(
    ws: Workspace, tmp_path: Path, point: str
) -> None:
    made = capture(tmp_path)
    writes = plan_writes(made.dir, random.Random(7))
    half = len(writes) // 2
    for write in writes[:half]:
        apply_write(ws.claude, write)
    assert ws.collect_once()[0] == 0
    for write in writes[half:]:
        apply_write(ws.claude, write)

    crashed = ws.run("collect", "--once", extra_env={ENV: point})

    assert crashed.returncode == EXIT_CODE, f"{point} was never reached: {crashed.stderr}"
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


@pytest.mark.slow
def test_a_crash_at_the_third_pass_of_a_point_in_one_pass(ws: Workspace, tmp_path: Path) -> None:
    """A crash after some windows of a pass landed and before others did."""
    made = capture(tmp_path, seed=2)
    for write in plan_writes(made.dir, random.Random(3)):
        apply_write(ws.claude, write)

    crashed = ws.run("collect", "--once", extra_env={ENV: "transcript.published:3"})

    assert crashed.returncode == EXIT_CODE
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


@pytest.mark.slow
def test_the_service_killed_at_random_moments_loses_nothing(ws: Workspace, tmp_path: Path) -> None:
    made = capture(tmp_path, seed=3)
    report = crash_run(ws, made, CrashPlan(kills=36, service=True, seed=11), tmp_path / "log")

    assert report.kills >= 36
    assert report.problems == []


@pytest.mark.slow
def test_collect_once_loops_killed_at_random_moments_lose_nothing(
    ws: Workspace, tmp_path: Path
) -> None:
    made = capture(tmp_path, seed=4)
    plan = CrashPlan(kills=16, service=False, seed=12, life=(0.0, 0.45))
    report = crash_run(ws, made, plan, tmp_path / "log")

    assert report.kills >= 16
    assert report.problems == []


@pytest.mark.slow
def test_the_check_finds_a_lost_body_and_a_body_landed_twice(ws: Workspace, tmp_path: Path) -> None:
    """The check above is only worth something if it can fail."""
    made = capture(tmp_path, seed=5)
    shutil.copytree(made.dir, ws.claude, ignore=shutil.ignore_patterns("expected.json"))
    assert ws.collect_once()[0] == 0
    assert check_root(ws, made) == []
    store = open_store(ws.root)
    session = made.claimable()[0]["session"]
    first_name, *_ = store.session(session).landed(BODY_KIND)
    first = Path(store.location) / first_name.path
    again = first.with_name(landed_name(first_name.kind, 99_999_999))
    shutil.copyfile(first, again)

    twice = check_root(ws, made)

    assert any("landed 2 times" in problem for problem in twice)
    first.unlink()
    again.unlink()

    lost = check_root(ws, made)

    assert any("was lost" in problem for problem in lost)
    assert any("asz verify exited 1" in problem for problem in lost) or any(
        "ledger says" in problem for problem in lost
    )


@pytest.mark.slow
def test_repacks_killed_beside_a_collector_lose_nothing_and_count_nothing_twice(
    ws: Workspace, tmp_path: Path
) -> None:
    made = Capture.make(tmp_path / "capture", seed=5, sessions=2, turns=4)
    plan = CrashPlan(kills=12, service=True, seed=13, repack=True, point_share=0.5)

    report = crash_run(ws, made, plan, tmp_path / "log")

    assert (
        report.repack_kills + report.repacks + sum(report.points[p] for p in GENERATION_POINTS)
        >= 12
    )
    assert report.problems == []
