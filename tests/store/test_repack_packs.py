"""Transcript packs: a repack lands a session's transcript streams together, one zstd stream
for a main transcript and its subagents, so that the real samples land at 8% of their bytes or
less; every reader sees the same lines, and a generation written one stream a file, as repacks
wrote them before packs, still reads."""

from __future__ import annotations

import random
import shutil
from pathlib import Path

import orjson
import pytest
from support.handmade import SESSION, HandMade, chain
from support.harness import Workspace, apply_write, plan_writes
from support.repacking import repack, sessions

from asz.store import (
    MAIN_STREAM,
    PACK_STREAMS,
    TRANSCRIPT_KIND,
    LandedFile,
    LandedFileError,
    LandedRecord,
    PreparedFile,
    Session,
    open_store,
    publish_generation,
    stream_key,
    windows_of,
)

GOAL = 0.08
"""Landed transcripts after a repack, as a share of their bytes on the real samples."""


def readings(session: Session) -> dict[str, object]:
    return {
        "transcripts": {path: session.transcript(path) for path in session.transcript_paths()},
        "lines": [(t.source, t.line, t.offset, t.data) for t in session.transcript_lines()],
        "facts": session.facts(),
    }


def transcript_bytes(root: Path) -> int:
    return sum(p.stat().st_size for p in root.rglob("transcript-*.asz"))


@pytest.mark.slow
def test_the_real_samples_repacked_land_at_most_8_percent_of_their_bytes(
    tmp_path: Path, samples: Path
) -> None:
    made = tmp_path / "made"
    for version in sorted(p for p in (samples / "transcripts").iterdir() if p.is_dir()):
        shutil.copytree(version, made / "projects", dirs_exist_ok=True)
    source = sum(p.stat().st_size for p in (made / "projects").rglob("*.jsonl"))
    ws = Workspace(tmp_path / "ws")
    for n, write in enumerate(plan_writes(made, random.Random(2))):
        apply_write(ws.claude, write)
        if n % 200 == 199:
            assert ws.collect_once()[0] == 0
    assert ws.collect_once()[0] == 0
    store = open_store(ws.root)
    before = {s: readings(store.open_session(s)) for s in store.sessions()}

    said = repack(ws, *sessions(ws))

    assert {o["state"] for o in said["sessions"]} <= {"repacked", "packed"}
    assert transcript_bytes(ws.root) <= GOAL * source
    store = open_store(ws.root)
    for session_id in store.sessions():
        session = store.open_session(session_id)
        assert readings(session) == before[session_id]
        assert not session.problems
        streams = session.stream_dirs()
        files = {name.path for name in session.landed(TRANSCRIPT_KIND)}
        if session.generation() is not None:
            assert len(files) == 1 < len(streams) or len(streams) == 1
    code, report = ws.verify()
    assert code == 0 and not report["problems"]


def three_streams(tmp_path: Path) -> HandMade:
    """A main stream, two subagents' (one empty), each landed over several passes."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    made.prompt("a1b2c3d", "p2")
    chain(made, "a1b2c3d", "p2", [("msg_3", "req_3")])
    made.streams["a0e1b2c"] = []
    return made


def test_a_repacked_session_holds_its_streams_in_one_pack(tmp_path: Path, run_asz) -> None:
    made = three_streams(tmp_path)
    store = made.land()
    before = readings(store.open_session(SESSION))

    done = run_asz("repack", "--json", SESSION, "--root", str(tmp_path / "root"))

    assert done.returncode == 0, done.stderr.decode()
    assert orjson.loads(done.stdout)["sessions"][0]["state"] == "repacked"
    session = open_store(tmp_path / "root").open_session(SESSION)
    assert readings(session) == before
    [pack] = session.landed(TRANSCRIPT_KIND)
    landed = session.read(pack)
    keys = [item["key"] for item in landed.header[PACK_STREAMS]]
    assert sorted(keys) == [d.rsplit("/", 1)[-1] for d in session.stream_dirs()]
    generation = session.generation()
    assert generation is not None and generation.streams == {pack.path: tuple(keys)}
    assert not session.problems


def test_a_generation_of_one_stream_a_file_still_reads(tmp_path: Path) -> None:
    made = three_streams(tmp_path)
    store = made.land()
    old = store.open_session(SESSION)
    before = readings(old)
    files = [
        PreparedFile(
            TRANSCRIPT_KIND,
            directory,
            {k: landed.header[k] for k in ("source", "stream", "shape")},
            [(record.meta, record.payload) for record in landed.records],
        )
        for directory in old.stream_dirs()
        for _name, landed in old.files(old.landed_in(directory))
    ]
    highest = old.landed()[-1].seq

    generation, _retired = publish_generation(
        store.backend, SESSION, highest, files, origin=old.origin(), compression="zstd"
    )

    assert generation.streams == {}
    session = open_store(tmp_path / "root").open_session(SESSION)
    assert session.generation() == generation
    readings_after = readings(session)
    assert readings_after["transcripts"] == before["transcripts"]
    assert sorted(readings_after["lines"]) == sorted(before["lines"])  # type: ignore[arg-type]
    assert not session.problems


ENTRY = {"key": "s-d0f1e2a3b4c5d6e7", "source": "p/a.jsonl", "stream": "main", "shape": "append"}
PACK = {"kind": TRANSCRIPT_KIND, "session": SESSION, "seq": 1, PACK_STREAMS: [ENTRY]}


def pack(header: dict[str, object], meta: dict[str, object]) -> LandedFile:
    full = {"off": 0, "line": 1, "lines": 1, "sha256": "0" * 64} | meta
    return LandedFile("x", header, [LandedRecord(1, full, b"{}\n")])


@pytest.mark.parametrize(
    ("header", "meta"),
    [
        (PACK, {"s": 1}),
        (PACK, {"s": "0"}),
        ({**PACK, PACK_STREAMS: []}, {}),
        ({**PACK, PACK_STREAMS: ["p/a.jsonl"]}, {}),
        ({**PACK, PACK_STREAMS: [{**ENTRY, "key": "../x"}]}, {}),
        ({**PACK, PACK_STREAMS: [{**ENTRY, "key": "s-0000000000000000"}]}, {}),
        ({**PACK, PACK_STREAMS: [{**ENTRY, "shape": "x"}]}, {}),
    ],
)
def test_a_pack_that_does_not_hold_is_refused(
    header: dict[str, object], meta: dict[str, object]
) -> None:
    with pytest.raises(LandedFileError):
        windows_of(pack(header, meta), SESSION)


def test_a_pack_names_each_window_of_its_stream() -> None:
    key = stream_key("p/a.jsonl")
    header = {**PACK, PACK_STREAMS: [{**ENTRY, "key": key}]}

    [window] = windows_of(pack(header, {"s": 0}), SESSION)

    assert (window.source, window.key, window.snapshot) == ("p/a.jsonl", key, False)
