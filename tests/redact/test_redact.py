"""The redactor on strings and documents: markers, bytes kept, paths, policy, key."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from asz.redact import Policy, Redactor, redaction_key
from asz.redact.paths import STRING

KEY = b"k" * 32
ANTHROPIC = "sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 3 + "AA"
AWS = "AKIAIOSFODNN7EXAMPLQ"


def redactor(**settings: object) -> Redactor:
    return Redactor(Policy.from_settings(settings), KEY)


def doc(**values: object) -> bytes:
    return json.dumps(values, separators=(",", ":")).encode()


def test_a_secret_becomes_a_marker_and_the_rest_stays_byte_for_byte() -> None:
    raw = b'{"a": 1,  "text": "key ' + ANTHROPIC.encode() + b' here", "b": [true, null]}'
    out = redactor().body(raw)
    assert ANTHROPIC.encode() not in out.data
    assert out.data.startswith(b'{"a": 1,  "text": "key \xc2\xab')
    assert out.data.endswith(b'\xc2\xbb here", "b": [true, null]}')
    assert [(hit.rule, hit.path) for hit in out.hits] == [("anthropic-key", "$.text")]
    assert json.loads(out.data)["b"] == [True, None]


def test_equal_values_give_equal_markers_and_other_keys_other_ones() -> None:
    first = redactor().body(doc(a=f"x {AWS}", b=[f"{AWS} y"]))
    body = json.loads(first.data)
    marker = body["a"][2:]
    assert marker.startswith("«redacted:aws-access-key:") and marker.endswith("»")
    assert body["b"][0] == f"{marker} y"
    other = json.loads(Redactor(Policy(), b"o" * 32).body(doc(a=f"x {AWS}")).data)
    assert other["a"] != body["a"]


def test_nothing_found_returns_the_same_bytes() -> None:
    raw = doc(id="toolu_01ABCdefGHIjklMNOpqrSTUv", uuid="0b3e19a5-3df3-4d75-8d7f-5ab576c61a2f")
    out = redactor().body(raw)
    assert out.data is raw and out.hits == ()


def test_metadata_user_id_keeps_its_session_id() -> None:
    session = "12345678-1234-4234-9234-123456789abd"
    user_id = json.dumps(
        {
            "device_id": "ab" * 32,
            "account_uuid": "87654321-4321-4321-8321-cba987654321",
            "session_id": session,
        },
        separators=(",", ":"),
    )
    out = redactor().body(doc(metadata={"user_id": user_id}))
    kept = json.loads(json.loads(out.data)["metadata"]["user_id"])
    assert kept["session_id"] == session
    assert kept["device_id"].startswith("«redacted:device-id:")
    assert kept["account_uuid"].startswith("«redacted:account-id:")
    assert {hit.path for hit in out.hits} == {"$.metadata.user_id"}


def test_the_1_0_6_bare_user_id_is_told_by_its_key_alone() -> None:
    device = "cd" * 32
    out = json.loads(redactor().body(doc(metadata={"user_id": device}, digest=device)).data)
    assert out["metadata"]["user_id"].startswith("«redacted:device-id:")
    assert out["digest"] == device


def test_home_paths_keep_their_shape() -> None:
    out = json.loads(redactor().body(doc(cwd="/home/alice/src/x", mac="/Users/bob/y")).data)
    assert out["cwd"].startswith("/home/«redacted:user:") and out["cwd"].endswith("»/src/x")
    assert out["mac"].startswith("/Users/«redacted:user:")
    kept = json.loads(redactor(home_paths=False).body(doc(cwd="/home/alice/src/x")).data)
    assert kept["cwd"] == "/home/alice/src/x"


def test_a_disabled_rule_does_not_run_and_a_disabled_policy_sends_raw() -> None:
    raw = doc(text=f"{AWS} {ANTHROPIC}")
    out = redactor(disable=["aws-access-key"]).body(raw)
    assert [hit.rule for hit in out.hits] == ["anthropic-key"]
    assert redactor(enabled=False).body(raw).data == raw


def test_a_marker_is_never_redacted_again() -> None:
    r = redactor()
    once = r.body(doc(text=f"/home/alice {AWS} me@corp.io", key=f'password = "{ANTHROPIC}"'))
    twice = r.body(once.data)
    assert twice.data == once.data and twice.hits == ()


def test_escaped_strings_and_keys_are_scanned() -> None:
    raw = json.dumps({"t": f"line\n{AWS}\t\u00e9", f"{AWS}": 1}).encode()
    out = redactor().body(raw)
    parsed = json.loads(out.data)
    assert parsed["t"].startswith("line\n«redacted:aws-access-key:")
    assert sorted(hit.path for hit in out.hits) == ["$.AKIAIOSFODNN7EXAMPLQ(key)", "$.t"]


def test_a_document_that_is_not_json_is_redacted_as_text() -> None:
    out = redactor().body(b'{"cut": "' + AWS.encode())
    assert AWS.encode() not in out.data and out.hits[0].rule == "aws-access-key"


def test_findings_show_context_and_never_the_value() -> None:
    found = redactor().findings(doc(m=[{"text": f"export KEY={ANTHROPIC} # mine"}]))
    assert [(f.rule, f.path) for f in found] == [("anthropic-key", "$.m[0].text")]
    assert ANTHROPIC not in found[0].context and "export KEY=«redacted:" in found[0].context


def test_withheld_parts_keep_their_place_and_say_their_size() -> None:
    body = {
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "Bash", "description": "Runs a command"}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "file text"}
                ],
            }
        ],
    }
    out = redactor(withhold=["system", "tools", "tool-results"]).body(doc(**body))
    parsed = json.loads(out.data)
    assert parsed["system"][0]["type"] == "text"
    assert parsed["system"][0]["text"].startswith("«withheld:system:")
    assert parsed["system"][0]["text"].endswith(":20 bytes»")
    assert parsed["tools"][0]["name"] == "Bash"
    assert parsed["tools"][0]["description"].startswith("«withheld:tools:")
    block = parsed["messages"][0]["content"][0]
    assert block["tool_use_id"] == "toolu_1" and block["content"].startswith(
        "«withheld:tool-results:"
    )
    assert {hit.rule for hit in out.hits} == {
        "withheld-system",
        "withheld-tools",
        "withheld-tool-results",
    }


def test_with_a_part_withheld_the_other_strings_are_still_redacted_and_counted() -> None:
    r = redactor(withhold=["tools"])
    out = r.body(doc(tools=[{"name": "Bash", "description": "d"}], messages=[f"key {AWS}"]))
    assert AWS.encode() not in out.data
    assert r.counts == {"withheld-tools": 1, "aws-access-key": 1}


def test_a_disabled_policy_finds_and_changes_nothing() -> None:
    r = redactor(enabled=False)
    assert r.text(f"key {AWS}") == f"key {AWS}"
    assert r.findings(doc(text=AWS)) == []
    assert r.counts == {}


def test_instruction_files_are_withheld_inside_a_reminder() -> None:
    text = (
        "<system-reminder>\nContents of /repo/CLAUDE.md (project instructions):\n\n"
        "Always run the tests.\nNever push.\n\n# currentDate\nToday is x\n</system-reminder>"
    )
    r = redactor(withhold=["instructions"])
    out = json.loads(r.body(doc(text=text)).data)["text"]
    assert "Always run" not in out and "# currentDate\nToday is x" in out
    assert "«withheld:instructions:" in out and out.count("bytes»") == 1
    assert r.counts == {"withheld-instructions": 1}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"disable": ["nope"]}, "unknown rule 'nope'"),
        ({"withhold": ["everything"]}, "unknown class 'everything'"),
        ({"enabled": "yes"}, "redact.enabled must be true or false"),
        ({"colour": 1}, "unknown key 'colour'"),
    ],
)
def test_a_bad_policy_is_refused_by_name(settings: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Policy.from_settings(settings)


def test_the_fingerprint_follows_what_changes_output_and_the_key() -> None:
    base = Policy.from_settings({})
    assert base.fingerprint == Policy.from_settings({"key": "x" * 16}).fingerprint
    assert base.fingerprint != Policy.from_settings({"disable": ["email"]}).fingerprint
    assert base.fingerprint != Policy.from_settings({"withhold": ["tools"]}).fingerprint
    assert base.with_key(b"a" * 16).fingerprint != base.with_key(b"b" * 16).fingerprint
    assert Redactor(base, KEY).policy.fingerprint == base.with_key(KEY).fingerprint


def test_the_key_comes_from_the_env_then_the_config_then_a_kept_file(tmp_path: Path) -> None:
    kept = tmp_path / "_state" / "redact.key"
    assert redaction_key("c" * 16, {"ASZ_REDACT_KEY": "e" * 16}, kept) == (
        b"e" * 16,
        "ASZ_REDACT_KEY",
    )
    assert redaction_key("c" * 16, {}, kept) == (b"c" * 16, "redact.key")
    made, origin = redaction_key("", {}, kept)
    assert origin == "generated" and len(made) == 64
    assert stat.S_IMODE(os.stat(kept).st_mode) == 0o600
    assert redaction_key("", {}, kept) == (made, "kept")
    with pytest.raises(ValueError, match="at least 16"):
        redaction_key("short", {}, kept)
    with pytest.raises(ValueError, match="no redaction key"):
        redaction_key("", {}, None)


# --- the rewriter, over generated documents ---------------------------------------------

PLANTED = (
    AWS,
    ANTHROPIC,
    "/home/alice/x",
    "bob@corp.io",
    'password = "Zx81Rt6QwPp0"',
    "postgres://u:pw0rdpw0rd@h/db",
)
SECRETISH = st.sampled_from([*PLANTED, "«redacted:email:0123456789ab»"])
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=30)
STRINGS = st.one_of(TEXT, st.builds(lambda a, s, b: f"{a} {s} {b}", TEXT, SECRETISH, TEXT))
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | STRINGS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(STRINGS, inner, max_size=4),
    max_leaves=12,
)


def _serialised(value: object, ascii_only: bool, indent: int | None) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only, indent=indent).encode()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, st.booleans(), st.sampled_from([None, 1]))
def test_output_is_json_of_the_same_structure_and_equal_inputs_give_equal_outputs(
    value: object, ascii_only: bool, indent: int | None
) -> None:
    raw = _serialised(value, ascii_only, indent)
    out = redactor().body(raw)
    again = redactor().body(raw)
    assert again == out
    parsed = json.loads(out.data)
    assert _shape(parsed) == _shape(value)
    assert redactor().body(out.data).hits == ()
    for secret in PLANTED:
        assert f" {json.dumps(secret)[1:-1]} ".encode() not in out.data


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(JSON, st.booleans())
def test_bytes_outside_a_changed_string_stay_identical(value: object, ascii_only: bool) -> None:
    raw = _serialised(value, ascii_only, None)
    out = redactor().body(raw).data
    assert _outside_strings(out) == _outside_strings(raw)
    kept = [t for t in STRING.findall(raw) if b"\\u" not in t and not _fires(t)]
    for token in kept:
        assert token in out


def _fires(token: bytes) -> bool:
    return bool(redactor().findings(b"[" + token + b"]"))


def _shape(value: object) -> object:
    """The structure with every string's text left out: what redaction must not change."""
    if isinstance(value, dict):
        return ["dict", len(value), [_shape(v) for v in value.values()]]
    if isinstance(value, list):
        return [_shape(v) for v in value]
    return "str" if isinstance(value, str) else value


def _outside_strings(raw: bytes) -> bytes:
    return STRING.sub(b'""', raw)


def test_show_finds_the_bare_user_id_too() -> None:
    found = redactor().findings(doc(metadata={"user_id": "ef" * 32}))
    assert [(f.rule, f.path) for f in found] == [("device-id", "$.metadata.user_id")]
    assert "ef" * 32 not in found[0].context
