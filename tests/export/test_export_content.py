"""Content in spans: off by default, and when asked for, only as the redaction policy leaves it.

The real executable exports a ``synth --secrets`` capture, landed by the real collector, to
the tests' own OTLP receiver; every attribute of every span is read back and searched for each
planted value, in its raw and its JSON-escaped form.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import asz_executable
from support.otlp_receiver import Receiver
from support.serving import child_env, land

from asz.export.content import content_attributes
from asz.redact import Policy, Redactor
from asz.synth import SynthOptions, synthesize

CONTENT = ("gen_ai.input.messages", "gen_ai.system_instructions", "gen_ai.tool.definitions")


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("content")
    claude = tmp / "claude"
    expected = synthesize(claude, SynthOptions(sessions=2, turns=3, secrets=True))
    return land(tmp, claude), expected


@pytest.fixture
def root(planted: tuple[Path, dict[str, Any]], tmp_path: Path) -> Path:
    """A copy of the landed root of its own, since an export writes its cursors into it."""
    copy = tmp_path / "root"
    shutil.copytree(planted[0], copy, symlinks=True)
    return copy


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def export(tmp: Path, root: Path, receiver: Receiver, *args: str) -> list[dict[str, Any]]:
    done = subprocess.run(
        [*asz_executable(), "export", "otlp", "--root", str(root), "--endpoint", receiver.url],
        env=child_env(tmp / "home", {"ASZ_REDACT_KEY": "content-test-key-0123456789"}),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    return receiver.spans()


def export_with(tmp: Path, root: Path, receiver: Receiver, config: str) -> list[dict[str, Any]]:
    config_file = tmp / "asz.toml"
    config_file.write_text(config)
    done = subprocess.run(
        [
            *asz_executable(),
            *("export", "otlp", "--config", str(config_file), "--root", str(root)),
            *("--endpoint", receiver.url, "--content", "--json"),
        ],
        env=child_env(tmp / "home", {"ASZ_REDACT_KEY": "content-test-key-0123456789"}),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr.decode()
    assert orjson.loads(done.stdout)["content_withheld"] == 0
    return receiver.spans()


def everything_said(spans: list[dict[str, Any]]) -> bytes:
    return orjson.dumps([span["attributes"] for span in spans])


def test_spans_carry_no_content_unless_asked(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    spans = export(tmp_path, root, receiver)
    assert spans
    assert not any(name in span["attributes"] for span in spans for name in CONTENT)


def test_content_asked_for_leaves_no_planted_secret_in_any_span(
    planted: tuple[Path, dict[str, Any]], root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    expected = planted[1]
    spans = export_with(tmp_path, root, receiver, "")
    with_content = [span for span in spans if "gen_ai.input.messages" in span["attributes"]]
    assert with_content, "no span carries the messages its call sent"
    said = everything_said(spans)
    planted_items = [item for session in expected["sessions"] for item in session["planted"]]
    for item in planted_items:
        forms = {item["needle"].encode(), json.dumps(item["needle"])[1:-1].encode()}
        if item["rule"] is None:
            continue  # a near miss: not a secret, and whether a span quotes it is no matter
        assert not any(form in said for form in forms), f"{item['kind']} reached a span"
    assert "«redacted:".encode() in said
    for span in with_content:
        messages = json.loads(span["attributes"]["gen_ai.input.messages"][1])
        assert all({"role", "parts"} <= set(message) for message in messages)
    for name in ("gen_ai.tool.definitions", "gen_ai.system_instructions"):
        values = [
            json.loads(span["attributes"][name][1]) for span in spans if name in span["attributes"]
        ]
        assert values and all(values), name


def test_each_content_attribute_keeps_to_its_limit_and_stays_json(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    spans = export_with(tmp_path, root, receiver, "[otlp]\ncontent_limit = 2048\n")
    dropped = 0
    for span in spans:
        attributes = span["attributes"]
        for name in CONTENT:
            if name in attributes:
                value = attributes[name][1]
                assert len(value.encode()) <= 2048, (name, len(value.encode()))
                json.loads(value)
        dropped += attributes.get("asz.content.messages_dropped", ("int", 0))[1]
    assert dropped > 0, "no call's conversation was longer than the limit"


def test_a_request_becomes_the_conventions_parts() -> None:
    body = orjson.dumps(
        {
            "system": [{"type": "text", "text": "You are terse."}],
            "tools": [{"name": "Read", "input_schema": {"type": "object"}}],
            "messages": [
                {"role": "user", "content": "read a.txt"},
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "plan"},
                        {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"p": 1}},
                    ],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "hi"},
                        {"type": "image", "source": {"data": "aGk="}},
                    ],
                },
            ],
        }
    )
    found = content_attributes(body, Redactor(Policy(), b"unit-test-key-0123456789"))
    assert json.loads(str(found["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "You are terse."}
    ]
    assert json.loads(str(found["gen_ai.tool.definitions"]))[0]["name"] == "Read"
    assert json.loads(str(found["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": "read a.txt"}]},
        {
            "role": "assistant",
            "parts": [
                {"type": "reasoning", "content": "plan"},
                {"type": "tool_call", "id": "toolu_1", "name": "Read", "arguments": {"p": 1}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"type": "tool_call_response", "id": "toolu_1", "response": "hi"},
                {"type": "image"},
            ],
        },
    ]
    assert "asz.content.messages_dropped" not in found
    assert content_attributes(b"not json", Redactor(Policy(), b"unit-test-key-0123456789")) == {}


_TEXT = st.text(max_size=3000)
_BLOCK = st.one_of(
    st.builds(lambda text: {"type": "text", "text": text}, _TEXT),
    st.builds(
        lambda name, args: {"type": "tool_use", "id": "toolu_x", "name": name, "input": args},
        st.text(max_size=40),
        st.dictionaries(st.text(max_size=20), _TEXT, max_size=5),
    ),
    st.builds(lambda text: {"type": "tool_result", "tool_use_id": "t", "content": text}, _TEXT),
)


@settings(max_examples=60, deadline=None)
@given(
    messages=st.lists(
        st.builds(
            lambda role, blocks: {"role": role, "content": blocks},
            st.sampled_from(["user", "assistant"]),
            st.lists(_BLOCK, max_size=4),
        ),
        max_size=12,
    ),
    tools=st.lists(
        st.fixed_dictionaries({"name": st.text(max_size=30), "description": _TEXT}), max_size=12
    ),
    limit=st.integers(min_value=1024, max_value=16384),
)
def test_any_request_gives_json_attributes_within_the_limit(
    messages: list[Any], tools: list[Any], limit: int
) -> None:
    body = orjson.dumps({"system": "s" * 5000, "tools": tools, "messages": messages})
    found = content_attributes(body, Redactor(Policy(), b"unit-test-key-0123456789"), limit)
    for name in CONTENT:
        if name in found:
            value = str(found[name])
            assert len(value.encode()) <= limit
            assert isinstance(json.loads(value), list)
    kept = json.loads(str(found.get("gen_ai.input.messages", "[]")))
    assert len(kept) + int(found.get("asz.content.messages_dropped", 0)) == len(messages)
