"""The transcript adapter end to end: real transcripts in a temporary projects dir, real root."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import re
import shutil
import stat
import struct
from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.paths import SHARED_SAMPLES

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.source_files import FileStat
from asz.adapters.transcript_cursors import SOURCE_GONE, Cursor, cursor_path, load_cursor
from asz.atomic import replace_derived
from asz.config import AdapterConfig, Adapters, Config, SessionFilter
from asz.store import CallFact, LandedName, LandedWindow, Session, Store, open_store
from asz.store._layout import stream_dir as stream_dir_of
from asz.store._layout import transcripts_dir
from asz.store._root import Root, collector_lock
from asz.store._session_facts import FactsBuilder, facts_path
from asz.tally import Tally

SESSION = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-8888-4777-8666-555555555555"
THIRD = "aaaaaaaa-bbbb-4ccc-8ddd-eeeeeeeeeeee"
PROJECT = "-work-project"
SAMPLES = Path(os.environ.get("ASZ_SAMPLES") or SHARED_SAMPLES)


def make_config(tmp_path: Path, budget: int = 64 * 1024, compression: str = "zstd") -> Config:
    projects = tmp_path / "claude" / "projects"
    projects.mkdir(parents=True, exist_ok=True)
    return Config(
        root=tmp_path / "root",
        claude_dirs=(tmp_path / "claude",),
        compression=compression,
        sessions=SessionFilter(),
        adapters=Adapters(claude_code_local=AdapterConfig(max_delta_bytes=budget)),
    )


def open_root(config: Config) -> Store:
    return open_store(config.root, compression=config.compression)


def session_of(config: Config, session: str = SESSION) -> Session:
    """A landed session of the config's root, read afresh."""
    return open_root(config).session(session)


def run(config: Config) -> Tally:
    with collector_lock(Root(config.root)):
        return collect_transcripts(config, open_root(config))


def transcript(config: Config, session: str = SESSION, project: str = PROJECT) -> Path:
    path = config.projects_dir / project / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    return path


def jline(session: str = SESSION, **fields: object) -> bytes:
    return orjson.dumps({"type": "user", "sessionId": session, "cwd": "/work/project", **fields})


def append(path: Path, data: bytes) -> None:
    with path.open("ab") as handle:
        handle.write(data)


def landed_bytes(config: Config, session: str = SESSION) -> bytes:
    """Every landed line of the session (none before anything of it landed)."""
    lines = open_root(config).open_session(session).transcript_lines()
    return b"".join(line.data for line in lines)


def stream_dir(config: Config, relpath: str, session: str = SESSION) -> str:
    """The stream directory of a source, relative to the root."""
    return stream_dir_of(session, relpath)


def absolute(config: Config, relpath: str) -> Path:
    return Path(open_root(config).location) / relpath


def cursor_of(config: Config, directory: str, session: str = SESSION) -> Cursor | None:
    return load_cursor(open_root(config).open_session(session), directory)


def landed_in(config: Config, directory: str, session: str = SESSION) -> list[LandedName]:
    return session_of(config, session).landed_in(directory)


def test_append_lands_only_the_new_lines(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    first = b"".join(jline(n=n) + b"\n" for n in range(3))
    path.write_bytes(first)
    result = run(config)
    assert (result.transcript_files, result.transcript_lines_landed, result.source_bytes) == (
        1,
        3,
        len(first),
    )
    assert result.sessions == {SESSION}
    assert not result.conflict_sources and not result.errors and not result.pending

    more = jline(n=3) + b"\n" + jline(n=4) + b"\n"
    append(path, more)
    second = run(config)
    assert (second.transcript_files, second.transcript_lines_landed, second.source_bytes) == (
        1,
        2,
        len(more),
    )
    assert run(config).transcript_files == 0

    lines = list(session_of(config).transcript_lines())
    assert [line.line for line in lines] == [1, 2, 3, 4, 5]
    assert [line.offset for line in lines] == [
        0,
        *(sum(len(x.data) for x in lines[:i]) for i in range(1, 5)),
    ]
    assert b"".join(line.data for line in lines) == path.read_bytes()
    assert {line.stream for line in lines} == {"main"}
    assert {line.source for line in lines} == {f"{PROJECT}/{SESSION}.jsonl"}


def test_a_half_written_line_waits_until_it_is_complete(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    done = jline(n=1) + b"\n"
    partial = jline(n=2)
    path.write_bytes(done + partial[:10])
    assert run(config).transcript_lines_landed == 1
    assert landed_bytes(config) == done
    assert run(config).transcript_files == 0
    append(path, partial[10:])
    assert run(config).transcript_lines_landed == 0
    append(path, b"\n")
    result = run(config)
    assert (result.transcript_lines_landed, result.source_bytes) == (1, len(partial) + 1)
    assert landed_bytes(config) == path.read_bytes()


def test_a_truncated_transcript_is_a_conflict_on_every_pass(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    original = b"".join(jline(n=n) + b"\n" for n in range(4))
    path.write_bytes(original)
    run(config)
    path.write_bytes(original[:20])
    for _ in range(2):
        result = run(config)
        assert len(result.conflict_sources) == 1
        assert result.conflict_sources[0].startswith(f"{PROJECT}/{SESSION}.jsonl: truncated")
    append(path, b"x" * 500 + b"\n")
    result = run(config)
    assert len(result.conflict_sources) == 1 and result.transcript_files == 0
    assert landed_bytes(config) == original

    # The landed bytes put back (and a new line after them) end the conflict.
    path.write_bytes(original + jline(n=9) + b"\n")
    result = run(config)
    assert not result.conflict_sources and result.transcript_lines_landed == 1
    assert landed_bytes(config) == path.read_bytes()


def test_a_rewritten_transcript_is_a_conflict_on_every_pass(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    original = b"".join(jline(n=n) + b"\n" for n in range(4))
    path.write_bytes(original)
    run(config)
    rewritten = original.replace(b'"n":1', b'"n":7')
    assert len(rewritten) == len(original)
    path.write_bytes(rewritten)
    os.utime(path, ns=(1, 1))
    for _ in range(3):
        result = run(config)
        assert [c.split(":")[1].strip() for c in result.conflict_sources] == ["rewritten"]
        assert result.transcript_files == 0
    append(path, jline(n=5) + b"\n")
    assert run(config).conflict_sources and landed_bytes(config) == original


def test_the_same_bytes_under_a_new_inode_are_the_same_transcript(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline(n=1) + b"\n")
    run(config)
    copy = path.with_name("copy.tmp")
    shutil.copyfile(path, copy)
    append(copy, jline(n=2) + b"\n")
    os.replace(copy, path)
    result = run(config)
    assert not result.conflict_sources and result.transcript_lines_landed == 1
    assert landed_bytes(config) == path.read_bytes()


def test_a_deleted_transcript_keeps_what_landed_and_resumes_when_it_returns(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    original = jline(n=1) + b"\n" + jline(n=2) + b"\n"
    path.write_bytes(original)
    run(config)
    path.unlink()
    result = run(config)
    assert not result.conflict_sources and not result.errors and result.transcript_files == 0
    cursor = cursor_of(config, stream_dir(config, f"{PROJECT}/{SESSION}.jsonl"))
    assert cursor is not None and cursor.state == SOURCE_GONE
    assert landed_bytes(config) == original
    assert session_of(config).facts().primary_dir == PROJECT

    path.write_bytes(original + jline(n=3) + b"\n")
    result = run(config)
    assert not result.conflict_sources and result.transcript_lines_landed == 1
    cursor = cursor_of(config, stream_dir(config, f"{PROJECT}/{SESSION}.jsonl"))
    assert cursor is not None and cursor.state == "active"
    assert landed_bytes(config) == path.read_bytes()


def test_a_whole_session_pruned_is_marked_gone(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline() + b"\n")
    run(config)
    shutil.rmtree(path.parent)
    assert run(config).transcript_files == 0
    cursor = cursor_of(config, stream_dir(config, f"{PROJECT}/{SESSION}.jsonl"))
    assert cursor is not None and cursor.state == SOURCE_GONE


def test_a_crash_before_the_cursor_moved_lands_no_line_twice(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline(promptId="p1") + b"\n")
    run(config)
    directory = stream_dir(config, f"{PROJECT}/{SESSION}.jsonl")
    before = absolute(config, cursor_path(directory)).read_bytes()
    append(path, assistant_line("msg_A", "req_A") + b"\n" + jline(n=3) + b"\n")
    assert run(config).transcript_files == 1

    # The cursor file as it was before the second window landed: rebuilt, nothing re-lands.
    replace_derived(absolute(config, cursor_path(directory)), before)
    assert run(config).transcript_files == 0

    # A cursor changed to claim it covers the newest file is not whole as it was written:
    # it is rebuilt too, and the second window does not land again.
    newest = landed_in(config, directory)[-1].seq
    stale = re.sub(rb'"last_seq":\d+', b'"last_seq":%d' % newest, before)
    assert stale != before
    replace_derived(absolute(config, cursor_path(directory)), stale)
    assert run(config).transcript_files == 0
    assert len(landed_in(config, directory)) == 2

    lines = list(session_of(config).transcript_lines())
    assert [line.line for line in lines] == [1, 2, 3]
    assert b"".join(line.data for line in lines) == path.read_bytes()
    facts = session_of(config).facts()
    assert facts.calls == {"msg_A": CallFact("msg_A", "req_A", "main", "p1")}
    report = open_root(config).verify()
    assert not report.problems and report.transcript_lines == 3
    absolute(config, facts_path(SESSION)).unlink()
    assert session_of(config).facts() == facts


def test_a_lost_cursor_is_rebuilt_from_the_landed_files(tmp_path: Path) -> None:
    config = make_config(tmp_path, budget=4096)
    path = transcript(config)
    path.write_bytes(b"".join(jline(n=n, pad="x" * 300) + b"\n" for n in range(40)))
    run(config)
    directory = stream_dir(config, f"{PROJECT}/{SESSION}.jsonl")
    kept = cursor_of(config, directory)
    absolute(config, cursor_path(directory)).unlink()
    append(path, jline(n=99) + b"\n")
    result = run(config)
    assert (result.transcript_files, result.transcript_lines_landed) == (1, 1)
    rebuilt = cursor_of(config, directory)
    assert kept is not None and rebuilt is not None
    assert rebuilt.tail_sha256 != kept.tail_sha256 and rebuilt.line == kept.line + 1
    assert landed_bytes(config) == path.read_bytes()


def test_an_empty_source_lands_once_and_goes_on_from_offset_0(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    main = transcript(config)
    main.write_bytes(b"")
    agents = main.parent / SESSION / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a1.jsonl").write_bytes(b"")
    (agents / "agent-a1.meta.json").write_bytes(b"")
    relpaths = [
        f"{PROJECT}/{SESSION}.jsonl",
        f"{PROJECT}/{SESSION}/subagents/agent-a1.jsonl",
        f"{PROJECT}/{SESSION}/subagents/agent-a1.meta.json",
    ]
    first = run(config)
    assert (first.transcript_files, first.transcript_lines_landed, first.source_bytes) == (3, 0, 0)
    assert first.sessions == {SESSION} and not first.errors
    session = session_of(config)
    assert session.transcript_paths() == sorted(relpaths)
    assert all(session.transcript(relpath) == b"" for relpath in relpaths)
    for relpath in relpaths:
        (name,) = landed_in(config, stream_dir(config, relpath))
        (window,) = [w for _n, w in session_of(config).windows([name])]
        assert (window.off, window.line, window.lines, window.payload) == (0, 1, 0, b"")

    # Still empty: not again, whether the file was touched or the cursors lost.
    assert run(config).transcript_files == 0
    os.utime(main, ns=(7, 7))
    assert run(config).transcript_files == 0
    for relpath in relpaths:
        absolute(config, cursor_path(stream_dir(config, relpath))).unlink()
    assert run(config).transcript_files == 0
    assert not open_root(config).verify().problems

    # Grown, it goes on from offset 0 like any source.
    main.write_bytes(jline(n=1) + b"\n" + jline(n=2) + b"\n")
    grown = run(config)
    assert (grown.transcript_files, grown.transcript_lines_landed) == (1, 2)
    lines = list(session_of(config).transcript_lines())
    assert [(line.line, line.offset) for line in lines] == [(1, 0), (2, len(jline(n=1)) + 1)]
    assert session_of(config).transcript(relpaths[0]) == main.read_bytes()
    report = open_root(config).verify()
    assert not report.problems and report.transcript_lines == 2
    assert len(landed_in(config, stream_dir(config, relpaths[0]))) == 2


def test_an_empty_source_seen_by_an_older_asz_lands_its_window(tmp_path: Path) -> None:
    """asz 0.1.0 saved a cursor for an empty source and landed nothing; the source has not
    changed since, yet it must land once."""
    config = make_config(tmp_path)
    main = transcript(config)
    main.write_bytes(b"")
    relpath = f"{PROJECT}/{SESSION}.jsonl"
    directory = stream_dir(config, relpath)
    old = Cursor(source=relpath)
    old.saw(FileStat.of(main.stat()))
    cursor_file = absolute(config, cursor_path(directory))
    cursor_file.parent.mkdir(parents=True)
    # What asz 0.1.0 wrote: the cursor's fields as bare JSON, schema 1.
    replace_derived(cursor_file, orjson.dumps({"schema": 1, **dataclasses.asdict(old)}) + b"\n")
    assert run(config).transcript_files == 1
    assert session_of(config).transcript(relpath) == b""
    assert run(config).transcript_files == 0


def test_a_cursor_changed_by_hand_is_rebuilt_rather_than_followed(tmp_path: Path) -> None:
    """A cursor is derived from the landed files and trusted only whole as written: one whose
    offset was changed in place would start the next window at the wrong byte (or call an
    appended source rewritten); it is made again from the landed files instead."""
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline(n=1) + b"\n" + jline(n=2) + b"\n")
    run(config)
    relpath = f"{PROJECT}/{SESSION}.jsonl"
    cursor_file = absolute(config, cursor_path(stream_dir(config, relpath)))
    data = cursor_file.read_bytes()
    changed = re.sub(rb'"offset":\d+', b'"offset":0', data)
    assert changed != data
    cursor_file.write_bytes(changed)
    with path.open("ab") as grown:
        grown.write(jline(n=3) + b"\n")
    tally = run(config)
    assert not tally.conflict_sources
    assert tally.transcript_lines_landed == 1
    assert session_of(config).transcript(relpath) == path.read_bytes()
    assert not open_root(config).verify().problems


def test_derived_state_left_empty_by_a_power_cut_is_rebuilt(tmp_path: Path) -> None:
    """Cursors, facts and the seq file are written without a disk sync, so a power cut may
    leave any of them empty: each then counts as missing."""
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline(promptId="p1") + b"\n" + assistant_line("msg_A", "req_A") + b"\n")
    run(config)
    directory = stream_dir(config, f"{PROJECT}/{SESSION}.jsonl")
    for derived in (
        absolute(config, cursor_path(directory)),
        absolute(config, facts_path(SESSION)),
        Root(config.root).session_dir(SESSION) / "seq",
    ):
        assert derived.exists(), derived
        derived.write_bytes(b"")
    append(path, assistant_line("msg_B", "req_B") + b"\n")

    assert run(config).transcript_files == 1
    assert landed_bytes(config) == path.read_bytes()
    assert [landed.seq for landed in landed_in(config, directory)] == [1, 2]
    assert sorted(session_of(config).facts().calls) == ["msg_A", "msg_B"]
    assert not open_root(config).verify().problems


def test_a_landed_file_the_disk_lost_lands_again(tmp_path: Path) -> None:
    """A power cut before the end-of-pass directory sync may keep the cursor naming a landed
    file yet lose the file itself: the cursor no longer matches, and the window lands again."""
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(jline(promptId="p1") + b"\n")
    run(config)
    append(path, assistant_line("msg_A", "req_A") + b"\n")
    run(config)
    directory = stream_dir(config, f"{PROJECT}/{SESSION}.jsonl")
    newest = landed_in(config, directory)[-1]
    assert cursor_of(config, directory).last_seq == newest.seq  # type: ignore[union-attr]
    absolute(config, newest.path).unlink()

    assert run(config).transcript_files == 1
    assert landed_bytes(config) == path.read_bytes()
    assert [landed.seq for landed in landed_in(config, directory)] == [1, 3]
    assert session_of(config).facts().calls == {"msg_A": CallFact("msg_A", "req_A", "main", "p1")}
    assert not open_root(config).verify().problems


def test_the_lock_sweeps_temporaries_only_when_another_process_held_the_root(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    transcript(config).write_bytes(jline() + b"\n")
    run(config)
    left = absolute(config, transcripts_dir(SESSION)) / ".tmp-left-by-a-killed-writer"
    left.write_bytes(b"half")

    run(config)
    assert left.exists(), "this process held the root last: nobody else could have left it"

    (config.root / "_lock").write_bytes(b"another collector's token")
    run(config)
    assert not left.exists()


def inode_flags(path: Path) -> int | None:
    """The directory's ext2/3/4-style inode flags (``lsattr``), None where there are none."""
    get_flags = (2 << 30) | (struct.calcsize("l") << 16) | (ord("f") << 8) | 1
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        return struct.unpack("i", fcntl.ioctl(fd, get_flags, bytes(4)))[0]
    except OSError:
        return None
    finally:
        os.close(fd)


def test_the_root_is_the_top_of_unrelated_trees_where_the_filesystem_has_the_flag(
    tmp_path: Path,
) -> None:
    if inode_flags(tmp_path) is None:
        pytest.skip("this filesystem keeps no inode flags")
    config = make_config(tmp_path)
    transcript(config).write_bytes(jline() + b"\n")
    run(config)
    flags = inode_flags(config.root)
    assert flags is not None and flags & 0x00020000, "chattr +T (the Orlov top-directory flag)"


def test_windows_respect_the_budget_and_the_per_pass_limit(tmp_path: Path) -> None:
    config = make_config(tmp_path, budget=4096)
    path = transcript(config)
    path.write_bytes(b"".join(jline(n=n, pad="y" * 200) + b"\n" for n in range(1400)))
    first = run(config)
    assert (first.transcript_files, first.pending) == (64, 1)
    second = run(config)
    assert second.pending == 0 and second.transcript_files > 0
    assert first.transcript_lines_landed + second.transcript_lines_landed == 1400
    session = session_of(config)
    for name in session.landed_in(stream_dir(config, f"{PROJECT}/{SESSION}.jsonl")):
        payload = session.read(name).records[0].payload
        assert len(payload) <= 4096 and payload.endswith(b"\n")
    assert landed_bytes(config) == path.read_bytes()


def test_a_single_50_mb_line_lands_whole(tmp_path: Path) -> None:
    config = make_config(tmp_path, budget=64 * 1024)
    path = transcript(config)
    big = jline(blob="z" * (50 * 1024 * 1024)) + b"\n"
    path.write_bytes(jline(n=1) + b"\n" + big + jline(n=3) + b"\n")
    result = run(config)
    assert (
        result.transcript_lines_landed == 3 and result.transcript_files == 3 and not result.errors
    )
    lines = list(session_of(config).transcript_lines())
    assert [len(line.data) for line in lines][1] == len(big)
    assert b"".join(line.data for line in lines) == path.read_bytes()


def test_crlf_lines_are_kept_exactly(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    data = jline(n=1) + b"\r\n" + jline(n=2) + b"\r\n" + b"\r\n"
    path.write_bytes(data)
    assert run(config).transcript_lines_landed == 3
    lines = list(session_of(config).transcript_lines())
    assert [line.data[-2:] for line in lines] == [b"\r\n"] * 3
    assert landed_bytes(config) == data


def test_a_transcript_holding_lines_of_three_sessions_lands_under_its_own(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(
        jline(OTHER, cwd="/a") + b"\n" + jline(THIRD, cwd="/b") + b"\n" + jline(cwd="/c") + b"\n"
    )
    result = run(config)
    assert result.sessions == {SESSION} and result.transcript_lines_landed == 3
    assert open_root(config).sessions() == [SESSION]
    assert session_of(config).facts().cwds == {"/a", "/b", "/c"}


def assistant_line(
    message_id: str, request_id: str | None, model: str = "claude-x", **extra: object
) -> bytes:
    fields: dict[str, object] = {"message": {"id": message_id, "model": model, "content": []}}
    if request_id:
        fields["requestId"] = request_id
    return jline(type="assistant", **fields, **extra)


def test_facts_name_every_call_once_with_its_prompt_and_stream(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    path = transcript(config)
    path.write_bytes(
        b"\n".join(
            [
                jline(promptId="p1"),
                assistant_line("msg_1", "req_1"),
                assistant_line("msg_1", "req_other"),
                assistant_line("msg_s", None, model="<synthetic>"),
                jline(n=5),
                jline(promptId="p2"),
                assistant_line("msg_2", "req_2"),
                b"not json",
            ]
        )
        + b"\n"
    )
    agent = path.parent / SESSION / "subagents" / "agent-a1b2c3.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(assistant_line("msg_3", "req_3", cwd="/work/project/sub") + b"\n")
    other_dir = config.projects_dir / "-elsewhere" / SESSION / "subagents" / "agent-a9.jsonl"
    other_dir.parent.mkdir(parents=True)
    other_dir.write_bytes(assistant_line("msg_1", "req_dup") + b"\n")
    run(config)
    facts = session_of(config).facts()
    assert facts.calls == {
        "msg_1": CallFact("msg_1", "req_1", "main", "p1"),
        "msg_2": CallFact("msg_2", "req_2", "main", "p2"),
        "msg_3": CallFact("msg_3", "req_3", "a1b2c3", None),
    }
    assert facts.primary_dir == PROJECT
    assert facts.project_dirs == {PROJECT, "-elsewhere"}
    assert facts.cwds == {"/work/project", "/work/project/sub"}

    # Grown window by window over passes, or rebuilt at once: the same facts.
    append(path, assistant_line("msg_4", "req_4", cwd="/moved") + b"\n")
    run(config)
    grown = session_of(config).facts()
    absolute(config, facts_path(SESSION)).unlink()
    assert session_of(config).facts() == grown
    assert grown.calls["msg_4"] == CallFact("msg_4", "req_4", "main", "p2")
    assert "/moved" in grown.cwds


def test_flat_agent_files_follow_their_first_session_line(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    project = config.projects_dir / PROJECT
    project.mkdir(parents=True)
    (project / "agent-a111111.jsonl").write_bytes(
        b'{"type":"summary"}\n' + jline(OTHER) + b"\n" + jline(SESSION) + b"\n"
    )
    (project / "agent-a222222.jsonl").write_bytes(b'{"type":"summary","sessionId":"nope"}\n')
    (project / "agent-a333333.jsonl").write_bytes(b"")
    result = run(config)
    assert result.transcripts_unattributed == 1 and result.sessions == {OTHER}
    assert [line.stream for line in session_of(config, OTHER).transcript_lines()] == ["a111111"] * 3


def test_sidecars_land_a_new_copy_when_their_bytes_change(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    transcript(config).write_bytes(jline() + b"\n")
    meta = config.projects_dir / PROJECT / SESSION / "subagents" / "agent-a1.meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_bytes(b'{"agentType":"Explore"}')
    assert run(config).transcript_files == 2
    os.utime(meta, ns=(5, 5))
    assert run(config).transcript_files == 0
    meta.write_bytes(b'{"agentType":"Plan"}')
    assert run(config).transcript_files == 1
    relpath = f"{PROJECT}/{SESSION}/subagents/agent-a1.meta.json"
    session = session_of(config)
    copies = session.landed_in(stream_dir(config, relpath))
    assert [session.read(c).records[0].payload for c in copies] == [
        b'{"agentType":"Explore"}',
        b'{"agentType":"Plan"}',
    ]
    assert all(line.source != relpath for line in session_of(config).transcript_lines())


def test_landed_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    transcript(config).write_bytes(jline() + b"\n")
    agent = config.projects_dir / PROJECT / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(jline() + b"\n")
    previous = os.umask(0)
    try:
        run(config)
        session_of(config).facts()
    finally:
        os.umask(previous)
    checked = 0
    for directory, dirs, files in os.walk(config.root):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory
        for name in files:
            assert stat.S_IMODE(os.stat(Path(directory, name)).st_mode) == 0o600, name
            checked += 1
        assert not [d for d in dirs if Path(directory, d).is_symlink()]
    assert checked >= 5


def test_verify_names_a_damaged_file_and_a_gap(tmp_path: Path) -> None:
    config = make_config(tmp_path, budget=4096, compression="none")
    path = transcript(config)
    path.write_bytes(b"".join(jline(n=n, pad="p" * 500) + b"\n" for n in range(30)))
    run(config)
    report = open_root(config).verify()
    assert not report.problems and report.transcript_lines == 30
    names = landed_in(config, stream_dir(config, f"{PROJECT}/{SESSION}.jsonl"))
    assert report.files == len(names) >= 4
    files = [absolute(config, name.path) for name in names]
    damaged = bytearray(files[1].read_bytes())
    damaged[-200] ^= 1
    files[1].write_bytes(bytes(damaged))
    files[2].unlink()
    problems = open_root(config).verify().problems
    session_dir = str(config.root / SESSION)  # the sequence has a gap too
    assert {p.file for p in problems} == {str(files[1]), str(files[3]), session_dir}
    assert any("past the" in p.why for p in problems)
    assert any("the session is incomplete" in p.why for p in problems)


def test_excluded_sessions_land_nothing(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    transcript(config, project="-private-tmp-scratch").write_bytes(jline() + b"\n")
    transcript(config, OTHER).write_bytes(jline(OTHER) + b"\n")
    result = run(config)
    assert result.sessions_excluded == 1 and result.sessions == {OTHER}
    assert open_root(config).sessions() == [OTHER]


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    lines=st.lists(st.binary(max_size=9000).map(lambda b: b.replace(b"\n", b"")), max_size=30),
    cuts=st.lists(st.integers(min_value=0, max_value=300_000), max_size=5),
    budget=st.sampled_from([4096, 5000, 16384]),
)
def test_any_growth_lands_exactly_the_complete_lines(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cuts: list[int], budget: int
) -> None:
    config = make_config(tmp_path_factory.mktemp("grow"), budget=budget, compression="none")
    path = transcript(config)
    data = b"".join(line + b"\n" for line in lines)
    path.write_bytes(b"")
    written = 0
    for cut in sorted({min(cut, len(data)) for cut in cuts} | {len(data)}):
        append(path, data[written:cut])
        written = cut
        result = run(config)
        assert not result.conflict_sources and not result.errors
        complete = data[: data.rfind(b"\n", 0, cut) + 1]
        assert landed_bytes(config) == complete
    session = open_root(config).open_session(SESSION)
    for directory in session.stream_dirs():
        for n, name in enumerate(session.landed_in(directory)):
            payload = session.read(name).records[0].payload
            # Only a source still empty when it was first seen lands an empty window.
            assert payload.endswith(b"\n") or (payload == b"" and n == 0)
            assert len(payload) <= budget or payload.count(b"\n") == 1
    assert not open_root(config).verify().problems


def sample_layouts() -> list[Path]:
    base = SAMPLES / "transcripts"
    if not base.is_dir():
        pytest.skip(f"no samples at {SAMPLES}")
    return sorted(path for path in base.iterdir() if path.is_dir())


def test_every_sample_transcript_lands_and_verifies(tmp_path: Path) -> None:
    for layout in sample_layouts():
        config = make_config(tmp_path / layout.name)
        shutil.rmtree(config.projects_dir)
        shutil.copytree(layout, config.projects_dir)
        result = run(config)
        assert (
            not result.conflict_sources
            and not result.errors
            and not result.transcripts_unattributed
        )
        total = sum(path.stat().st_size for path in config.projects_dir.rglob("*.jsonl"))
        assert result.source_bytes == total
        report = open_root(config).verify()
        assert not report.problems
        assert report.transcript_lines == sum(
            path.read_bytes().count(b"\n") for path in config.projects_dir.rglob("*.jsonl")
        )
        assert run(config).transcript_files == 0


cwd_values = st.sampled_from(["/w", "/w/sub", '/q"uote', "/tab\there", "/é", ""])
fact_lines = st.one_of(
    st.fixed_dictionaries(
        {"type": st.just("user"), "cwd": cwd_values},
        optional={"promptId": st.sampled_from(["p1", "p2"])},
    ),
    st.fixed_dictionaries(
        {
            "type": st.just("assistant"),
            "cwd": cwd_values,
            "message": st.fixed_dictionaries(
                {
                    "id": st.sampled_from(["msg_1", "msg_2", "msg_3"]),
                    "model": st.sampled_from(["claude-x", "<synthetic>"]),
                }
            ),
        },
        optional={"requestId": st.sampled_from(["req_1", "req_2"])},
    ),
    st.fixed_dictionaries(
        {"type": st.just("progress"), "data": st.fixed_dictionaries({"cwd": cwd_values})}
    ),
    st.fixed_dictionaries({"type": st.just("summary")}),
)


def naive_facts(lines: list[dict]) -> tuple[dict[str, CallFact], set[str]]:
    """The facts as the spec states them, reading every line in full."""
    calls: dict[str, CallFact] = {}
    cwds: set[str] = set()
    prompt = None
    for line in lines:
        if "cwd" in line:
            cwds.add(line["cwd"])
        if line["type"] == "user" and "promptId" in line:
            prompt = line["promptId"]
        message = line.get("message")
        if line["type"] == "assistant" and message["model"] != "<synthetic>":
            calls.setdefault(
                message["id"],
                CallFact(message["id"], line.get("requestId"), "main", prompt),
            )
    return calls, cwds


@settings(max_examples=150, deadline=None)
@given(
    lines=st.lists(fact_lines, max_size=25),
    spaced=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=25), max_size=3),
)
def test_facts_read_only_some_lines_yet_match_reading_every_line(
    lines: list[dict], spaced: bool, cuts: list[int]
) -> None:
    encoded = [
        (json.dumps(line, ensure_ascii=False) if spaced else orjson.dumps(line).decode()).encode()
        + b"\n"
        for line in lines
    ]
    builder = FactsBuilder(SESSION)
    bounds = sorted({min(cut, len(encoded)) for cut in cuts} | {0, len(encoded)})
    off = 0
    for seq, (start, stop) in enumerate(pairwise(bounds), start=1):
        payload = b"".join(encoded[start:stop])
        window = LandedWindow(
            seq,
            f"{PROJECT}/{SESSION}.jsonl",
            "main",
            False,
            off,
            start + 1,
            stop - start,
            "",
            payload,
        )
        builder.add_file(seq, [window])
        off += len(payload)
    calls, cwds = naive_facts(lines)
    assert builder.facts.calls == calls
    assert builder.facts.cwds == cwds
    restored = FactsBuilder.from_value(SESSION, builder.to_value())
    assert restored is not None and restored.facts == builder.facts
