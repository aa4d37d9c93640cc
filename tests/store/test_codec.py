"""Bodies cut against their session rebuild exactly, and records that do not hold are refused."""

from __future__ import annotations

import copy
import functools
import hashlib
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.bodies import (
    LONG_TEXT,
    MAIN_REMINDER,
    ODD_SCALAR,
    PLAIN_SCALAR,
    SPACING,
    Call,
    Chain,
    JsonWriter,
    Obj,
    filler,
    growing,
    interleaved,
    values,
)

from asz.bodykeys import BodyKeys, read_keys
from asz.store._codec import (
    MAX_DEPTH,
    MAX_TIPS,
    MIN_COPY,
    OTHER_TIPS,
    CodecError,
    IdConflict,
    Record,
    Repeat,
    SessionBodies,
    chain_of,
    common_prefix,
)
from asz.store._held import HeldBodies


def land(held: SessionBodies, record_id: str, body: bytes, role: str = "request") -> Record:
    """Encode, write the manifest as JSON and read it back, then add: what landing does."""
    keys = read_keys(role, record_id.rsplit(".", 1)[0], body)
    record = reread(held.encode(record_id, role, record_id + ".json", body, keys))
    held.add(record)
    return record


def reread(record: Record) -> Record:
    return Record(meta=orjson.loads(orjson.dumps(record.meta)), payload=bytes(record.payload))


def copied_from(record: Record) -> str | None:
    first = record.meta["segs"][0]
    return first[1] if first[0] == "copy" else None


def landed_size(record: Record) -> int:
    return len(record.payload) + len(orjson.dumps(record.meta))


# -- chains of real-shaped requests ------------------------------------------------------------


def land_interleaved(shared_reminder: bool) -> tuple[list[Call], list[Record]]:
    """Every request and response of the interleaved calls, landed in one session in order."""
    held = SessionBodies()
    calls = interleaved(shared_reminder)
    records = []
    for call in calls:
        records.append(land(held, f"{call.number}.request", call.request))
        records.append(land(held, f"{call.request_id}.response", call.response, "response"))
    return calls, records


@pytest.mark.parametrize("shared_reminder", [False, True])
def test_a_copy_follows_its_own_chain_across_interleaved_calls(shared_reminder: bool) -> None:
    calls, records = land_interleaved(shared_reminder)
    requests = {call.number: record for call, record in zip(calls, records[::2], strict=True)}
    bases = {n: copied_from(record) for n, record in requests.items()}
    expected = {2: "1", 4: "3", 5: "2", 6: "4", 7: "5", 9: "8"}
    assert {n: bases[n] for n in expected} == {n: f"{b}.request" for n, b in expected.items()}
    if not shared_reminder:
        assert bases[1] is None
        assert bases[3] is None
    assert requests[1].meta["chain"] == requests[7].meta["chain"] != requests[3].meta["chain"]
    assert requests[8].meta["chain"] != requests[7].meta["chain"]  # a compaction starts anew


@pytest.mark.parametrize("shared_reminder", [False, True])
def test_records_fed_in_order_to_a_fresh_session_rebuild_everything(shared_reminder: bool) -> None:
    calls, records = land_interleaved(shared_reminder)
    fresh = SessionBodies(cache_bytes=0)
    for record in records:
        fresh.add(reread(record))
    for call in calls:
        assert fresh.rebuild(f"{call.number}.request") == call.request
        assert fresh.rebuild(f"{call.request_id}.response") == call.response
    raw = sum(len(c.request) + len(c.response) for c in calls)
    assert sum(landed_size(r) for r in records) < raw / 2


def test_a_chain_of_copies_stops_at_max_depth_and_reaches_it() -> None:
    held = SessionBodies()
    bodies = growing(MAX_DEPTH + 5)
    records = [land(held, f"{i}.request", body) for i, body in enumerate(bodies)]
    depths = [record.meta["depth"] for record in records]
    assert max(depths) == MAX_DEPTH
    assert depths[: MAX_DEPTH + 1] == list(range(MAX_DEPTH + 1))
    assert depths[MAX_DEPTH + 1] == 0
    # Without a cache every rebuild walks its copies down to depth 0 and back up.
    cold = SessionBodies(cache_bytes=0)
    for record in records:
        cold.add(reread(record))
    assert [cold.rebuild(f"{i}.request") for i in range(len(bodies))] == bodies


def test_the_own_chain_goes_first_and_only_the_latest_other_chains_are_compared() -> None:
    held = SessionBodies()
    reminders = [f"{i} " + filler(f"reminder{i}", 6000) for i in range(OTHER_TIPS + 2)]
    for i, reminder in enumerate(reminders):
        land(held, f"c{i}.request", Chain(reminder, "first").request(prompt_id="p"))
    # New chains sharing a long front with the oldest chain, and with the newest.
    old = land(held, "x.request", Chain(reminders[0], "other").request(prompt_id="p"))
    new = land(held, "y.request", Chain(reminders[-1], "other").request(prompt_id="p"))
    assert copied_from(old) is None
    assert copied_from(new) == f"c{len(reminders) - 1}.request"


def test_a_tie_goes_to_the_own_chain() -> None:
    held = SessionBodies()
    shared = orjson.dumps(["short"] * 800)  # a long front with no piece in it

    def body(pad: str, first: str) -> bytes:
        return b'{"pad":' + shared + f',"{pad}":1,"messages":["{first}"]}}'.encode()

    land(held, "own.request", body("x", "one"))
    land(held, "other.request", body("y", "two"))  # the most recently extended chain
    record = land(held, "next.request", body("z", "one"))
    assert copied_from(record) == "own.request"


def test_a_copy_never_ends_inside_a_piece() -> None:
    held = SessionBodies()
    first = "a" * 5000
    land(held, "0.request", orjson.dumps({"a": first, "b": "b" * 3000, "messages": ["m"]}))
    body = orjson.dumps({"a": first, "b": "b" * 1500 + "c" * 1500, "messages": ["m"]})
    record = land(held, "1.request", body)
    token_start = body.index(b'"bbb')
    assert record.meta["segs"][0] == [
        "copy",
        "0.request",
        held.digest("0.request"),
        token_start,
    ]
    kinds = [seg[0] for seg in record.meta["segs"]]
    assert kinds == ["copy", "new", "lit"]
    assert record.payload == orjson.dumps("b" * 1500 + "c" * 1500) + b',"messages":["m"]}'


def test_a_request_ending_as_its_base_ends_names_that_end_in_one_suffix_segment() -> None:
    held = SessionBodies()
    bodies = growing(4)
    records = [land(held, f"{i}.request", body) for i, body in enumerate(bodies)]
    for i, record in enumerate(records[1:], start=1):
        segs = record.meta["segs"]
        assert segs[0][:2] == ["copy", f"{i - 1}.request"]
        assert segs[-1][0] == "suffix"
        assert "ref" not in [seg[0] for seg in segs]  # the tools lie in the shared end
        shared = bodies[i - 1][-segs[-1][1] :]
        assert bodies[i].endswith(shared) and len(shared) >= MIN_COPY
        assert len(record.payload) < 2 * (len(bodies[i]) - len(bodies[i - 1]))
    cold = SessionBodies(cache_bytes=0)
    for record in records:
        cold.add(reread(record))
    assert [cold.rebuild(f"{i}.request") for i in range(len(bodies))] == bodies
    end = len(bodies[3])
    assert cold.span("3.request", end - 9000, end - 10) == bodies[3][-9000:-10]


SUFFIXED = growing(3)


@functools.cache
def suffixed_cold() -> HeldBodies:
    """The ``SUFFIXED`` requests held as a reader of spans holds them, nothing cached."""
    cold = HeldBodies(cache_bytes=0, rebuild_checked=False)
    held = SessionBodies()
    for i, body in enumerate(SUFFIXED):
        cold.add(reread(land(held, f"{i}.request", body)))
    return cold


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_any_span_of_a_body_ending_in_a_suffix_is_its_bytes(data: st.DataObject) -> None:
    cold = suffixed_cold()
    body = SUFFIXED[-1]
    start = data.draw(st.integers(0, len(body) + 10))
    end = data.draw(st.integers(0, len(body) + 10))
    assert cold.span("2.request", start, end) == body[start:end]


def test_a_suffix_never_starts_inside_a_piece() -> None:
    held = SessionBodies()
    tail = "t" * 5000
    land(held, "0.request", orjson.dumps({"messages": ["m" * 5000, "a" * 3000], "z": tail}))
    body = orjson.dumps({"messages": ["m" * 5000, "b" * 1500 + "a" * 1500], "z": tail})
    record = land(held, "1.request", body)
    piece_end = body.index(b'"],"z"') + 1
    assert record.meta["segs"][-1] == ["suffix", len(body) - piece_end]
    assert [seg[0] for seg in record.meta["segs"]] == ["copy", "new", "suffix"]


def test_tips_are_bounded_to_the_most_recently_extended_chains() -> None:
    held = SessionBodies()
    chains = [Chain(f"{i} " + filler(f"tip{i}", 5000), "go") for i in range(MAX_TIPS + 1)]
    for i, chain in enumerate(chains):
        land(held, f"a{i}.request", chain.request(prompt_id="p"))
        chain.answer(f"req_{i}", "ok")
    # The first chain was dropped from the tips; the last one is still there.
    assert copied_from(land(held, "b0.request", chains[0].request(prompt_id="p"))) is None
    last = len(chains) - 1
    again = land(held, f"b{last}.request", chains[last].request(prompt_id="p"))
    assert copied_from(again) == f"a{last}.request"


# -- bodies that are odd or cannot be cut ------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"a":"\xff\xfe"}', "the body is not valid UTF-8"),
        (b'{"a":', "the body is not valid JSON"),
        (b'["a"]', "the body is not a JSON object"),
        (b"", "the body is not valid JSON"),
        (b"[" * 100_000 + b"]" * 100_000, "the body nests too deep to be checked"),
    ],
)
def test_a_body_that_cannot_be_cut_lands_whole_and_says_why(body: bytes, why: str) -> None:
    held = SessionBodies()
    record = land(held, "w.request", body)
    assert record.meta["why"] == why
    assert record.meta["depth"] == 0
    assert record.meta["blobs"] == [len(body)]
    assert record.meta["segs"] == [["lit", 0]]
    assert record.payload == body
    assert held.rebuild("w.request") == body


TOOL = b'{"name":"Read","description":"' + b"d" * 2000 + b'"}'
ODD_BODIES = {
    "pretty": b'{\n  "tools": [\n    {"name": "a", "description": "'
    + b"p" * 1500
    + b'"}\n  ]\n}\n',
    "not compact": b'{"tools": [ {"name": "a"} ]}',
    "duplicate keys": b'{"tools":[' + TOOL + b'],"tools":[' + TOOL + b',{"x":1}],"a":1,"a":2}',
    "unicode escapes": b'{"a":"\\u003C\\u003e\\u00e9\\ud83d\\ude00' + b"u" * 1200 + b'"}',
    "lone surrogate": b'{"a":"\\ud800' + b"s" * 1200 + b'"}',
    "big numbers": b'{"n":1E400,"m":-0,"f":1.0,"i":9007199254740993,"l":"' + b"n" * 1100 + b'"}',
    "escaped slash": b'{"a":"\\/path\\/to' + b"/" * 1300 + b'"}',
    "empty object": b"{}",
    "space around": b' \r\n\t{"a" : "' + b"w" * 1100 + b'" } \n',
}


def test_odd_but_valid_bodies_are_cut_and_rebuild_exactly() -> None:
    held = SessionBodies()
    land(held, "seed.request", b'{"tools":[' + TOOL + b"]}")
    records = {}
    for name, body in ODD_BODIES.items():
        record = records[name] = land(held, f"{name}.request", body)
        assert "why" not in record.meta, name
        assert held.rebuild(f"{name}.request") == body, name
    duplicate = records["duplicate keys"].meta
    kinds = [seg[0] for seg in duplicate["segs"]]
    assert kinds.count("ref") == 2  # the tool held by the seed, in both tools arrays


# -- records that do not hold ------------------------------------------------------------------


def two_records() -> tuple[SessionBodies, Record, Record, list[bytes]]:
    """A session holding a base request, and a later request that copies its front, refers to
    a piece of it and repeats its end."""
    held = SessionBodies()
    chain = Chain(MAIN_REMINDER, "Keep going.")
    bodies = [chain.request(prompt_id="p")]
    chain.answer("req_0", "Done.")
    chain.say(MAIN_REMINDER)  # a piece the base holds
    bodies.append(chain.request(prompt_id="p"))
    base = land(held, "0.request", bodies[0])
    later = reread(held.encode("1.request", "request", "1.request.json", bodies[1], BodyKeys()))
    kinds = [seg[0] for seg in later.meta["segs"]]
    assert copied_from(later) == "0.request"
    assert "ref" in kinds and kinds[-1] == "suffix"
    return held, base, later, bodies


def test_add_refuses_a_reference_to_something_not_held() -> None:
    held, _, later, _ = two_records()
    empty = SessionBodies()
    with pytest.raises(CodecError, match="does not hold"):
        empty.add(reread(later))
    no_copy = reread(later)
    no_copy.meta["segs"] = no_copy.meta["segs"][1:]
    no_copy.meta["depth"] = 0
    with pytest.raises(CodecError, match="piece the session does not hold"):
        empty.add(no_copy)
    assert len(empty) == 0
    held.add(later)
    assert held.rebuild("1.request")


def test_the_same_record_twice_is_a_repeat_and_other_bytes_a_conflict() -> None:
    held, base, later, bodies = two_records()
    with pytest.raises(Repeat):
        held.add(reread(base))
    with pytest.raises(Repeat):
        held.encode("0.request", "request", "0.request.json", bodies[0], BodyKeys())
    with pytest.raises(IdConflict):
        held.encode("0.request", "request", "0.request.json", bodies[1], BodyKeys())
    other = reread(later)
    other.meta["id"] = "0.request"
    with pytest.raises(IdConflict):
        held.add(other)
    assert len(held) == 1


def test_a_repeat_that_does_not_rebuild_is_damage_not_a_repeat() -> None:
    held, base, _, _ = two_records()
    damaged = reread(base)
    damaged.payload = b"X" + damaged.payload[1:]
    with pytest.raises(CodecError, match="digest"):
        held.add(damaged)


def lie(record: Record, change: str) -> Record:
    meta = copy.deepcopy(record.meta)
    payload = record.payload
    segs = meta["segs"]
    own = [i for i, seg in enumerate(segs) if seg[0] in ("lit", "new")]
    if change == "huge size":
        meta["size"] = 2**62
    elif change == "negative size":
        meta["size"] = -1
    elif change == "depth as bool":
        meta["depth"] = True  # equal to 1, the right depth, but not a number
    elif change == "depth past the limit":
        meta["depth"] = MAX_DEPTH + 1
    elif change == "depth without a copy":
        meta["segs"] = [["lit", 0]]
        meta["blobs"] = [len(payload)]
        meta["size"] = len(payload)
        meta["depth"] = 3
    elif change == "depth not the base's plus one":
        meta["depth"] = 2
    elif change == "negative blob length":
        meta["blobs"] = [-1, meta["blobs"][0] + 1, *meta["blobs"][1:]]
    elif change == "blobs short of the payload":
        payload += b"extra"
    elif change == "negative copy length":
        segs[0][3] = -1
    elif change == "copy longer than its base":
        segs[0][3] = 10**9
    elif change == "copy with another digest":
        segs[0][2] = "0" * 64
    elif change == "copy not first":
        segs.append(segs.pop(0))
    elif change == "suffix longer than its base":
        segs[-1][1] = 10**9
    elif change == "negative suffix":
        segs[-1][1] = -1
    elif change == "suffix not last":
        segs.insert(1, segs.pop())
    elif change == "suffix without a copy":
        meta["size"] -= segs.pop(0)[3]
        meta["depth"] = 0
    elif change == "blob index out of range":
        segs[own[0]][1] = len(meta["blobs"])
    elif change == "blob used twice":
        segs[own[1]][1] = segs[own[0]][1]
    elif change == "unknown segment":
        segs[own[0]][0] = "zip"
    elif change == "wrong digest":
        meta["sha256"] = "f" * 64
    elif change == "digest not hex":
        meta["sha256"] = "not a digest"
    elif change == "unknown key":
        meta["keys"]["colour"] = "blue"
    elif change == "no id":
        del meta["id"]
    elif change == "unknown role":
        meta["role"] = "reply"
    else:
        raise AssertionError(change)
    return Record(meta=meta, payload=payload)


LIES = [
    "huge size",
    "negative size",
    "depth as bool",
    "depth past the limit",
    "depth without a copy",
    "depth not the base's plus one",
    "negative blob length",
    "blobs short of the payload",
    "negative copy length",
    "copy longer than its base",
    "copy with another digest",
    "copy not first",
    "suffix longer than its base",
    "negative suffix",
    "suffix not last",
    "suffix without a copy",
    "blob index out of range",
    "blob used twice",
    "unknown segment",
    "wrong digest",
    "digest not hex",
    "unknown key",
    "no id",
    "unknown role",
]


@pytest.mark.parametrize("change", LIES)
def test_a_lying_record_is_refused(change: str) -> None:
    held, _, later, bodies = two_records()
    liar = lie(later, change)
    with pytest.raises(CodecError):
        held.add(liar)
    with pytest.raises(CodecError):
        held.check(liar)
    assert len(held) == 1
    held.add(later)  # the honest record still holds afterwards
    assert held.rebuild("1.request") == bodies[1]


@pytest.mark.parametrize("malformed", [None, [], {"id": 5}, {"segs": "lit"}])
def test_a_manifest_that_is_no_manifest_is_refused(malformed: Any) -> None:
    with pytest.raises(CodecError):
        SessionBodies().add(Record(meta=malformed, payload=b""))


def test_a_record_naming_a_piece_many_times_is_refused_without_building_it() -> None:
    held = SessionBodies()
    piece = b'"' + b"p" * (16 * 1024 - 2) + b'"'
    body = b'{"a":' + piece + b"}"
    land(held, "p.request", body)
    digest = hashlib.sha256(piece).hexdigest()
    base = {"role": "request", "src": "x", "depth": 0, "keys": {}, "blobs": []}
    tiny = {**base, "id": "tiny", "size": 2, "sha256": "0" * 64, "segs": [["ref", digest]] * 10_000}
    honest_size = 10_000 * len(piece)
    large = {**base, "id": "large", "size": honest_size, "sha256": "1" * 64}
    large["segs"] = [["ref", digest]] * 10_000
    tracemalloc.start()
    try:
        with pytest.raises(CodecError, match="more than the 2 bytes"):
            held.add(Record(meta=tiny, payload=b""))
        with pytest.raises(CodecError, match="digest"):
            held.add(Record(meta=large, payload=b""))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 8 * 1024 * 1024 < honest_size
    assert len(held) == 1


# -- what the session hands out ----------------------------------------------------------------


def test_a_body_handed_out_cannot_change_what_later_bodies_copy() -> None:
    held = SessionBodies()
    bodies = growing(3)
    land(held, "0.request", bodies[0])
    handed = held.rebuild("0.request")
    assert isinstance(handed, bytes)
    scratch = bytearray(handed)
    scratch[:] = b"X" * len(scratch)
    buffer = bytearray(bodies[1])
    record = held.encode("1.request", "request", "1.request.json", buffer, BodyKeys())
    buffer[:] = b"Y" * len(buffer)  # the caller reusing its buffer changes nothing held
    held.add(record)
    last = land(held, "2.request", bodies[2])
    assert [held.rebuild(f"{i}.request") for i in range(3)] == bodies
    assert copied_from(last) == "1.request"


def test_check_rebuilds_a_record_without_holding_it() -> None:
    held, _, later, bodies = two_records()
    assert held.check(later) == bodies[1]
    assert not held.holds("1.request")
    assert held.digest("0.request") == hashlib.sha256(bodies[0]).hexdigest()
    with pytest.raises(KeyError):
        held.digest("1.request")
    with pytest.raises(CodecError):
        held.rebuild("1.request")


def test_encode_refuses_a_role_it_does_not_know_and_keys_a_manifest_cannot_carry() -> None:
    with pytest.raises(CodecError):
        SessionBodies().encode("x.reply", "reply", "x", b"{}", BodyKeys())
    with pytest.raises(CodecError):
        SessionBodies().encode("x.request", "request", "x", b"{}", BodyKeys(model="\ud800"))


def test_the_chain_id_ignores_the_cache_marker_and_the_single_block_spelling() -> None:
    as_block = b'{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"t":1}}]}'
    as_string = b'{"content":"hi","role":"user"}'
    two_blocks = (
        b'{"role":"user","content":[{"type":"text","text":"hi"},{"type":"text","text":"x"}]}'
    )
    assert chain_of(as_block) == chain_of(as_string) != chain_of(two_blocks)
    assert len(chain_of(b"not json")) == 16


@given(a=st.binary(max_size=300), b=st.binary(max_size=300), shared=st.binary(max_size=5000))
def test_common_prefix_is_the_longest_shared_front(a: bytes, b: bytes, shared: bytes) -> None:
    x, y = shared + a, shared + b
    n = common_prefix(x, y)
    assert x[:n] == y[:n]
    assert n == min(len(x), len(y)) or x[n] != y[n]


# -- property: anything encodes and rebuilds, in one session and in a fresh one ----------------


@st.composite
def sessions(draw: st.DrawFn) -> list[tuple[str, bytes]]:
    """Bodies of one session: growing conversations, their odd relatives, and random bytes.
    Some end in a long member after the messages that stays, or changes at its front or end."""
    spacing = draw(SPACING)
    scalar = draw(st.sampled_from([PLAIN_SCALAR, ODD_SCALAR]))
    tools = draw(st.lists(values(scalar), max_size=3))
    messages: list[object] = [draw(LONG_TEXT)]
    long_end = draw(st.sampled_from(["", filler("end", MIN_COPY + 900)]))
    bodies: list[tuple[str, bytes]] = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["grow", "grow", "grow", "cut short", "bytes", "response"]))
        messages.append(draw(st.one_of(LONG_TEXT, values(scalar))))
        changed = draw(st.sampled_from(["", "", "x"]))
        end = changed + long_end if draw(st.booleans()) else long_end + changed
        top = Obj([("model", "m"), ("messages", list(messages)), ("tools", tools), ("end", end)])
        body, _ = JsonWriter(spacing).document(top)
        if kind == "cut short":
            body = body[: draw(st.integers(0, len(body)))] + draw(st.binary(max_size=8))
        elif kind == "bytes":
            body = draw(st.binary(max_size=200))
        role = "response" if kind == "response" else "request"
        bodies.append((role, body))
    return bodies


@pytest.mark.slow
@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(bodies=sessions())
def test_any_body_encodes_and_rebuilds_exactly(bodies: list[tuple[str, bytes]]) -> None:
    held = SessionBodies()
    records = []
    for i, (role, body) in enumerate(bodies):
        records.append(land(held, f"{i}.{role}", body, role))
        assert held.rebuild(f"{i}.{role}") == body
    fresh = SessionBodies(cache_bytes=0)
    for record in records:
        fresh.add(reread(record))
    for i, (role, body) in enumerate(bodies):
        assert fresh.rebuild(f"{i}.{role}") == body
        assert fresh.digest(f"{i}.{role}") == held.digest(f"{i}.{role}")


# -- real bodies -------------------------------------------------------------------------------


def sample_bodies(samples: Path) -> list[tuple[str, bytes]]:
    """Request and response bodies of the proxy captures, in capture order, as compact JSON."""
    found: list[tuple[str, bytes]] = []
    for log in sorted((samples / "requests").rglob("*.jsonl")):
        for line in log.read_bytes().splitlines():
            if not line.strip():
                continue
            pair = orjson.loads(line)
            for role, part in (
                ("request", pair.get("request")),
                ("response", pair.get("response")),
            ):
                body = part.get("body") if isinstance(part, dict) else None
                if isinstance(body, dict):
                    found.append((role, orjson.dumps(body)))
    return found


def test_real_captured_bodies_rebuild_exactly_and_land_small(samples: Path) -> None:
    bodies = sample_bodies(samples)
    assert len(bodies) > 50
    held = SessionBodies()
    records = [land(held, f"{i}.{role}", body, role) for i, (role, body) in enumerate(bodies)]
    fresh = SessionBodies()
    for record in records:
        fresh.add(reread(record))
    assert all(fresh.rebuild(f"{i}.{role}") == body for i, (role, body) in enumerate(bodies))
    assert sum(landed_size(r) for r in records) < 0.5 * sum(len(b) for _, b in bodies)
    assert any(copied_from(r) for r in records)
    assert all(r.meta["segs"][0][3] >= MIN_COPY for r in records if copied_from(r))


def test_a_default_synth_capture_lands_in_one_session_and_rebuilds(tmp_path: Path) -> None:
    synth = pytest.importorskip("asz.synth")
    if not hasattr(synth, "synthesize"):
        pytest.skip("asz.synth cannot write a capture yet")
    synth.synthesize(tmp_path, synth.SynthOptions())
    files = [*tmp_path.rglob("*.request.json"), *tmp_path.rglob("*.response.json")]
    files.sort(key=lambda path: (path.stat().st_mtime_ns, path.name))
    assert files
    held = SessionBodies()
    records = []
    for path in files:
        role = path.name.split(".")[-2]
        records.append(land(held, path.name.removesuffix(".json"), path.read_bytes(), role))
    fresh = SessionBodies()
    for record in records:
        fresh.add(reread(record))
    for path in files:
        assert fresh.rebuild(path.name.removesuffix(".json")) == path.read_bytes()
    source = sum(path.stat().st_size for path in files)
    assert sum(landed_size(r) for r in records) < source / 2


@pytest.mark.parametrize("shared_reminder", [True, False])
def test_take_cuts_as_encode_and_add_do_and_holds_what_it_cut(shared_reminder: bool) -> None:
    """``take`` scans only what a request adds to its base; the records must be the same as
    those of a session that scans every body whole, and rebuild once held."""
    scanned_whole, taken = SessionBodies(), SessionBodies()
    calls = interleaved(shared_reminder)
    bodies = [(f"{c.number}.request", "request", c.request) for c in calls] + [
        (f"{c.request_id}.response", "response", c.response) for c in calls
    ]
    bodies += [(f"g{n}.request", "request", body) for n, body in enumerate(growing(12))]
    for record_id, role, body in bodies:
        keys = read_keys(role, record_id.rsplit(".", 1)[0], body)
        whole = scanned_whole.encode(record_id, role, record_id + ".json", body, keys)
        scanned_whole.add(whole)
        digest = hashlib.sha256(body).hexdigest()
        record = taken.take(
            record_id, role, record_id + ".json", body, keys, sha256=digest, json_object=True
        )
        assert record.meta == whole.meta
        assert record.payload == whole.payload
    for record_id, _, body in bodies:
        assert taken.rebuild(record_id) == body


def test_a_piece_at_the_base_pieces_moved_offset_with_other_bytes_is_its_own_piece() -> None:
    """The next request's tools sit where the base's sat, moved by what it added; a tool
    changed to other bytes of the same length must not take the base's digest."""

    def request(messages: list[str], tool_text: str) -> bytes:
        return orjson.dumps(
            {
                "model": "m",
                "messages": [{"role": "user", "content": text} for text in messages],
                "system": "s",
                "tools": [{"name": "a", "description": tool_text}, {"name": "b"}],
            }
        )

    texts = [filler(n, 2_000) for n in range(4)]
    first = request(texts[:3], "a" * 3_000)
    second = request(texts, "b" * 3_000)
    taken, scanned_whole = SessionBodies(), SessionBodies()
    for n, body in enumerate([first, second]):
        record = taken.take(f"{n}.request", "request", f"{n}.request.json", body, BodyKeys())
        whole = scanned_whole.encode(f"{n}.request", "request", "x", body, BodyKeys())
        scanned_whole.add(whole)
        assert record.payload == whole.payload
    assert copied_from(record) == "0.request"
    tool = orjson.dumps({"name": "a", "description": "b" * 3_000})
    assert "why" not in record.meta  # cut, not landed whole after a failed rebuild
    assert tool in record.payload
    assert taken.check(reread(record)) == second
