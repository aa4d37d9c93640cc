"""The claude-code-provider adapter end to end: real files in, landed bodies that rebuild out.

Each test writes body files with chosen modification times into a Claude Code directory,
writes the transcripts the session filter needs, runs the transcript adapter and then the
provider adapter (as a pass does), and checks the counts and the landed bodies.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.claude_dir import request_body, response_body

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.claude_code_provider import collect_bodies
from asz.adapters.provider_census import describe_sources
from asz.adapters.provider_index import STATE_PATH
from asz.adapters.provider_ledger import Ledger, State, ledger_path
from asz.adapters.provider_ledger import load_ledger as load_store_ledger
from asz.adapters.provider_source import is_one_json_value, list_sources
from asz.adapters.provider_state import ProviderState
from asz.adapters.session_filter import SessionJudge
from asz.bodykeys import BodyKeys, read_keys
from asz.config import AdapterConfig, Adapters, Config, SessionFilter
from asz.store import BODY_KIND, INDEX_KIND, LandedRecord, Store, open_store
from asz.store._bodies import BodyLander, IncomingBody
from asz.store._root import Root, collector_lock
from asz.synth import SynthOptions, synthesize
from asz.tally import Tally

A = "11111111-2222-4333-8444-555555555555"
B = "66666666-7777-4888-8999-aaaaaaaaaaaa"
BASE = 1_750_000_000.0
NOW = BASE + 3600
HOUR = 3600.0


def request(
    session: str, prev: str | None = None, text: str = "hello", prompt: str = "p1"
) -> bytes:
    """A request with tools and a long system prompt, so that landing has pieces to cut."""
    return request_body(session, text, prev, prompt=prompt, tools=True, padding=200)


response = response_body


@dataclass
class Env:
    """A Claude Code directory, a storage root and the store, as one pass sees them."""

    tmp: Path
    config: Config
    lander: BodyLander

    @property
    def store(self) -> Store:
        return self.lander.store

    @property
    def root(self) -> Root:
        return Root(Path(self.store.location))

    @property
    def bodies(self) -> Path:
        return self.config.bodies_dir

    def write(self, name: str, data: bytes, at: float = BASE) -> Path:
        path = self.bodies / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        os.utime(path, ns=(int(at * 1e9), int(at * 1e9)))
        return path

    def transcript(
        self, session: str, message_ids: tuple[str, ...] = (), project: str = "-home-u-proj"
    ) -> None:
        """A main transcript for ``session`` under ``project``, recording these calls."""
        cwd = "/" + project.strip("-").replace("-", "/")
        lines = [
            {
                "type": "user",
                "sessionId": session,
                "uuid": f"{session}-u",
                "parentUuid": None,
                "cwd": cwd,
                "message": {"role": "user", "content": "hi"},
            }
        ]
        for number, message_id in enumerate(message_ids):
            lines.append(
                {
                    "type": "assistant",
                    "sessionId": session,
                    "uuid": f"{session}-a{number}",
                    "parentUuid": f"{session}-u",
                    "cwd": cwd,
                    "message": {"id": message_id, "role": "assistant", "model": "claude-test"},
                }
            )
        path = self.config.projects_dir / project / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))

    def run(self, now: float | None = NOW, config: Config | None = None) -> Tally:
        """A pass: transcripts first, then bodies, under a fresh judge."""
        config = config or self.config
        local = collect_transcripts(config, self.store)
        assert local.errors == [] and local.conflict_sources == []
        judge = SessionJudge(config, self.store)
        return collect_bodies(config, self.root, self.lander, judge, now)

    def body(self, session: str, record_id: str) -> bytes:
        return self.store.session(session).body(record_id)

    def landed_files(self, session: str) -> list[Path]:
        landed = self.store.open_session(session).landed(BODY_KIND)
        return [Path(self.store.location) / name.path for name in landed]

    def records(self, path: Path) -> list[LandedRecord]:
        """The records of one landed file, read whole (raises when it does not hold)."""
        relpath = path.relative_to(self.store.location).as_posix()
        session = self.store.session(relpath.split("/", 1)[0])
        (name,) = [name for name in session.landed() if name.path == relpath]
        return session.read(name).records

    def ledger(self) -> Ledger:
        return load_store_ledger(self.store, self.root)


def make_env(tmp_path: Path, **adapter: int) -> Env:
    config = Config(
        root=tmp_path / "root",
        claude_dirs=(tmp_path / "claude",),
        adapters=Adapters(claude_code_provider=AdapterConfig(**adapter)),
    )
    config.bodies_dir.mkdir(parents=True)
    return Env(
        tmp_path, config, BodyLander(open_store(config.root, compression=config.compression))
    )


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return make_env(tmp_path)


def complete(result: Tally) -> bool:
    return not result.conflict_sources and not result.errors


def test_bodies_land_in_their_sessions_and_rebuild_exactly(env: Env) -> None:
    files = {
        "r1.request.json": (request(A, text="one"), BASE + 1),
        "req_a1.response.json": (response("msg_a1"), BASE + 2),
        "r2.request.json": (request(A, prev="req_a1", text="two"), BASE + 3),
        "b1.request.json": (request(B, text="bee"), BASE + 4),
        "req_title.response.json": (response("msg_title"), BASE + 5),
    }
    for name, (data, at) in files.items():
        env.write(name, data, at)
    env.transcript(A)
    env.transcript(B, project="-home-u-other")
    first = env.run()
    assert (
        first.bodies_landed,
        first.bodies_waiting,
        first.bodies_unreadable,
        first.bodies_excluded,
    ) == (4, 1, 0, 0)
    assert complete(first)
    assert first.sessions == {A, B}
    assert first.files == 2 and first.records == 4
    assert first.source_bytes == sum(
        len(data) for name, (data, _) in files.items() if "title" not in name
    )
    for name, session in [
        ("r1.request.json", A),
        ("req_a1.response.json", A),
        ("r2.request.json", A),
        ("b1.request.json", B),
    ]:
        assert env.body(session, name[: -len(".json")]) == files[name][0]
    second = env.run()
    assert (second.bodies_landed, second.bodies_waiting, second.files) == (0, 1, 0)
    assert complete(second) and second.sessions == set()


def test_a_response_no_later_request_names_is_claimed_by_its_transcript(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.write("req_last.response.json", response("msg_last"), BASE + 10)
    env.transcript(A)
    first = env.run()
    assert (first.bodies_landed, first.bodies_waiting) == (1, 1)
    env.transcript(A, message_ids=("msg_last",))
    second = env.run()
    assert (second.bodies_landed, second.bodies_waiting) == (1, 0)
    assert env.body(A, "req_last.response") == response("msg_last")


def test_a_uuid_named_response_is_claimed_by_its_message_id(env: Env) -> None:
    name = "0a1b2c3d-aaaa-4bbb-8ccc-0123456789ab.response.json"
    env.write("r1.request.json", request(A), BASE)
    env.write(name, response("msg_u"), BASE + 30)
    env.transcript(A, message_ids=("msg_u",))
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (2, 0)
    assert env.body(A, name[: -len(".json")]) == response("msg_u")


def test_two_sessions_naming_one_request_id_leave_the_response_waiting(env: Env) -> None:
    env.write("a.request.json", request(A, prev="req_x"), BASE)
    env.write("b.request.json", request(B, prev="req_x"), BASE)
    env.write("req_x.response.json", response("msg_x"), BASE + 1)
    env.transcript(A, message_ids=("msg_x",))
    env.transcript(B, project="-home-u-other")
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (2, 1)
    assert complete(result)


def test_a_response_whose_only_candidate_requests_are_25_hours_away_waits(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.write("req_late.response.json", response("msg_late"), BASE + 25 * HOUR)
    env.transcript(A, message_ids=("msg_late",))
    far = env.run(now=BASE + 26 * HOUR)
    assert (far.bodies_landed, far.bodies_waiting) == (1, 1)
    os.utime(env.bodies / "req_late.response.json", ns=(int((BASE + 23 * HOUR) * 1e9),) * 2)
    near = env.run(now=BASE + 26 * HOUR)
    assert (near.bodies_landed, near.bodies_waiting) == (1, 0)


def test_a_half_written_file_waits_and_is_called_unreadable_only_later(env: Env) -> None:
    whole = request(A)
    env.write("r1.request.json", whole[: len(whole) // 2], at=NOW - 1)
    env.transcript(A)
    fresh = env.run(now=NOW)
    assert (fresh.bodies_landed, fresh.bodies_unreadable, fresh.bodies_waiting) == (0, 0, 0)
    assert fresh.bodies_settling == 1, "still being written: settling, not waiting"
    assert ledger_path(env.root).exists()
    settled = env.config.service.unreadable_after
    later = env.run(now=NOW + settled + 60)
    assert (later.bodies_landed, later.bodies_unreadable, later.bodies_waiting) == (0, 1, 0)
    assert later.bodies_settling == 0
    assert complete(later), "unreadable never fails a pass"
    again = env.run(now=NOW + settled + 120)
    assert again.bodies_unreadable == 1
    env.write("r1.request.json", whole, at=NOW + settled + 130)
    written = env.run(now=NOW + settled + 140)
    assert (written.bodies_landed, written.bodies_unreadable) == (1, 0)
    assert env.body(A, "r1.request") == whole


def test_invalid_utf8_inside_a_string_is_one_json_value_and_lands_exactly(env: Env) -> None:
    data = request(A).replace(b"hello", b"hel\xff\xfelo")
    env.write("r1.request.json", data, at=NOW)
    env.transcript(A)
    result = env.run(now=NOW)
    assert (result.bodies_landed, result.bodies_unreadable, result.bodies_waiting) == (1, 0, 0)
    assert env.body(A, "r1.request") == data


def test_a_lost_ledger_lands_nothing_twice(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.write("req_a1.response.json", response("msg_a1"), BASE + 1)
    env.write("r2.request.json", request(A, prev="req_a1", text="two"), BASE + 2)
    env.transcript(A)
    assert env.run().bodies_landed == 3
    files = env.landed_files(A)
    ledger_path(env.root).unlink()
    after = env.run()
    assert (after.bodies_landed, after.files) == (0, 0)
    assert complete(after)
    assert env.landed_files(A) == files
    assert ledger_path(env.root).exists()
    assert env.run().bodies_landed == 0


def test_a_corrupt_ledger_is_rebuilt(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    ledger_path(env.root).write_bytes(b"SQLite format 3\x00 and then nothing that holds")
    after = env.run()
    assert after.bodies_landed == 0 and after.files == 0
    assert complete(after), "derived data rebuilt: nothing for the user to do"
    with env.ledger() as ledger:
        assert [(entry.name, entry.state) for entry in ledger] == [
            ("r1.request.json", State.LANDED)
        ]
    assert complete(env.run())


def test_an_unchanged_stat_is_answered_from_the_ledger_without_reading(env: Env) -> None:
    path = env.write("r1.request.json", request(A), BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    swapped = request(B).ljust(len(request(A)))[: len(request(A))]
    path.write_bytes(swapped)
    os.utime(path, ns=(int(BASE * 1e9),) * 2)
    unread = env.run()
    assert complete(unread) and unread.bodies_landed == 0, "same size and time: not read"
    os.utime(path, ns=(int((BASE + 1) * 1e9),) * 2)
    read = env.run()
    assert len(read.conflict_sources) == 1


def test_a_removed_session_lands_again(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    shutil.rmtree(env.root.session_dir(A))
    again = env.run()
    assert again.bodies_landed == 1
    assert env.body(A, "r1.request") == request(A)


def test_the_filter_excludes_and_holds(env: Env) -> None:
    env.write("a.request.json", request(A), BASE)
    env.write("b.request.json", request(B), BASE)
    env.transcript(A, project="-home-u-secret")
    excluding = replace(env.config, sessions=SessionFilter(exclude=("/home/u/secret",)))
    held = env.run(config=excluding)
    assert (held.bodies_landed, held.bodies_waiting, held.bodies_excluded) == (0, 1, 1)
    assert complete(held)
    assert not env.root.session_dir(A).exists()
    assert not env.root.session_dir(B).exists()
    env.transcript(B, project="-home-u-other")
    everything = replace(env.config, sessions=SessionFilter(exclude=()))
    both = env.run(config=everything)
    assert (both.bodies_landed, both.bodies_waiting, both.bodies_excluded) == (2, 0, 0)


def test_a_file_changed_after_landing_is_a_conflict_until_its_bytes_are_back(env: Env) -> None:
    original = request(A)
    path = env.write("r1.request.json", original, BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    env.write("r1.request.json", request(A, text="edited"), BASE + 100)
    for _ in range(2):
        result = env.run()
        assert len(result.conflict_sources) == 1 and "r1.request.json" in result.conflict_sources[0]
        assert result.bodies_landed == 0
    env.write("r1.request.json", original, BASE + 200)
    back = env.run()
    assert complete(back) and back.bodies_landed == 0
    assert env.body(A, "r1.request") == original == path.read_bytes()


def test_a_body_whose_id_the_session_holds_with_other_bytes_is_a_conflict(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    ledger_path(env.root).unlink()
    env.write("r1.request.json", request(A, text="other"), BASE + 5)
    for _ in range(2):
        result = env.run()
        assert len(result.conflict_sources) == 1 and result.bodies_landed == 0
    env.write("r1.request.json", request(A), BASE + 10)
    assert complete(env.run())


def test_a_session_id_that_is_no_session_id_writes_nothing(env: Env) -> None:
    env.write("r1.request.json", request("../outside"), BASE)
    env.write("r2.request.json", request("../../" + A), BASE)
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (0, 2)
    assert complete(result)
    assert all(path.name.startswith("_") for path in env.root.path.iterdir())
    assert not any(path.name == "outside" for path in env.tmp.rglob("*"))


def test_a_session_missing_an_earlier_file_still_takes_new_bodies(env: Env) -> None:
    env.write("r1.request.json", request(A, text="one " * 300), BASE)
    env.transcript(A)
    assert env.run().bodies_landed == 1
    env.write("req_a1.response.json", response("msg_a1"), BASE + 1)
    env.write("r2.request.json", request(A, prev="req_a1", text="two " * 300), BASE + 2)
    assert env.run().bodies_landed == 2
    first, second = env.landed_files(A)
    first.unlink()
    env.write("req_a2.response.json", response("msg_a2"), BASE + 3)
    env.write("r3.request.json", request(A, prev="req_a2", text="three " * 300), BASE + 4)
    third = env.run()
    assert third.bodies_landed == 2 and third.conflict_sources == []
    assert [error for error in third.errors if second.name not in error] == [], (
        "only the body that copied from the missing file is named"
    )
    assert env.body(A, "r3.request") == request(A, prev="req_a2", text="three " * 300)
    assert env.body(A, "req_a2.response") == response("msg_a2")
    assert len(env.landed_files(A)) == 2 and second in env.landed_files(A)


def test_a_file_ends_before_the_budget(tmp_path: Path) -> None:
    env = make_env(tmp_path, max_delta_bytes=12 * 1024)
    env.config = replace(env.config, compression="none")
    env.lander = BodyLander(open_store(env.config.root, compression="none"))
    for number in range(4):
        unique = hashlib.sha256(str(number).encode()).hexdigest() * 80
        env.write(f"r{number}.request.json", request(A, text=unique, prompt=f"p{number}"), BASE)
    env.transcript(A)
    result = env.run()
    assert result.bodies_landed == 4 and result.files >= 2
    for path in env.landed_files(A):
        if len(env.records(path)) > 1:
            assert path.stat().st_size <= 12 * 1024


def test_a_damaged_file_does_not_stop_other_sessions(env: Env) -> None:
    env.write("a.request.json", request(A), BASE)
    env.transcript(A)
    env.transcript(B, project="-home-u-other")
    assert env.run().bodies_landed == 1
    (damaged,) = env.landed_files(A)
    damaged.write_bytes(damaged.read_bytes()[:100])
    ledger_path(env.root).unlink()
    env.write("b.request.json", request(B), BASE + 1)
    result = env.run()
    assert any(damaged.name in error for error in result.errors)
    assert result.bodies_landed >= 1 and B in result.sessions
    assert env.body(B, "b.request") == request(B)


def test_fifos_symlinks_and_directories_named_like_bodies_are_ignored(env: Env) -> None:
    os.mkfifo(env.bodies / "fifo.request.json")
    (env.bodies / "passwd.request.json").symlink_to("/etc/passwd")
    (env.bodies / "dir.response.json").mkdir()
    env.write("notes.txt", b"not a body")
    env.write("a.b.request.json", request(A))
    env.write("r1.request.json", request(A))
    env.transcript(A)
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting, result.bodies_unreadable) == (1, 0, 0)
    assert complete(result)
    assert [source.name for source in list_sources(env.bodies).files] == ["r1.request.json"]


def test_a_body_over_the_limit_is_refused_by_its_size_and_named_once(env: Env) -> None:
    with (env.bodies / "huge.request.json").open("wb") as handle:
        handle.truncate(256 * 1024 * 1024 + 1)
    env.transcript(A)
    first = env.run()
    assert len(first.errors) == 1 and "huge.request.json" in first.errors[0]
    assert first.bodies_landed == 0
    second = env.run()
    assert second.errors == [] and second.bodies_landed == 0


def test_describe_sources_counts_requests_responses_and_named_sessions(env: Env) -> None:
    env.write("a1.request.json", request(A))
    env.write("a2.request.json", request(A, prev="req_1"))
    env.write("b1.request.json", request(B))
    env.write("req_1.response.json", response("msg_1"))
    env.write("broken.request.json", b"{")
    described = describe_sources(env.config)
    assert described == {
        "dirs": [
            {
                "dir": str(env.bodies),
                "exists": True,
                "same_as": None,
                "requests": 4,
                "responses": 1,
                "shadowed": 0,
            }
        ],
        "exists": True,
        "requests": 4,
        "responses": 1,
        "shadowed": 0,
        "sessions": {A: 2, B: 1},
    }
    shutil.rmtree(env.bodies)
    assert describe_sources(env.config)["exists"] is False


def test_nothing_happens_while_the_bodies_directory_does_not_exist(env: Env) -> None:
    shutil.rmtree(env.bodies)
    result = env.run()
    assert result == Tally()
    assert not ledger_path(env.root).exists()


# index.jsonl


def index_line(session: str, request_id: str, message_id: str, request_file: str, **extra) -> bytes:
    line = {
        "timestamp": "2026-09-18T10:00:00.000Z",
        "session_id": session,
        "query_source": "repl_main_thread",
        "model": "claude-test",
        "request_id": request_id,
        "message_id": message_id,
        "message_uuid": "u",
        "request_file": f"/home/u/.claude/asz/provider-bodies/{request_file}",
        "response_file": f"/home/u/.claude/asz/provider-bodies/{request_id}.response.json",
        **extra,
    }
    return orjson.dumps(line) + b"\n"


def landed_index_lines(env: Env, session: str) -> list[bytes]:
    landed = env.store.open_session(session)
    return [
        record.payload for name in landed.landed(INDEX_KIND) for record in landed.read(name).records
    ]


def test_the_index_claims_title_and_compaction_responses(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.write("t1.request.json", request(A, text="name this session", prompt=""), BASE + 1)
    env.write("req_title.response.json", response("msg_title"), BASE + 2)
    env.write("c1.request.json", request(A, text="summarise", prompt=""), BASE + 3)
    env.write("req_compact.response.json", response("msg_compact"), BASE + 4)
    env.transcript(A)
    title = index_line(A, "req_title", "msg_title", "t1.request.json", query_source="title")
    compact = index_line(A, "req_compact", "msg_compact", "c1.request.json", future={"x": [1]})
    env.write("index.jsonl", title + compact)
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (5, 0)
    assert env.body(A, "req_title.response") == response("msg_title")
    assert landed_index_lines(env, A) == [title[:-1], compact[:-1]]
    again = env.run()
    assert (again.bodies_landed, again.files) == (0, 0)
    assert landed_index_lines(env, A) == [title[:-1], compact[:-1]]


def test_a_torn_index_line_waits_and_lines_land_once(env: Env) -> None:
    env.transcript(A)
    first = index_line(A, "req_1", "msg_1", "r1.request.json")
    second = index_line(A, "req_2", "msg_2", "r2.request.json")
    env.write("index.jsonl", first + second[:20])
    env.run()
    assert landed_index_lines(env, A) == [first[:-1]]
    env.write("index.jsonl", first + second)
    env.run()
    env.run()
    assert landed_index_lines(env, A) == [first[:-1], second[:-1]]
    state = Path(env.store.location) / STATE_PATH
    state.unlink()
    env.run()
    assert landed_index_lines(env, A) == [first[:-1], second[:-1]]
    state.write_bytes(
        b'{"format":"asz.provider-index/1","offset":0,"tail_sha256":"","held":{},'
        b'"landed":["../elsewhere"],"claims":{}}'
    )
    assert complete(env.run())
    assert landed_index_lines(env, A) == [first[:-1], second[:-1]]
    assert b"elsewhere" not in state.read_bytes()


def test_index_lines_of_a_session_not_yet_judged_are_held_until_it_is(env: Env) -> None:
    line = index_line(B, "req_b", "msg_b", "b1.request.json")
    env.write("index.jsonl", line)
    env.write("req_b.response.json", response("msg_b"), BASE)
    waiting = env.run()
    assert waiting.bodies_waiting == 1 and complete(waiting)
    assert not env.root.session_dir(B).exists()
    env.transcript(B)
    landed = env.run()
    assert landed.bodies_landed == 1
    assert landed_index_lines(env, B) == [line[:-1]]


def test_an_index_rewritten_behind_what_was_read_is_a_conflict_while_it_stays(env: Env) -> None:
    env.transcript(A)
    line = index_line(A, "req_1", "msg_1", "r1.request.json")
    env.write("index.jsonl", line)
    env.run()
    env.write("index.jsonl", line.replace(b"req_1", b"req_9") + line)
    assert len(env.run().conflict_sources) == 1
    assert len(env.run().conflict_sources) == 1
    env.write("index.jsonl", line + line.replace(b"msg_1", b"msg_2"))
    healed = env.run()
    assert complete(healed)
    assert len(landed_index_lines(env, A)) == 2


def test_index_lines_land_again_when_their_session_is_removed(env: Env) -> None:
    env.transcript(A)
    env.transcript(B, project="-home-u-other")
    a_line = index_line(A, "req_1", "msg_1", "r1.request.json")
    b_line = index_line(B, "req_2", "msg_2", "r2.request.json")
    env.write("index.jsonl", a_line + b_line)
    env.run()
    shutil.rmtree(env.root.session_dir(A))
    env.run()
    assert landed_index_lines(env, A) == [a_line[:-1]]
    assert landed_index_lines(env, B) == [b_line[:-1]]


def test_an_index_line_naming_no_session_is_named_once(env: Env) -> None:
    env.write("index.jsonl", b'{"session_id":"../outside"}\nnot json\n')
    first = env.run()
    assert len(first.errors) == 2
    assert complete(env.run())


# The validity check that tells a half-written body from a whole one.

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=5), children, max_size=4)
    ),
    max_leaves=20,
)


@given(json_values, st.sampled_from([b"", b" ", b"\n", b"\t\r\n "]))
def test_every_json_value_is_one_json_value(value: object, space: bytes) -> None:
    data = space + json.dumps(value, ensure_ascii=False).encode() + space
    assert is_one_json_value(data)


@given(
    st.lists(json_values, min_size=1, max_size=4)
    | st.dictionaries(st.text(max_size=5), json_values, min_size=1, max_size=4),
    st.data(),
)
def test_a_cut_container_is_not_one_json_value(value: object, data: st.DataObject) -> None:
    whole = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()
    cut = data.draw(st.integers(1, len(whole) - 1))
    assert not is_one_json_value(whole[:cut])


@given(st.binary(min_size=1, max_size=8).map(lambda raw: bytes(b | 0x80 for b in raw)), json_values)
def test_invalid_utf8_inside_a_string_keeps_a_value_whole(junk: bytes, value: object) -> None:
    data = json.dumps({"text": "<>", "value": value}).encode().replace(b"<>", junk, 1)
    assert is_one_json_value(data)
    assert not is_one_json_value(data[:-1])


@settings(max_examples=50)
@given(st.integers(1, 3000))
def test_deep_nesting_and_what_orjson_refuses_are_still_judged(depth: int) -> None:
    assert is_one_json_value(b"[" * depth + b"1E400" + b"]" * depth)
    assert is_one_json_value(b'{"a":"\\ud800"}')
    assert not is_one_json_value(b"[" * depth + b"1E400" + b"]" * (depth - 1))
    assert not is_one_json_value(b"[1E400] [1]")


@pytest.mark.slow
def test_the_real_asz_collect_once_reports_the_pass(tmp_path: Path, run_asz) -> None:
    env = make_env(tmp_path)
    env.write("r1.request.json", request(A), BASE)
    env.write("req_title.response.json", response("msg_title"), BASE)
    env.transcript(A)
    where = {"CLAUDE_CONFIG_DIR": str(env.config.claude_dirs[0]), "ASZ_ROOT": str(env.root.path)}
    with collector_lock(env.root):
        busy = run_asz("collect", "--once", "--json", env=where)
    assert busy.returncode == 1 and not env.root.session_dir(A).exists()
    process = run_asz("collect", "--once", "--json", env=where)
    assert process.returncode == 0, process.stderr
    counts = orjson.loads(process.stdout.splitlines()[-1])
    assert counts["bodies_landed"] == 1 and counts["bodies_waiting"] == 1
    assert counts["conflicts"] == 0 and counts["errors"] == []
    env.write("r1.request.json", request(A, text="edited"), BASE + 10)
    failed = run_asz("collect", "--once", "--json", env=where)
    assert failed.returncode == 1
    assert orjson.loads(failed.stdout.splitlines()[-1])["conflicts"] == 1
    assert b"r1.request.json" in failed.stderr


def test_real_request_bodies_land_in_the_session_they_name(env: Env, samples: Path) -> None:
    log = samples / "requests" / "vibe-coding-proxy-v2.1.153" / "log-2026-06-15-09-00-52.jsonl"
    pair = orjson.loads(log.read_bytes().splitlines()[0])
    body = orjson.dumps(pair["request"]["body"])
    session = orjson.loads(pair["request"]["body"]["metadata"]["user_id"])["session_id"]
    env.write("real.request.json", body, BASE)
    traffic = samples / "requests" / "claude-trace-v1.0.6" / "test-traffic.jsonl"
    old = orjson.loads(traffic.read_bytes().splitlines()[1])["request"]["body"]
    env.write("old.request.json", orjson.dumps(old), BASE)
    env.transcript(session)
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (1, 1), "1.0.6 names no session"
    assert env.body(session, "real.request") == body


@pytest.mark.parametrize("index", [False, True])
def test_a_synthesised_capture_lands_as_its_ground_truth_says(tmp_path: Path, index: bool) -> None:
    capture = tmp_path / "capture"
    expected = synthesize(capture, SynthOptions(index=index))
    config = Config(root=tmp_path / "root", claude_dirs=(capture,))
    assert config.bodies_dir == capture / expected["bodies_dir"]
    env = Env(tmp_path, config, BodyLander(open_store(config.root, compression=config.compression)))
    first = env.run(now=None)
    bodies = expected["bodies"]
    waiting = [body for body in bodies if body["claim"] is None]
    assert complete(first)
    assert first.bodies_waiting == len(waiting)
    assert first.bodies_landed == len(bodies) - len(waiting)
    assert first.sessions == {session["id"] for session in expected["sessions"]}
    for body in bodies:
        if body["claim"] is not None:
            assert env.body(body["session"], body["id"]) == (capture / body["file"]).read_bytes()
    special = [body for body in bodies if body["role"] == "response" and body["kind"] != "call"]
    assert special, "the capture has title and compaction responses"
    assert all((body["claim"] is None) != index for body in special)
    if index:
        lines = (config.bodies_dir / "index.jsonl").read_bytes().splitlines()
        landed = [line for session in first.sessions for line in landed_index_lines(env, session)]
        assert sorted(landed) == sorted(lines)
    second = env.run(now=None)
    assert (second.bodies_landed, second.files, second.bodies_waiting) == (0, 0, len(waiting))
    assert complete(second)


def test_lost_derived_state_is_rebuilt_and_the_next_pass_reads_nothing(env: Env) -> None:
    env.write("r1.request.json", request(A), BASE)
    env.write("req_a1.response.json", response("msg_a1"), BASE + 1)
    env.write("r2.request.json", request(A, prev="req_a1"), BASE + 2)
    env.write("index.jsonl", index_line(A, "req_a1", "msg_a1", "r1.request.json"))
    env.transcript(A)
    assert env.run().bodies_landed == 3
    ledger_path(env.root).unlink()
    (Path(env.store.location) / STATE_PATH).unlink()
    rebuilt = env.run()
    assert (rebuilt.bodies_landed, rebuilt.files) == (0, 0) and complete(rebuilt)
    with env.ledger() as ledger:
        entries = list(ledger)
    assert [(entry.name, entry.state) for entry in entries] == [
        ("r1.request.json", State.LANDED),
        ("r2.request.json", State.LANDED),
        ("req_a1.response.json", State.LANDED),
    ]
    assert all(entry.mtime_ns == (env.bodies / entry.name).stat().st_mtime_ns for entry in entries)
    for entry in entries:
        path = env.bodies / entry.name
        path.write_bytes(b"{" * entry.size)
        os.utime(path, ns=(entry.mtime_ns, entry.mtime_ns))
    assert complete(env.run()), "every file answered from its stat: none was read"


def test_bodies_landed_by_a_pass_that_stopped_before_its_ledger_count_as_landed(
    env: Env,
) -> None:
    first, answer = request(A), response("msg_a1")
    env.write("r1.request.json", first, BASE)
    env.write("req_a1.response.json", answer, BASE + 1)
    env.write("r2.request.json", request(A, prev="req_a1"), BASE + 2)
    env.transcript(A)
    items = [
        IncomingBody(
            "r1.request", "request", "r1.request.json", first, read_keys("request", "r1", first), 0
        )
    ]
    assert env.lander.land(A, items, 2 * 1024 * 1024).landed == ["r1.request"]
    result = env.run()
    assert (result.bodies_landed, result.files) == (2, 1) and complete(result)
    assert env.run().bodies_landed == 0


def test_the_ledger_keeps_only_what_each_body_carries(env: Env) -> None:
    uuid_name = "0a1b2c3d-aaaa-4bbb-8ccc-0123456789ab.response.json"
    env.write("r1.request.json", request(A, prev="req_x", prompt="bdee6995"), BASE)
    env.write("req_x.response.json", b"[]", BASE + 1)
    env.write(uuid_name, response("msg_u"), BASE + 2)
    env.transcript(A)
    result = env.run()
    assert (result.bodies_landed, result.bodies_waiting) == (2, 1)
    assert env.body(A, "req_x.response") == b"[]"
    with env.ledger() as ledger:
        entries = {entry.name: entry for entry in ledger}
    assert entries["r1.request.json"].keys == BodyKeys(
        model="claude-test", session=A, prompt="bdee6995", prev_request="req_x"
    )
    assert entries["req_x.response.json"].keys == BodyKeys(request_id="req_x")
    assert entries[uuid_name].keys == BodyKeys(model="claude-test", message_id="msg_u")
    assert (entries[uuid_name].state, entries[uuid_name].session) == (State.WAITING, "")


def test_a_session_whose_transcripts_were_pruned_is_judged_by_what_landed(env: Env) -> None:
    env.transcript(A, project="-private-tmp-scratch")
    env.transcript(B, project="-home-u-other")
    everything = replace(env.config, sessions=SessionFilter(exclude=()))
    collect_transcripts(everything, env.store)
    shutil.rmtree(env.config.projects_dir)
    env.config.projects_dir.mkdir()
    env.write("a.request.json", request(A), BASE)
    env.write("b.request.json", request(B), BASE)
    env.write("c.request.json", request("CCCCCCCC-7777-4888-8999-AAAAAAAAAAAA"), BASE)
    default = env.run()
    assert (default.bodies_landed, default.bodies_excluded, default.bodies_waiting) == (1, 1, 1)
    assert env.run(config=everything).bodies_landed == 1


def test_a_waiting_body_is_judged_again_from_its_stored_keys_without_being_read(
    env: Env,
) -> None:
    env.write("r1.request.json", request(A), BASE)
    path = env.write("req_r.response.json", response("msg_old"), BASE + 1)
    env.transcript(A)
    assert (env.run().bodies_waiting, env.run().bodies_landed) == (1, 0)
    path.write_bytes(response("msg_new"))
    os.utime(path, ns=(int((BASE + 1) * 1e9),) * 2)
    env.transcript(A, message_ids=("msg_old",))
    judged = env.run()
    assert (judged.bodies_landed, judged.bodies_waiting, judged.bodies_settling) == (0, 0, 1), (
        "claimed from the stored keys; the bytes read to land it are not the ones judged, so "
        "it is being written again: settling, not waiting for a session"
    )
    with env.ledger() as ledger:
        assert ledger.get("req_r.response.json") is None, "so the next pass reads it afresh"
    fresh = env.run()
    assert (fresh.bodies_landed, fresh.bodies_waiting) == (0, 1)
    with env.ledger() as ledger:
        assert ledger.get("req_r.response.json").keys.message_id == "msg_new"


def test_an_unclaimed_response_is_searched_again_when_a_request_arrives_near_it(
    env: Env,
) -> None:
    env.write("a1.request.json", request(A), BASE)
    env.write("req_b.response.json", response("msg_b"), BASE + 30 * HOUR)
    env.transcript(A)
    env.transcript(B, message_ids=("msg_b",), project="-home-u-other")
    later = BASE + 31 * HOUR
    for _ in range(2):
        assert env.run(now=later).bodies_waiting == 1, "no request of B near it: B is not searched"
    env.write("b1.request.json", request(B), BASE + 29 * HOUR)
    claimed = env.run(now=later)
    assert (claimed.bodies_landed, claimed.bodies_waiting) == (1 + 1, 0)
    assert env.body(B, "req_b.response") == response("msg_b")


def test_an_unclaimed_response_is_searched_again_when_its_transcripts_land_later(
    env: Env,
) -> None:
    env.write("a1.request.json", request(A), BASE)
    env.write("req_late.response.json", response("msg_late"), BASE + 5)
    env.transcript(A)
    for _ in range(3):
        assert env.run().bodies_waiting == 1
    env.transcript(A, message_ids=("msg_late",))
    assert env.run().bodies_landed == 1


def test_a_response_two_sessions_named_is_claimed_once_one_of_the_requests_is_gone(
    env: Env,
) -> None:
    env.write("a.request.json", request(A, prev="req_x"), BASE)
    env.write("b.request.json", request(B, prev="req_x"), BASE)
    env.write("req_x.response.json", response("msg_x"), BASE + 1)
    env.transcript(A)
    for _ in range(2):
        result = env.run()
        assert (result.bodies_landed, result.bodies_waiting) in ((1, 2), (0, 2))
    (env.bodies / "b.request.json").unlink()
    claimed = env.run()
    assert (claimed.bodies_landed, claimed.bodies_waiting) == (1, 0)
    assert env.body(A, "req_x.response") == response("msg_x")


# A state kept from pass to pass, as the service keeps it, told which files changed.


def kept_pass(
    env: Env, state: ProviderState, changed: set[str] | None, rescan: bool = False
) -> Tally:
    """A pass as the service runs it: transcripts first, then bodies with ``state`` kept."""
    local = collect_transcripts(env.config, env.store)
    assert local.errors == [] and local.conflict_sources == []
    judge = SessionJudge(env.config, env.store)
    return collect_bodies(
        env.config, env.root, env.lander, judge, NOW, state=state, changed=changed, rescan=rescan
    )


def outcome(result: Tally) -> tuple:
    return (
        result.bodies_landed,
        result.bodies_waiting,
        result.bodies_unreadable,
        result.bodies_excluded,
        sorted(result.conflict_sources),
        result.errors,
    )


def quiet(env: Env) -> None:
    """Dates the bodies directory an hour back, so a listing of it is trusted to stand."""
    os.utime(env.bodies, ns=(int((NOW - HOUR) * 1e9),) * 2)


STEPS: list[list[tuple[str, bytes, float]]] = [
    [("r1.request.json", request(A), BASE), ("req_a1.response.json", response("m1"), BASE + 1)],
    [("r2.request.json", request(A, prev="req_a1", text="two"), BASE + 2)],
    [("late.response.json", b'{"id": "m9", "content": [', BASE + 3)],
    [("r1.request.json", request(A, text="edited"), BASE + 4)],
    [("b1.request.json", request(B), BASE + 5), ("r1.request.json", request(A), BASE + 6)],
    [("late.response.json", response("m9"), NOW - 60)],
]


def test_a_kept_state_told_what_changed_lands_what_fresh_passes_land(tmp_path: Path) -> None:
    fresh, kept = make_env(tmp_path / "fresh"), make_env(tmp_path / "kept")
    state = ProviderState()
    for number, step in enumerate(STEPS):
        for current in (fresh, kept):
            current.transcript(A, ("m9",))
            current.transcript(B)
            for name, data, at in step:
                current.write(name, data, at)
        hints = None if number == 0 else {name for name, _data, _at in step}
        assert outcome(kept_pass(kept, state, hints)) == outcome(fresh.run()), f"step {number}"
    for name, data, _at in STEPS[0] + STEPS[1] + STEPS[-1]:
        assert kept.body(A, name[: -len(".json")]) == data
    assert kept.body(B, "b1.request") == request(B)
    assert sorted(path.name for path in kept.landed_files(A)) == sorted(
        path.name for path in fresh.landed_files(A)
    )


def test_a_pass_told_of_changes_looks_at_those_files_only(env: Env) -> None:
    env.transcript(A)
    state = ProviderState()
    env.write("r1.request.json", request(A), BASE)
    assert kept_pass(env, state, None).bodies_landed == 1
    env.write("r2.request.json", request(A, text="two"), BASE + 1)
    env.write("r3.request.json", request(A, text="three"), BASE + 2)
    assert kept_pass(env, state, {"r2.request.json"}).bodies_landed == 1
    assert kept_pass(env, state, set()).bodies_landed == 0, "r3 was named by no event"
    assert kept_pass(env, state, None).bodies_landed == 1, "a listing finds it"


def test_a_rescan_lists_the_directory_only_when_its_entries_moved(env: Env) -> None:
    env.transcript(A)
    state = ProviderState()
    env.write("r1.request.json", request(A), BASE)
    quiet(env)
    assert kept_pass(env, state, None).bodies_landed == 1
    env.write("r2.request.json", request(A, text="two"), BASE + 1)
    assert kept_pass(env, state, set(), rescan=True).bodies_landed == 1, "a file came"
    quiet(env)
    assert kept_pass(env, state, None).bodies_landed == 0
    path = env.bodies / "r1.request.json"
    path.write_bytes(request(A, text="edited in place"))
    assert os.stat(env.bodies).st_mtime_ns == int((NOW - HOUR) * 1e9)
    assert complete(kept_pass(env, state, set(), rescan=True)), "no entry came or went"
    told = kept_pass(env, state, {"r1.request.json"}, rescan=True)
    assert len(told.conflict_sources) == 1 and "r1.request.json" in told.conflict_sources[0]


def test_a_rescan_of_an_unmoved_directory_lands_a_removed_session_again(env: Env) -> None:
    env.transcript(A)
    state = ProviderState()
    env.write("r1.request.json", request(A), BASE)
    quiet(env)
    assert kept_pass(env, state, None).bodies_landed == 1
    assert kept_pass(env, state, set(), rescan=True).bodies_landed == 0
    shutil.rmtree(env.root.session_dir(A))
    assert kept_pass(env, state, set(), rescan=True).bodies_landed == 1
    assert env.body(A, "r1.request") == request(A)


def test_a_ledger_replaced_behind_a_kept_state_is_read_again_and_lands_nothing_twice(
    env: Env,
) -> None:
    env.transcript(A)
    state = ProviderState()
    env.write("r1.request.json", request(A), BASE)
    env.write("r2.request.json", request(A, text="two"), BASE + 1)
    assert kept_pass(env, state, None).bodies_landed == 2
    files = env.landed_files(A)
    ledger_path(env.root).unlink()
    after = kept_pass(env, state, set())
    assert (after.bodies_landed, after.files) == (0, 0) and complete(after)
    with env.ledger() as ledger:
        assert {entry.name: entry.mtime_ns for entry in ledger} == {
            "r1.request.json": int(BASE * 1e9),
            "r2.request.json": int((BASE + 1) * 1e9),
        }, "every file was listed and read again, not only the named ones"
    assert env.landed_files(A) == files


def test_a_pass_that_fails_leaves_the_kept_state_to_list_again(env: Env) -> None:
    env.transcript(A)
    state = ProviderState()
    env.write("r1.request.json", request(A), BASE)
    assert kept_pass(env, state, None).bodies_landed == 1
    env.write("r2.request.json", request(A, text="two"), BASE + 1)
    no_judge: SessionJudge = None  # type: ignore[assignment]
    with pytest.raises(AttributeError):
        collect_bodies(env.config, env.root, env.lander, no_judge, NOW, state=state, changed=set())
    assert state.unsettled is None
    assert kept_pass(env, state, set()).bodies_landed == 1, "listed again after the failure"


# several bodies directories (a user with both ~/.config/claude and ~/.claude)


@pytest.fixture
def two(tmp_path: Path) -> Env:
    """Two Claude Code directories, both with a bodies directory; ``write`` fills the first."""
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "one", tmp_path / "two"))
    for directory in config.bodies_dirs:
        directory.mkdir(parents=True)
    return Env(tmp_path, config, BodyLander(open_store(config.root)))


def write_in(directory: Path, name: str, data: bytes, at: float = BASE) -> Path:
    path = directory / name
    path.write_bytes(data)
    os.utime(path, ns=(int(at * 1e9), int(at * 1e9)))
    return path


def test_bodies_in_two_directories_land_as_one_and_a_name_in_both_comes_from_the_first(
    two: Env,
) -> None:
    second = two.config.bodies_dirs[1]
    two.transcript(A)
    two.write("r1.request.json", request(A, text="one"), BASE)
    write_in(second, "r2.request.json", request(A, text="two"), BASE + 1)
    two.write("r3.request.json", request(A, text="first copy"), BASE + 2)
    later = write_in(second, "r3.request.json", request(A, text="second copy"), BASE + 3)
    result = two.run()
    assert (result.bodies_landed, result.conflicts, result.errors) == (3, 0, [])
    assert two.body(A, "r2.request") == request(A, text="two")
    assert two.body(A, "r3.request") == request(A, text="first copy")
    later.write_bytes(request(A, text="second copy, rewritten"))
    for _ in range(2):
        again = two.run()
        assert (again.bodies_landed, again.files, again.conflicts) == (0, 0, 0), (
            "the shadowed copy is never read, so it can never conflict"
        )
    described = describe_sources(two.config)
    counts = [(d["requests"], d["shadowed"]) for d in described["dirs"]]
    assert counts == [(2, 0), (1, 1)]
    assert (described["requests"], described["shadowed"]) == (3, 1)


def test_a_pass_told_which_files_changed_finds_them_in_any_bodies_directory(two: Env) -> None:
    second = two.config.bodies_dirs[1]
    two.transcript(A)
    state = ProviderState()
    two.write("r1.request.json", request(A), BASE)
    assert kept_pass(two, state, None).bodies_landed == 1
    write_in(second, "r2.request.json", request(A, text="two"), BASE + 1)
    write_in(second, "r1.request.json", request(A, text="shadowed"), BASE + 2)
    told = kept_pass(two, state, {"r2.request.json", "r1.request.json"})
    assert (told.bodies_landed, told.conflicts) == (1, 0)
    assert two.body(A, "r2.request") == request(A, text="two")
    assert two.body(A, "r1.request") == request(A)
    rescan = kept_pass(two, state, set(), rescan=True)
    assert (rescan.bodies_landed, rescan.conflicts) == (0, 0)


def test_the_index_is_read_from_the_first_bodies_directory_holding_one(two: Env) -> None:
    second = two.config.bodies_dirs[1]
    two.transcript(A)
    write_in(second, "t1.request.json", request(A, text="name this session", prompt=""))
    write_in(second, "req_title.response.json", response("msg_title"), BASE + 1)
    title = index_line(A, "req_title", "msg_title", "t1.request.json", query_source="title")
    write_in(second, "index.jsonl", title)
    result = two.run()
    assert (result.bodies_landed, result.bodies_waiting, result.index_lines) == (2, 0, 1)
    assert landed_index_lines(two, A) == [title[:-1]]
    # Another directory's index appears first in order: it is read from its start, and the
    # lines a session already holds do not land twice.
    write_in(two.config.bodies_dirs[0], "index.jsonl", title)
    moved = two.run()
    assert complete(moved) and moved.index_lines == 0
    assert landed_index_lines(two, A) == [title[:-1]]
