"""Bad input: the table. Every case is a Claude Code directory holding one odd thing, run
through the real ``asz collect --once --json``, then ``asz verify`` and ``asz body``.

Each case has one expected outcome:

``landed``      the body lands cut into pieces and rebuilds byte for byte
``whole``       the body lands whole, its manifest says why, and it rebuilds byte for byte
``waiting``     the body is counted as waiting and nothing of it lands
``unreadable``  the body is counted as unreadable (not one JSON value long after its last write)
``ignored``     nothing is counted and nothing lands: it is not a body or not a transcript
``refused``     the body is too large: named once as an error, never read
``lines``       every complete line of every transcript lands, byte for byte, once

Whatever the case, the pass never crashes, nothing is written outside the root, and the root
verifies.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

import orjson
import pytest
from support.harness import Workspace, asz_command, landed_records

from asz.store import Store, open_store

S = "0b7e4c1a-5d2f-4e8b-9c3a-7f6e5d4c3b2a"
T = "7d1e2f3a-4b5c-4d6e-8f70-8192a3b4c5d6"
U = "c0ffee00-1111-4222-8333-444455556666"
UPPER = "0B7E4C1A-5D2F-4E8B-9C3A-7F6E5D4C3B2B"
PROJECT = "-home-u-proj"
OLD = 600.0
"""Seconds since the last write of a body old enough to be called unreadable."""


class Outcome(StrEnum):
    LANDED = "landed"
    WHOLE = "whole"
    WAITING = "waiting"
    SETTLING = "settling"
    UNREADABLE = "unreadable"
    IGNORED = "ignored"
    REFUSED = "refused"
    LINES = "lines"


@dataclass(frozen=True)
class Body:
    """The body a case is about: where it should land (if it does) and its exact bytes."""

    session: str
    record_id: str
    data: bytes
    why: str = ""


class Scene:
    """A Claude Code directory with session ``S``'s transcript, so ``S`` can be judged."""

    def __init__(self, ws: Workspace) -> None:
        self.ws = ws
        self.transcript(S)

    def transcript(self, session: str, lines: list[bytes] | None = None, **kw: str) -> Path:
        path = self.ws.projects / kw.get("project", PROJECT) / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        if lines is None:
            lines = [line(session, "user", uuid="u1"), line(session, "assistant", msg="msg_1")]
        path.write_bytes(b"".join(lines))
        return path

    def body(self, name: str, data: bytes, age: float = 0.0) -> Path:
        path = self.ws.bodies / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        if age:
            then = time.time() - age
            os.utime(path, (then, then))
        return path

    def request(self, data: bytes, session: str = S, name: str = "", **kw: float) -> Body:
        name = name or "11111111-2222-4333-8444-555555555555.request.json"
        self.body(name, data, **kw)
        return Body(session, name.removesuffix(".json"), data)


def line(session: str, kind: str, *, uuid: str = "", msg: str = "") -> bytes:
    value: dict = {"type": kind, "sessionId": session, "uuid": uuid or msg, "cwd": "/home/u/proj"}
    if msg:
        value["message"] = {"id": msg, "role": "assistant", "model": "claude-test"}
    return orjson.dumps(value) + b"\n"


def user_id(session: str) -> str:
    return orjson.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session}).decode()


def request_value(session: str = S, text: str = "hello", prev: str = "") -> dict:
    billing = "x-anthropic-billing-header: cc_version=2.1.260; cch=00000; cc_prompt_id=p1;"
    if prev:
        billing += f" cc_prev_req={prev};"
    return {
        "model": "claude-test",
        "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
        "system": [
            {"type": "text", "text": billing},
            {"type": "text", "text": "You are Claude Code. " + "Be careful. " * 200},
        ],
        "metadata": {"user_id": user_id(session)},
        "max_tokens": 32000,
    }


def request_bytes(session: str = S, **kw: str) -> bytes:
    return orjson.dumps(request_value(session, **kw))


def response_bytes(message_id: str = "msg_1") -> bytes:
    return orjson.dumps(
        {"id": message_id, "type": "message", "role": "assistant", "content": [], "model": "m"}
    )


def named_response(scene: Scene, data: bytes, request_id: str = "req_011Cabc") -> Body:
    """A response whose request id a landed request of ``S`` names."""
    scene.request(request_bytes(prev=request_id))
    name = f"{request_id}.response.json"
    scene.body(name, data)
    return Body(S, name.removesuffix(".json"), data)


# -- the cases ----------------------------------------------------------------------------------


def _compact(scene: Scene) -> Body:
    return scene.request(request_bytes())


def _pretty(scene: Scene) -> Body:
    return scene.request(orjson.dumps(request_value(), option=orjson.OPT_INDENT_2))


def _spaced(scene: Scene) -> Body:
    return scene.request(json.dumps(request_value(), indent=None).encode())


def _duplicate_keys(scene: Scene) -> Body:
    data = request_bytes()
    return scene.request(b'{"model":"first",' + data[1:])


def _odd_escapes(scene: Scene) -> Body:
    text = r"\u0041\/\ud83d\ude00 \" \\ \t \u00e9 \u2028"
    return scene.request(request_bytes().replace(b"hello", text.encode()))


def _lone_surrogate(scene: Scene) -> Body:
    return scene.request(request_bytes().replace(b"hello", rb"\ud800 alone"))


def _odd_numbers(scene: Scene) -> Body:
    data = request_bytes()
    odd = b'"n":[1e400,-0.0,123456789012345678901234567890,1E+2,-1e-400,0.000],'
    return scene.request(b"{" + odd + data[1:])


def _nul_escape(scene: Scene) -> Body:
    return scene.request(request_bytes().replace(b"hello", rb"a\u0000b"))


def _invalid_utf8(scene: Scene) -> Body:
    body = scene.request(request_bytes().replace(b"hello", b"caf\xe9 \xff\xfe"))
    return Body(body.session, body.record_id, body.data, why="UTF-8")


DEEP = b"[" * 100_000 + b"]" * 100_000


def _deep_response(scene: Scene) -> Body:
    body = named_response(scene, b'{"deep":' + DEEP + b"," + response_bytes()[1:])
    return Body(body.session, body.record_id, body.data, why="deep")


def _deep_request(scene: Scene) -> Body:
    """Deeper than any JSON parser goes, so the session it names cannot be read (as in the
    reference, whose parser stops at 10,000 levels)."""
    return scene.request(b'{"deep":' + DEEP + b"," + request_bytes()[1:])


def _not_object_response(scene: Scene) -> Body:
    body = named_response(scene, b'"just a string"')
    return Body(body.session, body.record_id, body.data, why="object")


def _huge_string(scene: Scene) -> Body:
    return scene.request(request_bytes(text="x" * (64 * 1024 * 1024)))


def _uuid_response(scene: Scene) -> Body:
    scene.request(request_bytes())
    name = "9f8e7d6c-5b4a-4392-8170-6f5e4d3c2b1a.response.json"
    data = response_bytes("msg_1")
    scene.body(name, data)
    return Body(S, name.removesuffix(".json"), data)


def _uppercase_session(scene: Scene) -> Body:
    scene.transcript(UPPER)
    return scene.request(request_bytes(UPPER), session=UPPER)


def _truncated_fresh(scene: Scene) -> Body:
    return scene.request(request_bytes()[:-40])


def _truncated_old(scene: Scene) -> Body:
    return scene.request(request_bytes()[:-40], age=OLD)


def _empty_old(scene: Scene) -> Body:
    return scene.request(b"", age=OLD)


def _bom(scene: Scene) -> Body:
    return scene.request(b"\xef\xbb\xbf" + request_bytes(), age=OLD)


def _raw_nul(scene: Scene) -> Body:
    return scene.request(request_bytes().replace(b"hello", b"a\0b"), age=OLD)


def _two_values(scene: Scene) -> Body:
    return scene.request(request_bytes() + b"\n" + request_bytes(), age=OLD)


def _array_request(scene: Scene) -> Body:
    return scene.request(b"[" + request_bytes() + b"]")


def _session(session: str) -> Callable[[Scene], Body]:
    def write(scene: Scene) -> Body:
        return scene.request(request_bytes(session))

    return write


def _user_id_not_a_string(scene: Scene) -> Body:
    value = request_value()
    value["metadata"]["user_id"] = {"session_id": S}
    return scene.request(orjson.dumps(value))


def _unnamed_response(scene: Scene) -> Body:
    data = response_bytes("msg_unknown")
    scene.body("req_011Cnobody.response.json", data)
    return Body(S, "req_011Cnobody.response", data)


def _two_sessions_name_one_request(scene: Scene) -> Body:
    scene.transcript(T, project="-home-u-other")
    scene.request(request_bytes(S, prev="req_011Cshared"), name=f"{U}.request.json")
    scene.request(request_bytes(T, prev="req_011Cshared"), session=T)
    data = response_bytes("msg_shared")
    scene.body("req_011Cshared.response.json", data)
    return Body(S, "req_011Cshared.response", data)


def _directory(scene: Scene) -> None:
    (scene.ws.bodies / "11111111-2222-4333-8444-555555555555.request.json").mkdir(parents=True)


def _fifo(scene: Scene) -> None:
    scene.ws.bodies.mkdir(parents=True)
    os.mkfifo(scene.ws.bodies / "11111111-2222-4333-8444-555555555555.request.json")


def _symlink(scene: Scene) -> None:
    outside = scene.ws.base / "outside.json"
    outside.write_bytes(request_bytes())
    scene.ws.bodies.mkdir(parents=True)
    os.symlink(outside, scene.ws.bodies / "11111111-2222-4333-8444-555555555555.request.json")


def _other_names(scene: Scene) -> None:
    for name in ("notes.json", "x.request.json.swp", ".request.json", "a b.request.json"):
        scene.body(name, request_bytes())


def _sparse_300_mb(scene: Scene) -> None:
    path = scene.body("11111111-2222-4333-8444-555555555555.request.json", b"")
    subprocess.run(["truncate", "-s", "300M", str(path)], check=True)


def _crlf(scene: Scene) -> None:
    lines = [line(S, "user", uuid="u1"), line(S, "assistant", msg="msg_1")]
    scene.transcript(S, [item.replace(b"\n", b"\r\n") for item in lines])


def _three_sessions(scene: Scene) -> None:
    scene.transcript(S, [line(S, "user", uuid="a"), line(T, "user", uuid="b"), line(U, "x")])


def _long_line(scene: Scene) -> None:
    big = orjson.dumps({"type": "user", "sessionId": S, "text": "y" * (50 * 1024 * 1024)})
    scene.transcript(S, [line(S, "user", uuid="u1"), big + b"\n", line(S, "user", uuid="u2")])


def _torn_last_line(scene: Scene) -> None:
    scene.transcript(S, [line(S, "user", uuid="u1"), line(S, "assistant", msg="m")[:-20]])


def _invalid_utf8_line(scene: Scene) -> None:
    scene.transcript(S, [line(S, "user", uuid="u1"), b'{"type":"user","t":"\xff\xfe"}\n'])


def _linked_projects(scene: Scene) -> None:
    real = scene.ws.base / "elsewhere"
    scene.ws.projects.rename(real)
    os.symlink(real, scene.ws.projects)


def _fifo_transcript(scene: Scene) -> None:
    os.mkfifo(scene.ws.projects / PROJECT / f"{T}.jsonl")


def _linked_transcript(scene: Scene) -> None:
    outside = scene.ws.base / "outside.jsonl"
    outside.write_bytes(line(T, "user", uuid="z"))
    os.symlink(outside, scene.ws.projects / PROJECT / f"{T}.jsonl")


def _linked_project_dir(scene: Scene) -> None:
    outside = scene.ws.base / "outside-project"
    outside.mkdir()
    (outside / f"{T}.jsonl").write_bytes(line(T, "user", uuid="z"))
    os.symlink(outside, scene.ws.projects / "-home-u-linked")


def _not_a_session_name(scene: Scene) -> None:
    (scene.ws.projects / PROJECT / "notes.jsonl").write_bytes(line(S, "user", uuid="n"))
    (scene.ws.projects / PROJECT / "../x.jsonl").write_bytes(line(S, "user", uuid="n"))


CASES: dict[str, tuple[Outcome, Callable[[Scene], Body | None]]] = {
    "compact request": (Outcome.LANDED, _compact),
    "pretty-printed request": (Outcome.LANDED, _pretty),
    "request with spaces after separators": (Outcome.LANDED, _spaced),
    "duplicate keys": (Outcome.LANDED, _duplicate_keys),
    "odd escapes": (Outcome.LANDED, _odd_escapes),
    "a lone surrogate escape": (Outcome.LANDED, _lone_surrogate),
    "odd numbers": (Outcome.LANDED, _odd_numbers),
    "an escaped NUL": (Outcome.LANDED, _nul_escape),
    "a 64 MiB string": (Outcome.LANDED, _huge_string),
    "a UUID-named response whose message a transcript holds": (Outcome.LANDED, _uuid_response),
    "an uppercase session id": (Outcome.LANDED, _uppercase_session),
    "invalid UTF-8 inside a string": (Outcome.WHOLE, _invalid_utf8),
    "a response nested 100,000 levels deep": (Outcome.WHOLE, _deep_response),
    "a request nested 100,000 levels deep": (Outcome.WAITING, _deep_request),
    "a response that is a JSON string": (Outcome.WHOLE, _not_object_response),
    "truncated JSON just written": (Outcome.SETTLING, _truncated_fresh),
    "a request that is a JSON array": (Outcome.WAITING, _array_request),
    "session id ../x": (Outcome.WAITING, _session("../x")),
    "session id /etc": (Outcome.WAITING, _session("/etc")),
    "empty session id": (Outcome.WAITING, _session("")),
    "session id of 10 KB": (Outcome.WAITING, _session("a" * 10_240)),
    "user_id that is not a JSON string": (Outcome.WAITING, _user_id_not_a_string),
    "a response no session names": (Outcome.WAITING, _unnamed_response),
    "two sessions naming one request id": (Outcome.WAITING, _two_sessions_name_one_request),
    "truncated JSON long after its last write": (Outcome.UNREADABLE, _truncated_old),
    "an empty file": (Outcome.UNREADABLE, _empty_old),
    "a byte order mark": (Outcome.UNREADABLE, _bom),
    "a raw NUL byte": (Outcome.UNREADABLE, _raw_nul),
    "two JSON values in one file": (Outcome.UNREADABLE, _two_values),
    "a directory named like a body": (Outcome.IGNORED, _directory),
    "a FIFO named like a body": (Outcome.IGNORED, _fifo),
    "a symlink named like a body": (Outcome.IGNORED, _symlink),
    "names not of the body form": (Outcome.IGNORED, _other_names),
    "a sparse 300 MB body": (Outcome.REFUSED, _sparse_300_mb),
    "CRLF transcript lines": (Outcome.LINES, _crlf),
    "a transcript with lines of three sessions": (Outcome.LINES, _three_sessions),
    "a 50 MB transcript line": (Outcome.LINES, _long_line),
    "a torn last transcript line": (Outcome.LINES, _torn_last_line),
    "invalid UTF-8 in a transcript line": (Outcome.LINES, _invalid_utf8_line),
    "a symlinked projects directory": (Outcome.LINES, _linked_projects),
    "a FIFO named like a transcript": (Outcome.LINES, _fifo_transcript),
    "a symlink named like a transcript": (Outcome.LINES, _linked_transcript),
    "a symlinked project directory": (Outcome.LINES, _linked_project_dir),
    "transcript names that are no session id": (Outcome.LINES, _not_a_session_name),
}


# -- running a case -----------------------------------------------------------------------------


@dataclass
class Pass:
    code: int
    counts: dict
    stderr: str
    max_rss_kb: int


PEAK = (
    "import resource, subprocess, sys\n"
    "code = subprocess.run(sys.argv[1:]).returncode\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr)\n"
    "sys.exit(code)\n"
)
"""Runs a command and says its peak memory: from a small process, since a child's peak starts
at the size of the process it was forked from."""


def collect_once(ws: Workspace) -> Pass:
    """``asz collect --once --json``, with the peak memory of that one process."""
    command = [*asz_command(), "collect", "--once", "--json", "--root", str(ws.root)]
    done = subprocess.run(
        [sys.executable, "-c", PEAK, *command],
        env=ws.env(),
        capture_output=True,
        timeout=120,
        check=False,
    )
    err, _, peak = done.stderr.decode(errors="replace").rstrip("\n").rpartition("\n")
    return Pass(done.returncode, orjson.loads(done.stdout), err, int(peak))


def tree(base: Path, leave_out: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``base`` but ``leave_out``, with its mode, size and time (no link is
    followed)."""
    found = {}
    for directory, dirs, files in os.walk(base):
        dirs[:] = [name for name in dirs if Path(directory, name) != leave_out]
        for name in [*dirs, *files]:
            info = os.lstat(os.path.join(directory, name))
            found[os.path.join(directory, name)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


SLOW_CASES = {"a 64 MiB string", "a 50 MB transcript line", "a sparse 300 MB body"}
"""The cases that take over 5 s, left out of the fast loop."""


@pytest.mark.parametrize(
    "case",
    [pytest.param(case, marks=pytest.mark.slow) if case in SLOW_CASES else case for case in CASES],
)
def test_bad_input(tmp_path: Path, case: str) -> None:
    outcome, write = CASES[case]
    ws = Workspace(tmp_path)
    body = write(Scene(ws))
    ws.env()
    before = tree(tmp_path, ws.root)

    done = collect_once(ws)

    assert "Traceback" not in done.stderr, done.stderr
    code, report = ws.verify()
    assert tree(tmp_path, ws.root) == before, "nothing is written outside the root"
    store = open_store(ws.root)
    assert code == 0, report["problems"]
    counts = done.counts
    if outcome is Outcome.REFUSED:
        assert done.code == 1 and counts["bodies_landed"] == 0
        assert any("is 314572800 bytes" in error for error in counts["errors"]), counts
        assert done.max_rss_kb < 200 * 1024, "a refused body was read"
        again = collect_once(ws)
        assert (again.code, again.counts["errors"]) == (0, []), "it is named once"
        return
    assert done.code == 0, counts
    assert counts["errors"] == [] and counts["conflicts"] == 0
    bodies = {k: counts[k] for k in ("bodies_landed", "bodies_waiting", "bodies_unreadable")}
    if outcome in (Outcome.LANDED, Outcome.WHOLE):
        assert body is not None
        landed = landed_records(store.session(body.session))
        [meta] = [m for m in landed if m["id"] == body.record_id]
        assert ("why" in meta) == (outcome is Outcome.WHOLE), meta.get("why")
        assert body.why.lower() in meta.get("why", "").lower()
        rebuilt = ws.body(body.session, body.record_id)
        assert rebuilt.returncode == 0 and rebuilt.stdout == body.data
    elif outcome in (Outcome.WAITING, Outcome.SETTLING, Outcome.UNREADABLE):
        assert body is not None
        assert counts["bodies_waiting"] == (outcome is Outcome.WAITING)
        assert counts["bodies_settling"] == (outcome is Outcome.SETTLING)
        assert counts["bodies_unreadable"] == (outcome is Outcome.UNREADABLE)
        landed = {
            m["id"] for session in store.sessions() for m in landed_records(store.session(session))
        }
        assert body.record_id not in landed
    elif outcome is Outcome.IGNORED:
        assert bodies == {"bodies_landed": 0, "bodies_waiting": 0, "bodies_unreadable": 0}
    else:
        _check_lines(ws, store)


def _check_lines(ws: Workspace, store: Store) -> None:
    """Every complete line of the transcript of ``S`` landed, once; nothing else did."""
    data = (ws.projects / PROJECT / f"{S}.jsonl").read_bytes()
    complete = data[: data.rfind(b"\n") + 1]
    relpath = f"{PROJECT}/{S}.jsonl"
    lines = list(store.session(S).transcript_lines())
    got = b"".join(line.data for line in lines if line.source == relpath)
    assert got == complete
    assert [line.line for line in lines] == list(range(1, complete.count(b"\n") + 1))
    assert store.sessions() == [S], "only the session a real transcript names lands"


def test_the_table_holds_every_outcome_and_enough_cases() -> None:
    assert {outcome for outcome, _ in CASES.values()} == set(Outcome)
    assert len(CASES) >= 30
