"""The scanner finds exactly the spans the codec may cut at, and refuses what it cannot cut."""

from __future__ import annotations

import itertools
import json

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.bodies import SPACING, TOOLS, TOP, Chain, JsonWriter, Obj, interleaved

from asz.store._scan import (
    MIN_PIECE,
    Layout,
    NotCuttable,
    message_spans,
    scan_body,
    scan_rest,
)


def spans_text(body: bytes, shape: Layout) -> list[bytes]:
    return [body[start:end] for start, end in shape.pieces]


def test_pieces_are_tools_and_long_strings_not_keys_nor_strings_inside_a_tool() -> None:
    long_text = "x" * (MIN_PIECE - 2)  # with its quotes, exactly MIN_PIECE bytes
    long_key = "k" * 2000
    tool_a = {"name": "A", "description": "d" * 3000}
    body = orjson.dumps(
        {
            "model": "m",
            "messages": [{"role": "user", "content": long_text}],
            "system": "s" * (MIN_PIECE - 3),  # one byte short of a piece
            "tools": [tool_a, {"name": "B"}],
            "metadata": {long_key: "v"},
        }
    )
    shape = scan_body(body)
    assert spans_text(body, shape) == [
        orjson.dumps(long_text),
        orjson.dumps(tool_a),
        b'{"name":"B"}',
    ]
    start, end = shape.first_message
    assert orjson.loads(body[start:end]) == {"role": "user", "content": long_text}


def test_only_top_level_tools_and_messages_arrays_are_special() -> None:
    body = orjson.dumps(
        {
            "nested": {"tools": [{"name": "A"}], "messages": [{"role": "user"}]},
            "tools": {"description": "t" * 1500},
            "messages": "not a list",
        }
    )
    shape = scan_body(body)
    assert spans_text(body, shape) == [orjson.dumps("t" * 1500)]
    assert shape.first_message is None


def test_tool_elements_of_any_kind_are_pieces_and_empty_arrays_have_none() -> None:
    body = b'{"tools" : [ 1 , "two" , null , [3] , -0.5e+3 ], "messages": [ ]}'
    shape = scan_body(body)
    assert spans_text(body, shape) == [b"1", b'"two"', b"null", b"[3]", b"-0.5e+3"]
    assert shape.first_message is None


def test_a_key_spelled_with_escapes_still_names_tools() -> None:
    body = b'{"t\\u006fols":[{"name":"A"}],"m\\u0065ssages":[{"a":1}]}'
    shape = scan_body(body)
    assert spans_text(body, shape) == [b'{"name":"A"}']
    assert body[slice(*shape.first_message)] == b'{"a":1}'


def test_escaped_quotes_and_backslashes_do_not_move_the_cuts() -> None:
    tricky = '\\"' * 300 + "\\" * 301 + '"end'
    body = orjson.dumps({"a": tricky, "b": "short\\", "c": ["\\\\" * 600]})
    shape = scan_body(body)
    assert [orjson.loads(piece) for piece in spans_text(body, shape)] == [tricky, "\\\\" * 600]


def test_a_real_request_is_cut_at_every_tool_and_long_string() -> None:
    body = Chain("r" * 3000, "hello").request(prompt_id="p")
    shape = scan_body(body)
    pieces = [orjson.loads(piece) for piece in spans_text(body, shape)]
    assert all(tool in pieces for tool in TOOLS)
    assert "r" * 3000 in pieces
    value = orjson.loads(body)
    assert orjson.loads(body[slice(*shape.first_message)]) == value["messages"][0]


def test_interleaved_requests_give_sorted_non_overlapping_pieces() -> None:
    for call in interleaved(shared_reminder=False):
        shape = scan_body(call.request)
        flat = [offset for span in shape.pieces for offset in span]
        assert flat == sorted(flat)
        assert all(end - start >= 1 for start, end in shape.pieces)


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b'{"a":"\xff"}', "the body is not valid UTF-8"),
        (b'{"a":"\xed\xa0\x80"}', "the body is not valid UTF-8"),
        (b'{"a":1', "the body is not valid JSON"),
        (b'{"a":NaN}', "the body is not valid JSON"),
        (b'{"a":1} x', "the body is not valid JSON"),
        (b"\xef\xbb\xbf{}", "the body is not valid JSON"),
        (b"", "the body is not valid JSON"),
        (b'["a"]', "the body is not a JSON object"),
        (b'"text"', "the body is not a JSON object"),
        (b"1E400", "the body is not a JSON object"),
        (b"[" * 100_000 + b"]" * 100_000, "the body nests too deep to be checked"),
        (
            b'{"a":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
            "the body nests too deep to be checked",
        ),
        (b'{"a":' + b"[" * 100_000, "the body nests too deep to be checked"),
    ],
)
def test_what_cannot_be_cut_says_why(body: bytes, why: str) -> None:
    with pytest.raises(NotCuttable) as caught:
        scan_body(body)
    assert caught.value.why == why


def test_valid_json_orjson_refuses_is_still_cut() -> None:
    long_text = "y" * 2000
    body = (
        b'{"n":1E400,"m":-1e-400,"i":' + b"9" * 5000 + b',"s":"\\ud800",'
        b'"l":' + json.dumps(long_text).encode() + b"}"
    )
    shape = scan_body(body)
    assert spans_text(body, shape) == [json.dumps(long_text).encode()]


def test_nesting_deeper_than_the_regex_reaches_is_walked() -> None:
    deep = b"[" * 300 + b'"' + b"z" * 1500 + b'"' + b"]" * 300
    body = b'{"tools":[' + deep + b',{"name":"B"}],"x":' + deep + b',"messages":[' + deep + b"]}"
    shape = scan_body(body)
    long_token = b'"' + b"z" * 1500 + b'"'
    assert spans_text(body, shape) == [deep, b'{"name":"B"}', long_token, long_token]
    assert body[slice(*shape.first_message)] == deep


def test_nesting_past_what_orjson_takes_is_refused_without_recursing() -> None:
    body = b'{"a":' + b"[" * 2000 + b"1E400" + b"]" * 2000 + b"}"
    with pytest.raises(NotCuttable):
        scan_body(body)


# -- property tests against the writer's own record of where the cuts are --------------------


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(top=TOP, spacing=SPACING, ascii_only=st.booleans())
def test_scanner_finds_what_the_writer_recorded(top: Obj, spacing: str, ascii_only: bool) -> None:
    body, expected = JsonWriter(spacing, ascii_only).document(top)
    shape = scan_body(body)
    assert (shape.pieces, shape.first_message) == (expected.pieces, expected.first_message)
    for mark in shape.marks:  # resuming anywhere on the same body finds the same
        assert scan_rest(body, shape, mark, body) == shape


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(top=TOP, spacing=SPACING, ascii_only=st.booleans())
def test_message_spans_are_the_messages_elements(top: Obj, spacing: str, ascii_only: bool) -> None:
    body, _expected = JsonWriter(spacing, ascii_only).document(top)
    found = message_spans(body)
    # The first top-level ``messages`` member holding a non-empty array is the one.
    messages = next(
        (v for k, v in top if k == "messages" and type(v) is list and v),  # an Obj is an object
        None,
    )
    if messages is None:
        assert found is None
        return
    assert found is not None
    spans, end = found
    assert len(spans) == len(messages)
    for (_, stop), (next_start, _) in itertools.pairwise(spans):
        assert stop < next_start and body[stop:next_start].strip(b" \t\r\n") == b","
    for start, stop in spans:
        loads(body[start:stop])  # each span is one whole JSON value, or this raises
    assert body[spans[-1][1] : end].strip(b" \t\r\n") == b"]"
    # What surrounds the array, with the array emptied, is still one object.
    assert isinstance(loads(body[: spans[0][0]] + b"]" + body[end:]), dict)


def loads(data: bytes) -> object:
    """JSON as the scanner must take it: numbers orjson refuses kept as text."""
    return json.loads(data, parse_int=str, parse_float=str, parse_constant=str)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=300) | st.from_regex(rb'\A[ \[\]{}":,\\a-z0-9.\-]*\Z'))
def test_any_bytes_are_cut_in_bounds_or_refused(data: bytes) -> None:
    try:
        shape = scan_body(data)
    except NotCuttable as refused:
        assert refused.why
        return
    flat = [offset for span in shape.pieces for offset in span]
    assert flat == sorted(flat)
    assert all(0 <= offset <= len(data) for offset in flat)


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    first=TOP,
    second=TOP,
    shared=st.integers(1, 3),
    spacing=SPACING,
    same_after=st.booleans(),
)
def test_a_scan_resumed_at_a_mark_finds_what_a_whole_scan_finds(
    first: Obj, second: Obj, shared: int, spacing: str, same_after: bool
) -> None:
    """Two bodies sharing their front up to an element of ``messages``, with the same or other
    members after the array: resuming from the first body's mark finds the second's shape."""
    before = Obj((key, value) for key, value in first if key != "messages")
    messages = [value for _, value in first] + ["m" * 1200, {"role": "user"}, 7, "x"]
    after_a = Obj((key, value) for key, value in second if key != "messages")
    after_b = after_a if same_after else Obj([*after_a, ("tools", ["t" * 1500])])
    more = [value for _, value in second] + ["n" * 1100]
    body_a, _ = JsonWriter(spacing).document(
        Obj([*before, ("messages", messages[: shared + 1]), *after_a])
    )
    body_b, _ = JsonWriter(spacing).document(
        Obj([*before, ("messages", messages[:shared] + more), *after_b])
    )
    base = scan_body(body_a)
    mark = base.marks[shared - 1]
    assert body_a[:mark] == body_b[:mark]
    assert scan_rest(body_b, base, mark, body_a) == scan_body(body_b)
