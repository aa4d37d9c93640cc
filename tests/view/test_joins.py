"""The body-to-call joins, rule by rule, on small sessions landed through the store.

``HandMade`` (``support.handmade``) writes transcript lines and bodies the way Claude Code
does and lands them with the real lander and body store, so every test reads what a real
root would hold. The other view tests build their sessions with it too.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.handmade import PROJECT, SESSION, HandMade, chain

from asz.bodykeys import BodyKeys
from asz.store import MAIN_STREAM, BodyManifest, Store, TranscriptLine
from asz.view.calls import read_transcript
from asz.view.joins import (
    AMBIGUOUS,
    GAP,
    NO_CALL,
    NO_PROMPT,
    SYNTHETIC,
    TAKEN,
    join,
    join_session,
)


def joined_pairs(store: Store, session: str = SESSION) -> dict[str, tuple[str | None, str | None]]:
    """Message id -> (joined request record id, joined response record id)."""
    joined = join_session(store.session(session))
    joins = joined.joins
    return {
        message_id: (joins.request_of.get(message_id), joins.response_of.get(message_id))
        for message_id in joined.transcript.calls
    }


def test_a_chain_joins_each_call_to_its_request_and_its_response(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    first = chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    made.prompt(MAIN_STREAM, "p2")
    second = chain(made, MAIN_STREAM, "p2", [("msg_3", "req_3")], prev="req_2")
    pairs = joined_pairs(made.land())
    assert pairs == {
        "msg_1": (first[0], "req_1.response"),
        "msg_2": (first[1], "req_2.response"),
        "msg_3": (second[0], "req_3.response"),
    }


def test_a_subagent_matches_the_prompt_of_the_parent_call_that_started_it(
    tmp_path: Path,
) -> None:
    made = HandMade(tmp_path)
    agent = "a0123456789abcdef"
    made.prompt(MAIN_STREAM, "p0")
    chain(made, MAIN_STREAM, "p0", [("msg_0", "req_0")])
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1", tool_uses=("toolu_1",))
    main_first = made.request("p1", "req_0")
    made.response("req_1", "msg_1")
    made.prompt(agent, None, "look around")
    sub = chain(made, agent, "p1", [("msg_s1", "req_s1"), ("msg_s2", "req_s2")])
    made.agent_result(MAIN_STREAM, "toolu_1", agent, "p1")
    made.call(MAIN_STREAM, "msg_2", "req_2")
    main_second = made.request("p1", "req_1")
    made.response("req_2", "msg_2")
    store = made.land()
    pairs = joined_pairs(store)
    assert pairs["msg_1"] == (main_first, "req_1.response")
    assert pairs["msg_s1"] == (sub[0], "req_s1.response")
    assert pairs["msg_s2"] == (sub[1], "req_s2.response")
    assert pairs["msg_2"] == (main_second, "req_2.response")
    stream = join_session(store.session(SESSION)).transcript.streams[agent]
    assert stream.started_by is not None
    assert (stream.started_by.message_id, stream.started_by.tool_use_id) == ("msg_1", "toolu_1")


def test_a_retried_request_is_two_requests_with_the_same_ids_and_neither_joins(
    tmp_path: Path,
) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    tried = made.request("p1")
    retried = made.request("p1")
    made.response("req_1", "msg_1")
    joined = join_session(made.land().session(SESSION))
    assert joined.joins.request_of == {}
    assert joined.joins.response_of == {"msg_1": "req_1.response"}
    for record_id in (tried, retried):
        assert joined.joins.unjoined[record_id].reason == AMBIGUOUS


def test_the_index_names_which_of_two_retried_requests_was_answered(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    tried = made.request("p1")
    retried = made.request("p1")
    made.response("req_1", "msg_1")
    made.index_line(retried, "req_1.response", "msg_1")
    joined = join_session(made.land().session(SESSION))
    assert joined.joins.request_of == {"msg_1": retried}
    assert joined.joins.via_index == {retried}
    assert joined.joins.unjoined[tried].reason == TAKEN


def test_first_calls_of_two_streams_under_one_prompt_join_no_request(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1", tool_uses=("toolu_a", "toolu_b"))
    made.request("p1")
    made.response("req_1", "msg_1")
    firsts = []
    for agent, tool_use in (("a1111111111111111", "toolu_a"), ("a2222222222222222", "toolu_b")):
        made.prompt(agent, None, "look")
        firsts.append(chain(made, agent, "p1", [(f"msg_{agent}", f"req_{agent}")])[0])
        made.agent_result(MAIN_STREAM, tool_use, agent, "p1")
    joined = join_session(made.land().session(SESSION))
    for record_id in firsts:
        assert record_id not in joined.joins.call_of
        assert joined.joins.unjoined[record_id].reason == AMBIGUOUS
    # Their responses still join, and so does the main stream's first request, whose
    # previous request is none but whose stream is another.
    assert set(joined.joins.response_of) == {
        "msg_1",
        *(f"msg_{a}" for a in ("a1111111111111111", "a2222222222222222")),
    }


def test_a_stream_with_a_gap_joins_no_request_but_its_responses(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    records = chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    store = made.land(gap_in=MAIN_STREAM)
    joined = join_session(store.session(SESSION))
    assert joined.transcript.streams[MAIN_STREAM].gap is not None
    assert joined.joins.request_of == {}
    assert joined.joins.response_of == {"msg_1": "req_1.response", "msg_2": "req_2.response"}
    assert {joined.joins.unjoined[r].reason for r in records} == {GAP}


def test_an_index_line_joins_a_request_even_in_a_stream_with_a_gap(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    records = chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    made.index_line(records[1], "req_2.response", "msg_2")
    joined = join_session(made.land(gap_in=MAIN_STREAM).session(SESSION))
    assert joined.joins.request_of == {"msg_2": records[1]}
    assert joined.joins.unjoined[records[0]].reason == GAP


def test_the_same_session_without_the_gap_joins_every_request(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    records = chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    joined = join_session(made.land().session(SESSION))
    assert joined.transcript.streams[MAIN_STREAM].gap is None
    assert joined.joins.request_of == {"msg_1": records[0], "msg_2": records[1]}


def test_a_synthetic_call_is_kept_out_and_is_not_the_call_before(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    first = made.request("p1")
    made.response("req_1", "msg_1")
    made.call(MAIN_STREAM, "0e0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c", model="<synthetic>", texts=1)
    made.response(None, "0e0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c")
    made.prompt(MAIN_STREAM, "p2")
    made.call(MAIN_STREAM, "msg_2", "req_2")
    second = made.request("p2", "req_1")
    made.response("req_2", "msg_2")
    joined = join_session(made.land().session(SESSION))
    synthetic = joined.transcript.calls["0e0b8c4f-5a7e-4f4e-9a51-7a0a0f0e0b8c"]
    assert synthetic.synthetic
    assert joined.joins.request_of == {"msg_1": first, "msg_2": second}
    assert set(joined.joins.response_of) == {"msg_1", "msg_2"}
    reasons = {why.reason for why in joined.joins.unjoined.values()}
    assert reasons == {SYNTHETIC}


def test_title_and_compaction_requests_stay_unjoined(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    records = chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1")])
    title = made.request("p1", "req_title_prev", model="claude-haiku-4-5")
    made.response("req_title", "msg_title")
    compaction = made.request(None, "req_1")
    made.response("req_compact", "msg_compact")
    made.compaction(MAIN_STREAM, "Summary of the work so far.")
    made.prompt(MAIN_STREAM, "p2")
    after = chain(made, MAIN_STREAM, "p2", [("msg_2", "req_2")], prev="req_1")
    joined = join_session(made.land().session(SESSION))
    assert joined.joins.request_of == {"msg_1": records[0], "msg_2": after[0]}
    unjoined = joined.joins.unjoined
    assert unjoined[title].reason == NO_CALL
    assert unjoined[compaction].reason == NO_PROMPT
    assert unjoined["req_title.response"].reason == NO_CALL
    assert unjoined["req_compact.response"].reason == NO_CALL
    epoch = joined.transcript.epochs[0]
    assert epoch.summary == "Summary of the work so far."


def test_the_call_after_one_without_a_response_carries_no_pair(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    first = made.request("p1")
    made.call(MAIN_STREAM, "msg_2", "req_2")
    second = made.request("p1", "req_1")
    made.response("req_2", "msg_2")
    joined = join_session(made.land().session(SESSION))
    assert joined.joins.request_of == {"msg_1": first}
    assert joined.joins.unjoined[second].reason == NO_CALL


def test_two_responses_with_one_message_id_join_neither(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    made.request("p1")
    made.response("req_1", "msg_1")
    made.response("req_1b", "msg_1")
    joined = join_session(made.land().session(SESSION))
    assert joined.joins.response_of == {}
    assert joined.joins.unjoined["req_1.response"].reason == AMBIGUOUS
    assert joined.joins.unjoined["req_1b.response"].reason == AMBIGUOUS


# The join as a pure function: whatever is missing or repeated, no join is ever wrong.


@dataclass
class _Truth:
    lines: list[TranscriptLine]
    bodies: dict[str, BodyManifest]
    owner: dict[str, str]  # record id -> the message id it truly belongs to


def _line(stream: str, n: int, value: dict[str, Any], offset: int) -> TranscriptLine:
    data = orjson.dumps(value) + b"\n"
    return TranscriptLine(stream, f"{PROJECT}/{stream}.jsonl", n, offset, data)


def _manifest(record_id: str, role: str, keys: BodyKeys, row: int) -> BodyManifest:
    return BodyManifest(record_id, role, keys, f"{record_id}.json", 1, "0" * 64, "f", 1, row)


@st.composite
def _sessions(draw: st.DrawFn) -> _Truth:
    """Streams of calls over a few prompts, then some bodies lost, repeated or retried."""
    lines: list[TranscriptLine] = []
    bodies: dict[str, BodyManifest] = {}
    owner: dict[str, str] = {}
    streams = draw(st.integers(1, 3))
    prompts = [f"p{n}" for n in range(draw(st.integers(1, 3)))]
    for s in range(streams):
        stream = MAIN_STREAM if s == 0 else f"a{s:016x}"
        offset, number, prev = 0, 1, ""
        prompt = None
        for c in range(draw(st.integers(1, 5))):
            if stream == MAIN_STREAM or prompt is None:
                prompt = draw(st.sampled_from(prompts))
            user = {"type": "user", "promptId": prompt}
            for value in (user, {"type": "assistant", "message": {"id": f"m{s}.{c}"}}):
                lines.append(_line(stream, number, value, offset))
                offset += len(lines[-1].data)
                number += 1
            message_id, request_id = f"m{s}.{c}", f"r{s}.{c}"
            copies = draw(st.sampled_from([0, 1, 1, 1, 2]))
            for k in range(copies):
                rid = f"q{s}.{c}.{k}"
                keys = BodyKeys(prompt=prompt, prev_request=prev or None)
                bodies[rid] = _manifest(rid, "request", keys, len(bodies) + 1)
                owner[rid] = message_id
            if draw(st.booleans()) or c == 0:
                rid = f"{request_id}.response"
                keys = BodyKeys(message_id=message_id, request_id=request_id)
                bodies[rid] = _manifest(rid, "response", keys, len(bodies) + 1)
                owner[rid] = message_id
            prev = request_id
    return _Truth(lines, bodies, owner)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_sessions())
def test_no_join_is_ever_wrong(truth: _Truth) -> None:
    transcript = read_transcript(truth.lines)
    joins = join(transcript, truth.bodies, [])
    for record_id, message_id in joins.call_of.items():
        assert truth.owner[record_id] == message_id
    for record_id in truth.bodies:
        assert (record_id in joins.call_of) != (record_id in joins.unjoined)


@given(st.integers(1, 12), st.sets(st.integers(1, 12)))
def test_a_gap_is_seen_wherever_a_landed_line_is_missing(count: int, missing: set[int]) -> None:
    """Lines lost anywhere before the last landed one make a gap; losing only the newest
    lines cannot be told from lines not written yet."""
    lines, offset = [], 0
    for n in range(1, count + 1):
        line = _line(MAIN_STREAM, n, {"type": "user", "promptId": f"p{n}"}, offset)
        offset += len(line.data)
        if n not in missing:
            lines.append(line)
    transcript = read_transcript(lines)
    kept = [line.line for line in lines]
    whole = kept == list(range(1, len(kept) + 1))
    stream = transcript.streams.get(MAIN_STREAM)
    assert (stream is None or stream.gap is None) == whole
