"""Repack: a session's many small landed files become few, and nothing any reader sees moves.

A capture is landed over many passes (a live session's many small files), then repacked with
the real ``asz repack``: every view document, cache report, body, transcript and index line is
the same before and after, ``asz verify`` stays clean, the collector lands on after it, and a
repack stopped at any of its crash points leaves a root whose readers see the old set or the
new set, whole.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.handmade import SESSION, HandMade, chain
from support.harness import Capture, Workspace, apply_write, check_root, plan_writes
from support.repacking import landed_in_passes, repack, sessions, without_refs
from support.service import FAST, running_service

from asz.crashpoints import ENV, EXIT_CODE, GENERATION_POINTS
from asz.store import MAIN_STREAM, open_store
from asz.store._generation import read_generation


def landed_files(ws: Workspace) -> int:
    return sum(1 for _ in ws.root.rglob("*.asz"))


def bodies_of(ws: Workspace, session_id: str) -> dict[str, bytes]:
    session = open_store(ws.root).session(session_id)
    return {record_id: session.body(record_id) for record_id in session.body_ids()}


def json_of(ws: Workspace, *args: str) -> Any:
    done = ws.run(*args, "--json")
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def everything(ws: Workspace) -> dict[str, Any]:
    """What every reader gives: each session's view document (but where each body landed)
    and cache report, every body's bytes, every transcript's bytes, every index line, and the
    root's cache ranking."""
    store = open_store(ws.root)
    seen: dict[str, Any] = {"ranking": json_of(ws, "cache")}
    for session_id in store.sessions():
        session = store.session(session_id)
        seen[session_id] = {
            "view": without_refs(json_of(ws, "view", session_id)),
            "cache": json_of(ws, "cache", session_id),
            "bodies": bodies_of(ws, session_id),
            "transcripts": {p: session.transcript(p) for p in session.transcript_paths()},
            "lines": [(t.source, t.line, t.data) for t in session.transcript_lines()],
            "index": [(line.offset, line.data) for line in session.index_lines()],
        }
        assert not session.problems
    return seen


@pytest.fixture(scope="module")
def landed_once(tmp_path_factory: pytest.TempPathFactory) -> tuple[Workspace, Capture]:
    """The capture landed over many passes once for the module; tests take a copy."""
    base = tmp_path_factory.mktemp("landed")
    ws = Workspace(base)
    capture = Capture.make(base / "capture", seed=3, sessions=2, turns=5)
    landed_in_passes(ws, capture)
    return ws, capture


@pytest.fixture
def landed(landed_once: tuple[Workspace, Capture], tmp_path: Path) -> tuple[Workspace, Capture]:
    """A copy of the landed workspace of the test's own (sources, root and HOME alike)."""
    ws, capture = landed_once
    shutil.copytree(ws.base, tmp_path / "ws", symlinks=True)
    copy = Capture(tmp_path / "ws" / capture.dir.relative_to(ws.base), capture.expected)
    return Workspace(tmp_path / "ws"), copy


@pytest.mark.slow
def test_every_reader_sees_the_same_before_and_after_a_repack(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, capture = landed
    before, files_before = everything(ws), landed_files(ws)

    said = repack(ws, *sessions(ws))

    assert {o["state"] for o in said["sessions"]} == {"repacked"}
    assert landed_files(ws) * 3 <= files_before
    assert sum(o["files_after"] for o in said["sessions"]) == landed_files(ws)
    assert everything(ws) == before
    code, report = ws.verify()
    assert code == 0 and not report["problems"]
    assert check_root(ws, capture) == []


@pytest.mark.slow
def test_the_collector_lands_on_after_a_repack_and_a_second_repack_takes_both(
    tmp_path: Path,
) -> None:
    ws = Workspace(tmp_path)
    capture = Capture.make(tmp_path / "capture", seed=4, sessions=1, turns=6)
    writes = plan_writes(capture.dir, random.Random(9))
    half = len(writes) // 2
    for start in range(0, half, max(1, half // 5)):
        for write in writes[start : min(half, start + max(1, half // 5))]:
            apply_write(ws.claude, write)
        assert ws.collect_once()[0] == 0
    repack(ws, *sessions(ws))
    for start in range(half, len(writes), max(1, half // 5)):
        for write in writes[start : start + max(1, half // 5)]:
            apply_write(ws.claude, write)
        assert ws.collect_once()[0] == 0
    before = everything(ws)

    said = repack(ws, *sessions(ws))

    assert [o["state"] for o in said["sessions"]] == ["repacked"]
    assert everything(ws) == before
    assert check_root(ws, capture) == []
    session = sessions(ws)[0]
    names = [p.name for p in (ws.root / session).iterdir()]
    assert sum(name.startswith("generation-") for name in names) == 1
    assert sum(name.startswith("g-") for name in names) == 1


def test_bodies_landed_in_small_files_are_repacked_into_one_per_session(tmp_path: Path) -> None:
    """Landing cuts files at ``max_delta_bytes``; a repack puts a quiet session's records in
    one stream (up to 32 MiB), which compresses a long session's bodies far better."""
    ws = Workspace(tmp_path)
    config = Path(ws.env()["HOME"]) / ".config" / "asz" / "asz.toml"
    config.parent.mkdir(parents=True)
    config.write_text("[adapters.claude_code_provider]\nmax_delta_bytes = 4096\n")
    Capture.make(ws.claude, seed=5, sessions=1, turns=6)
    assert ws.collect_once()[0] == 0
    session = sessions(ws)[0]
    before = bodies_of(ws, session)
    assert len(list((ws.root / session / "provider_body").glob("*.asz"))) > 1

    assert [o["state"] for o in repack(ws, session)["sessions"]] == ["repacked"]

    assert len(list((ws.root / session).glob("g-*/provider_body/*.asz"))) == 1
    assert bodies_of(ws, session) == before
    assert ws.verify()[0] == 0


def test_a_dry_run_says_what_it_would_do_and_writes_nothing(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, _capture = landed
    files = sorted(str(p) for p in ws.root.rglob("*.asz"))

    said = repack(ws, "--dry-run", *sessions(ws))

    assert {o["state"] for o in said["sessions"]} == {"planned"}
    assert all(o["files_after"] < o["files_before"] for o in said["sessions"])
    assert sorted(str(p) for p in ws.root.rglob("*.asz")) == files


def test_a_damaged_session_is_repacked_not_at_all_and_says_so(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, _capture = landed
    damaged, whole = sessions(ws)
    victim = sorted((ws.root / damaged / "provider_body").glob("*.asz"))[-1]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0xFF
    victim.write_bytes(bytes(data))
    files = sorted(str(p) for p in (ws.root / damaged).rglob("*.asz"))

    done = ws.run("repack", "--json", damaged, whole)

    assert done.returncode == 1
    states = {o["session"]: o for o in orjson.loads(done.stdout)["sessions"]}
    assert states[damaged]["state"] == "damaged" and victim.name in states[damaged]["why"]
    assert states[whole]["state"] == "repacked"
    assert sorted(str(p) for p in (ws.root / damaged).rglob("*.asz")) == files
    assert not any(p.name.startswith(("g-", "generation-")) for p in (ws.root / damaged).iterdir())


def test_without_a_session_only_quiet_sessions_are_repacked(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, _capture = landed
    config = ws.base / "asz.toml"
    config.write_text("[service]\nrepack_after = 3600\n")

    assert repack(ws, "--config", str(config))["sessions"] == []

    config.write_text("[service]\nrepack_after = 0\n")
    said = repack(ws, "--config", str(config))
    assert {o["state"] for o in said["sessions"]} == {"repacked"}


@pytest.mark.slow
@pytest.mark.parametrize("point", GENERATION_POINTS)
def test_a_repack_stopped_at_each_crash_point_leaves_one_whole_set(
    landed: tuple[Workspace, Capture], point: str
) -> None:
    ws, capture = landed
    before = everything(ws)
    session = sessions(ws)[0]

    nth = 1 if point == "generation.manifest" else 2
    crashed = ws.run("repack", session, extra_env={ENV: f"{point}:{nth}"})

    assert crashed.returncode == EXIT_CODE, crashed.stderr.decode()
    counted = read_generation(open_store(ws.root).backend, session)[0]
    assert (counted is not None) == (point in ("generation.manifest", "generation.retired"))
    assert everything(ws) == before
    code, report = ws.verify()
    assert code == 0 and not report["problems"]
    assert ws.collect_once()[0] == 0
    assert check_root(ws, capture) == []

    again = repack(ws, session)
    assert again["sessions"][0]["state"] in ("repacked", "packed")
    assert everything(ws) == before
    names = [p.name for p in (ws.root / session).iterdir()]
    assert sum(name.startswith("g-") for name in names) == 1
    stale = [p for p in (ws.root / session).rglob("*.asz") if p.parent.name == "provider_body"]
    assert all("/g-" in str(p) for p in stale)


def test_a_stale_generation_directory_without_its_manifest_is_never_read(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, _capture = landed
    session = sessions(ws)[0]
    before = everything(ws)
    stale = ws.root / session / "g-99999999" / "provider_body"
    shutil.copytree(ws.root / session / "provider_body", stale)

    assert everything(ws) == before
    assert not ws.verify()[1]["problems"]


@pytest.mark.slow
def test_the_service_repacks_quiet_sessions_in_the_background(
    landed: tuple[Workspace, Capture],
) -> None:
    ws, capture = landed
    before = everything(ws)
    config = ws.base / "asz.toml"
    config.write_text("[service]\nrepack_after = 0.01\n")

    with running_service(ws.base, ws.claude, ws.root, *FAST, "--config", str(config)) as svc:
        done = [svc.wait_for_log("repacked", count) for count in (1, 2)]
        assert svc.stop() == 0

    assert {line["session"] for line in done} == set(sessions(ws))
    assert all(line["files_after"] < line["files_before"] for line in done)
    assert everything(ws) == before
    assert check_root(ws, capture) == []


def test_a_session_with_an_empty_transcript_source_is_repacked(tmp_path: Path, run_asz) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    made.streams["a0e1b2c"] = []  # Claude Code leaves empty agent files: one empty window
    store = made.land()
    session = store.open_session(SESSION)
    before = {path: session.transcript(path) for path in session.transcript_paths()}
    assert b"" in before.values()

    done = run_asz("repack", "--json", SESSION, "--root", str(tmp_path / "root"))

    assert done.returncode == 0, done.stderr.decode()
    assert orjson.loads(done.stdout)["sessions"][0]["state"] == "repacked"
    again = open_store(tmp_path / "root").open_session(SESSION)
    assert {path: again.transcript(path) for path in again.transcript_paths()} == before
    assert not again.problems
