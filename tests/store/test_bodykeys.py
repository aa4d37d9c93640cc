"""Keys are read from what a body carries, byte-exact, and reading never fails."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.bodies import SESSION, Chain

from asz.bodykeys import (
    MAX_KEY_LENGTH,
    BodyKeys,
    is_session_id,
    is_uuid_stem,
    keys_of,
    parse_billing_block,
    read_keys,
)

BILLING = (
    "x-anthropic-billing-header: cc_version=2.1.260.a1b; cc_entrypoint=cli; cch=00000; "
    "cc_prev_req=req_prev; cc_prompt_id=bdee6995;"
)


def request(**fields: object) -> bytes:
    body: dict[str, object] = {
        "model": "claude-opus-4-6",
        "messages": [],
        "system": [{"type": "text", "text": BILLING}],
        "metadata": {"user_id": orjson.dumps({"device_id": "d", "session_id": SESSION}).decode()},
    }
    body.update(fields)
    return orjson.dumps(body)


def test_a_request_names_its_model_session_prompt_and_previous_request() -> None:
    keys = read_keys("request", "0b7e4c1a-0000-4000-8000-000000000000", request())
    assert keys == BodyKeys(
        model="claude-opus-4-6", session=SESSION, prompt="bdee6995", prev_request="req_prev"
    )
    assert keys.as_dict() == {
        "model": "claude-opus-4-6",
        "session": SESSION,
        "prompt": "bdee6995",
        "prev_request": "req_prev",
    }


def test_a_built_chain_request_reads_back_its_keys() -> None:
    chain = Chain("reminder", "hi", prev_request="req_011Cabc")
    keys = read_keys("request", "x", chain.request(prompt_id="p-1"))
    assert (keys.session, keys.prompt, keys.prev_request) == (SESSION, "p-1", "req_011Cabc")


def test_the_first_request_of_a_chain_and_a_compaction_name_less() -> None:
    text = "x-anthropic-billing-header: cc_version=2.1.260; cch=00000;"
    keys = read_keys("request", "x", request(system=[{"type": "text", "text": text}]))
    assert keys.prompt is None
    assert keys.prev_request is None
    assert keys.session == SESSION


def test_system_may_be_a_plain_string_and_only_its_first_block_counts() -> None:
    assert read_keys("request", "x", request(system=BILLING)).prompt == "bdee6995"
    later = [{"type": "text", "text": "identity"}, {"type": "text", "text": BILLING}]
    assert read_keys("request", "x", request(system=later)).prompt is None
    assert read_keys("request", "x", request(system=["not a block"])).prompt is None
    assert read_keys("request", "x", request(system=[{"text": 5}])).prompt is None


@pytest.mark.parametrize(
    "user_id",
    [
        {"session_id": SESSION},  # an object, not a JSON string
        f"user_{'a' * 64}_account__session_{SESSION}",  # the older spelling is not read
        '{"session_id": ',
        '["not", "an", "object"]',
        '{"session_id": 7}',
        "",
    ],
)
def test_a_user_id_that_is_not_a_json_string_of_an_object_names_no_session(
    user_id: object,
) -> None:
    keys = read_keys("request", "x", request(metadata={"user_id": user_id}))
    assert keys.session is None
    assert keys.model == "claude-opus-4-6"


def test_a_response_names_its_message_and_its_request_through_the_file_name() -> None:
    body = orjson.dumps({"id": "msg_1", "model": "m", "type": "message"})
    assert read_keys("response", "req_011Cf4", body) == BodyKeys(
        model="m", message_id="msg_1", request_id="req_011Cf4"
    )
    uuid_named = read_keys("response", "6B29FC40-CA47-1067-B31D-00DD010662DA", body)
    assert uuid_named.request_id is None
    assert uuid_named.message_id == "msg_1"


def test_a_body_that_is_no_object_yields_only_what_its_name_gives() -> None:
    assert read_keys("response", "req_x", b"[]") == BodyKeys(request_id="req_x")
    assert read_keys("response", "req_x", b"{not json") == BodyKeys(request_id="req_x")
    assert read_keys("request", "x", b"\xff\xfe") == BodyKeys()


def test_values_are_kept_byte_exact_and_unfit_ones_are_dropped() -> None:
    case_kept = "Claude-OPUS"
    assert read_keys("request", "x", request(model=case_kept)).model == case_kept
    for unfit in ["", "a b", "tab\t", "nl\n", "nul\x00", "c1\x85", "x" * (MAX_KEY_LENGTH + 1), 5]:
        assert read_keys("request", "x", request(model=unfit)).model is None
    assert read_keys("request", "x", request(model="é" * MAX_KEY_LENGTH)).model == "é" * 256


def test_invalid_utf8_drops_only_the_values_it_touches() -> None:
    body = request(model="MODEL").replace(b"MODEL", b"MO\xffDEL")
    keys = read_keys("request", "x", body)
    assert keys.model is None
    assert keys.session == SESSION
    assert keys.prompt == "bdee6995"


def test_numbers_orjson_refuses_and_lone_surrogates_do_not_hide_the_keys() -> None:
    body = request().replace(b'"messages":[]', b'"messages":[1E400,"\\ud800",' + b"9" * 5000 + b"]")
    assert read_keys("request", "x", body).session == SESSION
    lone = request(model="m").replace(b'"model":"m"', b'"model":"\\udc00"')
    assert read_keys("request", "x", lone).model is None


def test_deep_nesting_is_survived() -> None:
    deep = b'{"model":"m","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    assert read_keys("request", "x", deep) == BodyKeys()
    assert read_keys("response", "req_1", b"[" * 100_000) == BodyKeys(request_id="req_1")


def test_session_ids_are_claude_codes_uuid_form_with_case_kept() -> None:
    assert is_session_id(SESSION)
    assert is_session_id(SESSION.upper())
    for other in ["../outside", SESSION + "\n", SESSION[:-1], SESSION.replace("-", ""), ""]:
        assert not is_session_id(other)
    assert is_uuid_stem(SESSION)
    assert not is_uuid_stem("req_011Cf4")


def test_the_billing_block_parser_is_tolerant() -> None:
    assert parse_billing_block(BILLING) == {
        "cc_version": "2.1.260.a1b",
        "cc_entrypoint": "cli",
        "cch": "00000",
        "cc_prev_req": "req_prev",
        "cc_prompt_id": "bdee6995",
    }
    assert parse_billing_block("a=1;b=2") == {"a": "1", "b": "2"}
    assert parse_billing_block("a=1; a=2; junk; =x; b=") == {"a": "1", "b": ""}
    assert parse_billing_block("no items at all") == {}
    assert parse_billing_block("xa=1") == {"xa": "1"}
    assert parse_billing_block("v=x=y;") == {"v": "x=y"}


SAFE = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABC0123456789_.-", min_size=1, max_size=20)


@given(items=st.dictionaries(SAFE, SAFE | st.just(""), max_size=6), header=st.booleans())
def test_billing_items_written_out_read_back(items: dict[str, str], header: bool) -> None:
    text = " ".join(f"{key}={value};" for key, value in items.items())
    if header:
        text = "x-anthropic-billing-header: " + text
    assert parse_billing_block(text) == items


@given(text=st.text())
def test_the_billing_parser_never_raises(text: str) -> None:
    items = parse_billing_block(text)
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in items.items())
    assert all(k and ";" not in v for k, v in items.items())


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda children: (
        st.lists(children, max_size=3)
        | st.dictionaries(
            st.sampled_from(["model", "id", "metadata", "user_id", "system"]), children
        )
    ),
    max_leaves=10,
)


def fit(value: str | None) -> bool:
    return value is None or (
        0 < len(value) <= MAX_KEY_LENGTH
        and not any(c.isspace() or ord(c) < 32 or 0xD800 <= ord(c) <= 0xDFFF for c in value)
    )


@settings(max_examples=300, deadline=None)
@given(
    role=st.sampled_from(["request", "response", "other"]),
    stem=st.text(max_size=40),
    body=st.binary(max_size=200) | JSON.map(lambda v: json.dumps(v).encode()),
)
def test_read_keys_never_raises_and_keeps_only_fit_values(
    role: str, stem: str, body: bytes
) -> None:
    keys = read_keys(role, stem, body)
    assert all(fit(value) for value in keys.as_dict().values())
    assert all(fit(value) for value in (keys.model, keys.session, keys.message_id))


@settings(max_examples=200, deadline=None)
@given(role=st.sampled_from(["request", "response"]), value=JSON)
def test_keys_of_a_parsed_body_are_those_read_from_its_bytes(role: str, value: object) -> None:
    """The collector reads keys from the value it parsed anyway; they must be the same."""
    user_id = json.dumps({"session_id": value})
    top = {"model": value, "id": value, "system": value, "metadata": {"user_id": user_id}}
    for body in (json.dumps(value).encode(), json.dumps(top).encode()):
        try:
            parsed = orjson.loads(body)
        except orjson.JSONDecodeError:  # integers past 64 bits: read_keys' own fallback
            continue
        assert keys_of(role, "req_1", parsed) == read_keys(role, "req_1", body)
