"""The view document: on a hand-made session, on real transcripts, and on a synthetic capture
landed by the real collector, where every assertion of its expected.json must hold; and the
timeline ``asz view`` prints from it, at every width, ids whole."""

from __future__ import annotations

import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.handmade import SESSION, SYSTEM_PROMPT, HandMade, chain, user_message
from support.landing import land_sample, land_synth
from support.terminal import on_a_terminal

from asz.store import BODY_KIND, MAIN_STREAM, BodyNotFound, CodecError, Store
from asz.synth import SynthOptions
from asz.view import build_view, format_timeline


def made_session(tmp_path: Path) -> tuple[HandMade, Store]:
    """Two prompts in the main stream, a subagent started by the second, a compaction, a
    call whose response never landed, a title request, and a synthetic call."""
    made = HandMade(tmp_path)
    agent = "a0123456789abcdef"
    made.prompt(MAIN_STREAM, "p1", "fix the tests")
    chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1")])
    made.request("p1", "req_1", model="claude-haiku-4-5")  # a title: no call carries its pair
    made.response("req_title", "msg_title")
    made.prompt(MAIN_STREAM, "p2", "now the docs")
    made.call(MAIN_STREAM, "msg_2", "req_2", tool_uses=("toolu_1",))
    made.request("p2", "req_1")
    made.response(
        "req_2",
        "msg_2",
        usage={"input_tokens": 4, "cache_read_input_tokens": 900, "output_tokens": 77},
        stop_reason="tool_use",
    )
    made.prompt(agent, None, "look around")
    chain(made, agent, "p2", [("msg_s1", "req_s1"), ("msg_s2", "req_s2")])
    made.agent_result(MAIN_STREAM, "toolu_1", agent, "p2")
    made.call(MAIN_STREAM, "msg_3", "req_3")
    made.request("p2", "req_2")  # its response never landed
    made.call(MAIN_STREAM, "1f0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c", model="<synthetic>", texts=1)
    made.request(None, "req_2")  # a compaction request names no prompt
    made.compaction(MAIN_STREAM, "The summary.")
    return made, made.land()


def test_the_document_describes_the_session_by_reference(tmp_path: Path) -> None:
    _made, store = made_session(tmp_path)
    doc = build_view(store.session(SESSION))
    assert doc["schema"] == "asz.view/1"
    session = doc["session"]
    assert session["id"] == SESSION
    assert session["directories"] == {"projects": ["-home-dev-proj"], "cwds": ["/home/dev/proj"]}
    assert session["first_time"] == "2026-09-01T10:00:01.000Z"
    assert session["last_time"] is not None and session["last_time"] > session["first_time"]
    assert session["models"] == ["claude-opus-4-6"]
    assert session["counts"]["calls"] == 6
    assert session["counts"]["synthetic_calls"] == 1
    assert (session["counts"]["requests"], session["counts"]["responses"]) == (7, 5)

    main, sub = doc["streams"]
    assert (main["id"], main["started_by"], main["gap"]) == (MAIN_STREAM, None, None)
    assert sub["id"] == "a0123456789abcdef"
    assert sub["started_by"] == {
        "stream": MAIN_STREAM,
        "message_id": "msg_2",
        "tool_use_id": "toolu_1",
        "prompt_id": "p2",
    }

    calls = {call["message_id"]: call for call in doc["calls"]}
    assert [call["message_id"] for call in doc["calls"]] == [
        "msg_1", "msg_2", "msg_3", "1f0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c", "msg_s1", "msg_s2",
    ]  # fmt: skip
    second = calls["msg_2"]
    assert (second["stream"], second["request_id"], second["prompt_id"]) == (
        MAIN_STREAM, "req_2", "p2",
    )  # fmt: skip
    assert second["usage"] == {"input_tokens": 4, "cache_read_input_tokens": 900,
                               "output_tokens": 77}  # fmt: skip
    assert second["stop_reason"] == "tool_use"
    assert [body["role"] for body in second["provider_bodies"]] == ["request", "response"]
    assert calls["msg_s1"]["prompt_id"] is None  # the subagent's lines carry no prompt
    assert [b["role"] for b in calls["msg_s1"]["provider_bodies"]] == ["request", "response"]
    assert [b["role"] for b in calls["msg_3"]["provider_bodies"]] == ["request"]
    assert calls["msg_3"]["usage"] is None
    synthetic = calls["1f0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c"]
    assert synthetic["synthetic"] and synthetic["provider_bodies"] == []

    assert doc["epochs"] == [
        {
            "type": "epoch.boundary",
            "stream": MAIN_STREAM,
            "uuid": doc["epochs"][0]["uuid"],
            "time": doc["epochs"][0]["time"],
            "trigger": "manual",
            "pre_tokens": 1234,
            "summary": "The summary.",
        }
    ]
    summary = doc["summary"]
    assert (summary["calls"], summary["bodies_landed"]) == (6, 12)
    assert (summary["requests_joined"], summary["responses_joined"]) == (5, 4)
    assert summary["calls_with_both"] == 4
    assert summary["unjoined_by_reason"] == {"no call names it": 2, "names no prompt": 1}
    assert {item["role"] for item in summary["unjoined"]} == {"request", "response"}
    assert doc["problems"] == []


def test_every_reference_names_the_landed_record_and_no_body_is_carried(tmp_path: Path) -> None:
    _made, store = made_session(tmp_path)
    session = store.session(SESSION)
    doc = build_view(session)
    files = {name.name: name for name in session.landed(BODY_KIND)}
    refs = [body for call in doc["calls"] for body in call["provider_bodies"]]
    assert len(refs) == 9
    for body in refs:
        landed = session.read(files[body["ref"]["file"]])
        assert landed.seq == body["ref"]["seq"]
        meta = landed.records[body["ref"]["row"] - 1].meta
        assert (meta["id"], meta["role"]) == (body["id"], body["role"])
    text = orjson.dumps(doc)
    assert SYSTEM_PROMPT.encode() not in text
    assert b"fix the tests" not in text
    assert b"x-anthropic-billing-header" not in text


def test_the_view_rebuilds_no_request(tmp_path: Path) -> None:
    """With the file holding the first request lost, later requests no longer rebuild;
    the view still lists them, and rebuilds the responses, even one naming a piece that only
    a request holds."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    made.request("p1")
    store = made.land()
    lost = store.session(SESSION).landed(BODY_KIND)
    made.response("req_1", "msg_1")
    quoted = "a long quoted passage " * 60
    made.call(MAIN_STREAM, "msg_2", "req_2")
    second = made.request("p1", "req_1", [user_message("do it"), user_message(quoted)])
    made.response("req_2", "msg_2", content=[{"type": "text", "text": quoted}])
    made.land()
    for name in lost:
        (Path(store.location) / name.path).unlink()
    with pytest.raises((BodyNotFound, CodecError)):
        store.session(SESSION).body(second)

    session = store.session(SESSION)
    doc = build_view(session)
    [problem] = doc["problems"]
    assert problem.endswith("the session is incomplete"), "a file lost from the sequence"
    [call] = [call for call in doc["calls"] if call["message_id"] == "msg_2"]
    assert [body["id"] for body in call["provider_bodies"]] == [second, "req_2.response"]
    assert call["usage"] == {"input_tokens": 5, "output_tokens": 7}
    response = session.read(session.landed(BODY_KIND)[0]).records[-1]
    assert any(seg[0] == "ref" for seg in response.meta["segs"])


def test_real_transcripts_with_a_subagent_and_a_compaction(
    tmp_path: Path, samples: Path, run_asz: Any
) -> None:
    claude = tmp_path / "claude"
    store = land_sample(tmp_path, run_asz, samples / "transcripts" / "v2.1.39-subagents-dir")
    session = "4d5611e5-241a-462a-8d15-5122611a9569"
    doc = build_view(store.session(session))

    # Every distinct message id of the assistant lines is one call, in its own stream.
    expected: Counter[str] = Counter()
    for path in (claude / "projects").rglob("*.jsonl"):
        stream = "main" if path.name == f"{session}.jsonl" else path.stem.removeprefix("agent-")
        ids = {
            line["message"]["id"]
            for line in map(orjson.loads, path.read_bytes().splitlines())
            if line.get("type") == "assistant"
        }
        expected.update({stream: len(ids)})
    assert Counter(call["stream"] for call in doc["calls"]) == expected
    streams = {stream["id"]: stream for stream in doc["streams"]}
    assert set(streams) == {"main", "a2898e3", "acompact-e1f845"}
    assert all(stream["gap"] is None for stream in streams.values())
    start = streams["a2898e3"]["started_by"]
    assert start is not None and start["stream"] == "main"
    starter = next(call for call in doc["calls"] if call["message_id"] == start["message_id"])
    assert starter["stream"] == "main"
    [epoch] = doc["epochs"]
    assert (epoch["stream"], epoch["trigger"]) == ("main", "auto")
    assert epoch["summary"].startswith("This session is being continued")
    assert doc["session"]["directories"]["cwds"] == [
        "/home/USER/projects/spotter-worktrees/spotter-dov"
    ]
    assert doc["summary"]["bodies_landed"] == 0


def check_synth_view(store: Store, expected: dict) -> None:
    """Every join expected.json states is made, at the right call, and no other."""
    for session in expected["sessions"]:
        doc = build_view(store.session(session["id"]))
        assert doc["problems"] == []
        listed = {
            body["id"]: (call["message_id"], body["role"])
            for call in doc["calls"]
            for body in call["provider_bodies"]
        }
        truth = {}
        for call in session["calls"]:
            truth[call["request"]] = truth[call["response"]] = call["message_id"]
        bodies = [body for body in expected["bodies"] if body["session"] == session["id"]]
        for body in bodies:
            if body["joins"]:
                assert listed[body["id"]] == (truth[body["id"]], body["role"]), body["id"]
            else:
                assert body["id"] not in listed, body
        both = {
            call["message_id"]
            for call in session["calls"]
            if all(b["joins"] for b in bodies if b["id"] in (call["request"], call["response"]))
        }
        for call in doc["calls"]:
            if call["message_id"] in both:
                assert [b["role"] for b in call["provider_bodies"]] == ["request", "response"]
                assert call["usage"] is not None and call["stop_reason"] is not None
        unjoined = {item["id"] for item in doc["summary"]["unjoined"]}
        landed = {b["id"] for b in bodies if b["role"] == "request" or b["claim"] is not None}
        side_calls = {b["id"] for b in bodies if b["kind"] in ("title", "compaction")}
        assert side_calls & landed
        assert side_calls & landed <= unjoined
        streams = {stream["id"]: stream for stream in doc["streams"]}
        for stream in session["streams"]:
            if stream["kind"] == "subagent":
                start = streams[stream["stream"]]["started_by"]
                assert (start["message_id"], start["tool_use_id"]) == (
                    stream["parent_message_id"],
                    stream["tool_use_id"],
                )
        assert len(doc["epochs"]) == len(session["compactions"])
        assert all(epoch["summary"] for epoch in doc["epochs"])


def test_a_synthetic_capture_joins_exactly_as_expected(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, subagents=2))
    assert any(
        stream["kind"] == "subagent" for s in expected["sessions"] for stream in s["streams"]
    )
    check_synth_view(store, expected)


def test_a_synthetic_capture_with_its_index_joins_as_expected(tmp_path: Path, run_asz: Any) -> None:
    options = SynthOptions(seed=9, sessions=1, subagents=2, uuid_responses=2, index=True)
    store, expected = land_synth(tmp_path, run_asz, options)
    check_synth_view(store, expected)
    doc = build_view(store.session(expected["sessions"][0]["id"]))
    assert doc["summary"]["requests_joined_through_index"] == doc["summary"]["requests_joined"]


def test_a_view_without_its_responses_is_the_view_less_their_usage_and_stop_reason(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, subagents=2))
    for session in expected["sessions"]:
        whole = build_view(store.session(session["id"]))
        bare = build_view(store.session(session["id"]), responses=False)
        assert any(call["usage"] for call in whole["calls"])
        assert all(c["usage"] is None and c["stop_reason"] is None for c in bare["calls"])
        for call in whole["calls"]:
            call["usage"] = call["stop_reason"] = None
        assert bare == whole


# -- the timeline ``asz view`` prints -----------------------------------------------------


def _clock(stamp: str) -> str:
    return stamp[11:19]


def test_asz_view_prints_a_timeline_and_the_document_behind_json(
    tmp_path: Path, run_asz: Any
) -> None:
    _made, store = made_session(tmp_path)
    doc = build_view(store.session(SESSION))
    root = str(Path(store.location))
    result = run_asz("view", "--root", root, SESSION, env={"COLUMNS": "200"})
    assert result.returncode == 0, result.stderr
    text = result.stdout.decode()
    lines = text.splitlines()
    words = [line.split() for line in lines]
    assert lines[0] == f"session {SESSION}"
    assert "{" not in text

    [started] = [line for line in lines if line.startswith("  a0123456789abcdef ")]
    assert "2 calls" in started and "started by call 2" in started
    rows = {}
    for call in doc["calls"]:
        head = [str(call["n"]), _clock(call["time"]), call["stream"], call["model"]]
        [row] = [line for line in words if line[:4] == head]
        rows[call["message_id"]] = row
        for body in call["provider_bodies"]:
            assert [body["role"], body["id"]] in words, body
    # The wide table: input, cache read, cache write, output, stop, from the joined response.
    assert rows["msg_2"][4:] == ["4", "900", "-", "77", "tool_use"]
    assert rows["msg_3"][4:] == ["-", "-", "-", "-", "-"], "its response never landed"
    printed = [row[1] for row in words if row and row[0].isdigit() and len(row) > 4]
    assert printed == sorted(printed), "calls in time, the subagent's among the main's"
    assert "compaction (manual, 1,234 tokens before)" in text
    assert "written by Claude Code, never sent" in text
    for body in doc["summary"]["unjoined"]:
        assert [body["id"]] in words

    as_json = run_asz("view", "--root", root, SESSION, "--json")
    assert as_json.returncode == 0
    assert orjson.loads(as_json.stdout) == orjson.loads(orjson.dumps(doc))


def _ids(doc: dict[str, Any]) -> set[str]:
    """Every id a person copies out of the timeline."""
    ids = {body["id"] for call in doc["calls"] for body in call["provider_bodies"]}
    return ids | {body["id"] for body in doc["summary"]["unjoined"]} | {doc["session"]["id"]}


@pytest.mark.slow
def test_the_timeline_fits_the_terminal_and_never_cuts_an_id(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, subagents=2))
    for session in expected["sessions"]:
        ids = _ids(build_view(store.session(session["id"])))
        for width in (200, 100, 80, 60, 40):
            args = ("view", "--root", str(Path(store.location)), session["id"])
            text = run_asz(*args, env={"COLUMNS": str(width)}).stdout.decode()
            lines = text.splitlines()
            tokens = {token for line in lines for token in line.split()}
            assert ids <= tokens, (width, ids - tokens)
            if width >= 80:
                assert max(len(line) for line in lines) <= width, width
            # Narrower, only a piece that cannot be broken (an id, a path) may overflow.
            assert all(len(line) <= width or len(line.split()[-1]) >= 20 for line in lines)
            # The token counts have their columns when they fit, else a line under each call.
            wide = any(line.split()[:2] == ["#", "time"] and "cache" in line for line in lines)
            assert wide == ("tokens    input" not in text), width
            assert wide or width < 200
        assert "tokens    input" in text, "at 40 columns the counts have a line of their own"


@pytest.mark.slow
def test_on_a_terminal_the_timeline_is_as_wide_as_the_terminal(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5))
    session = expected["sessions"][0]["id"]
    args = ["view", "--root", str(Path(store.location)), session]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    code, shown, _err = on_a_terminal(args, env, "stdout", columns=90)
    assert code == 0
    assert max(len(line) for line in shown.splitlines()) <= 90
    assert "tokens    input" in shown, "90 columns are too few for the wide table"


def test_what_claude_code_wrote_cannot_drive_the_terminal(tmp_path: Path, run_asz: Any) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1", model="evil\x1b[2J\x07")
    store = made.land()
    result = run_asz("view", "--root", str(Path(store.location)), SESSION)
    assert result.returncode == 0, result.stderr
    assert b"\x1b" not in result.stdout and b"\x07" not in result.stdout
    assert b"evil\\x1b[2J\\x07" in result.stdout


@pytest.mark.slow
@settings(max_examples=60, deadline=None)
@given(width=st.integers(min_value=1, max_value=260))
def test_any_width_keeps_every_id_whole(width: int) -> None:
    with tempfile.TemporaryDirectory() as directory:
        _made, store = made_session(Path(directory))
        doc = build_view(store.session(SESSION))
    lines = format_timeline(doc, width).splitlines()
    assert _ids(doc) <= {token for line in lines for token in line.split()}
    assert width < 80 or max(len(line) for line in lines) <= width
