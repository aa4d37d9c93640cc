"""Tests of ``asz synth``: every rule of the capture it writes, read back from the files."""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import RunAsz

from asz.synth import SynthOptions, synthesize
from asz.synth.bodies import REQUEST_KEYS, render_messages
from asz.synth.catalog import Tool, parse_tools
from asz.synth.context import encode_cwd

UUID = r"[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}"
BASE58 = r"[1-9A-HJ-NP-Za-km-z]"
BILLING = re.compile(
    r"^x-anthropic-billing-header: cc_version=(?P<version>2\.1\.26[02])\.[0-9a-f]{3}; "
    r"cc_entrypoint=cli; "
    rf"cch=(?P<cch>[0-9a-f]{{5}});(?: cc_prev_req=(?P<prev>req_011C{BASE58}{{20}});)?"
    rf"(?: cc_prompt_id=(?P<prompt>{UUID});)?$"
)
TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")
CACHE_1H = {"type": "ephemeral", "ttl": "1h"}
CACHE_5M = {"type": "ephemeral"}
NS = 1_000_000_000
EFFORT_KEEPS_CACHE = {"claude-opus-5-5"}
"""Of the models Claude Code's documentation says keep their cache when the effort changes, the
one a capture switches to."""


@dataclass
class Loaded:
    """A capture read back from disk, with the expected document beside it."""

    out: Path
    doc: dict[str, Any]
    parsed: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def bodies(self) -> dict[str, dict[str, Any]]:
        return {entry["id"]: entry for entry in self.doc["bodies"]}

    def raw(self, body_id: str) -> bytes:
        return (self.out / self.bodies[body_id]["file"]).read_bytes()

    def json(self, body_id: str) -> Any:
        if body_id not in self.parsed:
            self.parsed[body_id] = orjson.loads(self.raw(body_id))
        return self.parsed[body_id]

    def of(self, session: str, *, role: str, kind: str | None = None) -> list[dict[str, Any]]:
        return [
            b
            for b in self.doc["bodies"]
            if b["session"] == session and b["role"] == role and (kind is None or b["kind"] == kind)
        ]

    def lines(self, relative: str) -> list[dict[str, Any]]:
        return [orjson.loads(line) for line in (self.out / relative).read_bytes().splitlines()]

    def billing(self, body_id: str) -> re.Match[str]:
        match = BILLING.match(self.json(body_id)["system"][0]["text"])
        assert match is not None, self.json(body_id)["system"][0]["text"]
        return match

    @property
    def sessions(self) -> list[dict[str, Any]]:
        return self.doc["sessions"]


def load(out: Path, options: SynthOptions) -> Loaded:
    return Loaded(out, synthesize(out, options))


@pytest.fixture(scope="module")
def cap(tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    return load(tmp_path_factory.mktemp("synth"), SynthOptions())


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    return load(tmp_path_factory.mktemp("indexed"), SynthOptions(seed=7, sessions=1, index=True))


def normalized(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages with both spellings made one and cache markers removed."""
    out = []
    for message in messages:
        content = message["content"]
        if isinstance(content, str):
            content = [{"type": "text", "text": content}]
        blocks = [{k: v for k, v in block.items() if k != "cache_control"} for block in content]
        out.append({"role": message["role"], "content": blocks})
    return out


def stripped(blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in block.items() if k != "cache_control"} for block in blocks]


def chains(cap: Loaded, session: str) -> dict[str, list[dict[str, Any]]]:
    """Call requests per stream, in time order."""
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for body in sorted(cap.of(session, role="request", kind="call"), key=lambda b: b["mtime_ns"]):
        out[body["stream"]].append(body)
    return out


def response_of(cap: Loaded, request: dict[str, Any]) -> dict[str, Any]:
    return next(
        b
        for b in cap.doc["bodies"]
        if b["role"] == "response" and b["message_id"] == request["message_id"]
    )


def independent_cause(cap: Loaded, before: dict[str, Any], now: dict[str, Any]) -> str:
    """The cache cause worked out from two consecutive requests of a chain and their times."""
    old, new = cap.json(before["id"]), cap.json(now["id"])
    if old["model"] != new["model"]:
        return "model"
    if cap.billing(before["id"])["version"] != cap.billing(now["id"])["version"]:
        return "upgrade"
    if loaded(old["tools"]) != loaded(new["tools"]):
        return "tools"
    if stripped(old["system"][1:]) != stripped(new["system"][1:]):
        return "system"
    if old.get("speed") != new.get("speed"):
        return "fast_mode"
    effort = old["output_config"] != new["output_config"] or old["thinking"] != new["thinking"]
    if effort and new["model"] not in EFFORT_KEEPS_CACHE:
        return "effort"
    previous, current = normalized(old["messages"]), normalized(new["messages"])
    if current[: len(previous)] != previous:
        return "compaction"
    lifetime = 3600 if marker_of(old) == CACHE_1H else 300
    if now["mtime_ns"] - response_of(cap, before)["mtime_ns"] > lifetime * NS:
        return "ttl"
    return "kept"


def loaded(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tools whose definitions are part of the prefix: all but the deferred ones."""
    return [tool for tool in tools if not tool.get("defer_loading")]


def marker_of(body: dict[str, Any]) -> dict[str, Any]:
    return body["messages"][-1]["content"][-1]["cache_control"]


def check_consistency(cap: Loaded) -> None:
    """What every capture must satisfy, whatever its options."""
    listed = {entry["file"] for entry in cap.doc["bodies"]}
    on_disk = {
        f"asz/provider-bodies/{p.name}" for p in (cap.out / "asz/provider-bodies").glob("*.json")
    }
    assert listed == on_disk
    for entry in cap.doc["bodies"]:
        data = cap.raw(entry["id"])
        assert len(data) == entry["size"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert os.stat(cap.out / entry["file"]).st_mtime_ns == entry["mtime_ns"]
    for session in cap.sessions:
        for stream, requests in chains(cap, session["id"]).items():
            previous_request_id = None
            for number, request in enumerate(requests):
                match = cap.billing(request["id"])
                assert match["prev"] == previous_request_id, (stream, number)
                previous_request_id = request["request_id"]
                expected = (
                    "first"
                    if number == 0
                    else independent_cause(cap, requests[number - 1], request)
                )
                assert request["cache_cause"] == expected, (stream, number)


# -- requests ---------------------------------------------------------------------------


def test_every_request_opens_with_the_billing_block(cap: Loaded) -> None:
    cchs = []
    for request in (b for b in cap.doc["bodies"] if b["role"] == "request"):
        block = cap.json(request["id"])["system"][0]
        assert set(block) == {"type", "text"}
        cchs.append(cap.billing(request["id"])["cch"])
    assert len(set(cchs)) == len(cchs)


def test_the_first_call_of_a_chain_names_no_previous_request(cap: Loaded) -> None:
    for session in cap.sessions:
        for stream, requests in chains(cap, session["id"]).items():
            assert cap.billing(requests[0]["id"])["prev"] is None, stream
            assert all(cap.billing(r["id"])["prev"] for r in requests[1:]), stream


def test_metadata_user_id_is_a_json_string_naming_the_session(cap: Loaded) -> None:
    devices, accounts = set(), set()
    for request in (b for b in cap.doc["bodies"] if b["role"] == "request"):
        user_id = cap.json(request["id"])["metadata"]["user_id"]
        assert isinstance(user_id, str)
        inner = orjson.loads(user_id)
        assert list(inner) == ["device_id", "account_uuid", "session_id"]
        assert re.fullmatch(r"[0-9a-f]{64}", inner["device_id"])
        assert re.fullmatch(UUID, inner["account_uuid"])
        assert inner["session_id"] == request["session"]
        devices.add(inner["device_id"])
        accounts.add(inner["account_uuid"])
    assert len(devices) == len(accounts) == 1


def test_system_and_tools_carry_their_cache_markers(cap: Loaded) -> None:
    for request in (
        b for b in cap.doc["bodies"] if b["role"] == "request" and b["kind"] != "title"
    ):
        body = cap.json(request["id"])
        identity, prompt = body["system"][1], body["system"][2]
        assert identity["text"] == "You are Claude Code, Anthropic's official CLI for Claude."
        assert identity["cache_control"] == {**CACHE_1H, "scope": "global"}
        assert prompt["cache_control"] == CACHE_1H
        assert not any("cache_control" in tool for tool in body["tools"])


def test_only_the_newest_message_carries_the_cache_marker(cap: Loaded) -> None:
    for request in (
        b for b in cap.doc["bodies"] if b["role"] == "request" and b["kind"] != "title"
    ):
        messages = cap.json(request["id"])["messages"]
        newest = messages[-1]["content"]
        assert isinstance(newest, list)
        # Subagents' entries live five minutes, the main conversation's an hour.
        main = request["stream"] in ("main", None)
        assert newest[-1]["cache_control"] == (CACHE_1H if main else CACHE_5M)
        marked = [
            (i, j)
            for i, message in enumerate(messages)
            if isinstance(message["content"], list)
            for j, block in enumerate(message["content"])
            if "cache_control" in block
        ]
        assert marked == [(len(messages) - 1, len(newest) - 1)]


def test_a_single_text_message_is_a_list_while_newest_and_a_string_later(cap: Loaded) -> None:
    for session in cap.sessions:
        as_list, as_string = set(), set()
        for request in cap.of(session["id"], role="request", kind="call"):
            messages = cap.json(request["id"])["messages"]
            newest = messages[-1]["content"]
            if len(newest) == 1 and newest[0]["type"] == "text":
                as_list.add(newest[0]["text"])
            for message in messages[:-1]:
                assert not (
                    isinstance(message["content"], list)
                    and len(message["content"]) == 1
                    and set(message["content"][0]) == {"type", "text"}
                )
                if isinstance(message["content"], str):
                    as_string.add(message["content"])
        assert as_list & as_string, session["id"]


def test_request_keys_come_in_claude_code_order(cap: Loaded) -> None:
    for request in (b for b in cap.doc["bodies"] if b["role"] == "request"):
        keys = list(cap.json(request["id"]))
        if request["kind"] == "title":
            assert keys == [k for k in REQUEST_KEYS if k in keys]
        else:
            # ``speed`` is sent in fast mode only.
            assert keys == [k for k in REQUEST_KEYS if k != "speed" or "speed" in keys]
            assert cap.json(request["id"]).get("speed", "fast") == "fast"


def test_bodies_are_compact_json(cap: Loaded) -> None:
    for entry in cap.doc["bodies"]:
        raw = cap.raw(entry["id"])
        assert orjson.dumps(orjson.loads(raw)) == raw


def test_request_settings_are_those_of_2_1_260(cap: Loaded) -> None:
    for request in cap.of(cap.sessions[0]["id"], role="request", kind="call"):
        body = cap.json(request["id"])
        assert body["thinking"] == {"type": "adaptive", "display": "omitted"}
        assert body["output_config"]["effort"] in ("high", "medium", "low")
        assert body["context_management"] == {
            "edits": [{"type": "clear_thinking_20251015", "keep": "all"}]
        }
        assert body["stream"] is True


def test_the_first_user_message_holds_reminders_then_the_prompt(cap: Loaded) -> None:
    for session in cap.sessions:
        first = min(cap.of(session["id"], role="request", kind="call"), key=lambda b: b["mtime_ns"])
        blocks = cap.json(first["id"])["messages"][0]["content"]
        reminders, prompt = blocks[:-1], blocks[-1]
        assert len(reminders) >= 3
        assert all(b["text"].startswith("<system-reminder>\n") for b in reminders)
        context = "".join(b["text"] for b in reminders)
        assert "CLAUDE.md" in context
        assert "The user's email address is " in context
        assert "# currentDate\nToday's date is 2026-09-18." in context
        assert not prompt["text"].startswith("<system-reminder>")
        assert cap.json(first["id"])["messages"][1]["role"] == "system"


def test_history_is_resent_with_redacted_thinking_and_real_tool_results(cap: Loaded) -> None:
    for session in cap.sessions:
        main = chains(cap, session["id"])["main"]
        last = cap.json(main[-1]["id"])
        assert {message["role"] for message in last["messages"]} == {"user", "assistant", "system"}
        results: dict[str, int] = {}
        for request in main:
            messages = cap.json(request["id"])["messages"]
            blocks = [b for m in messages if isinstance(m["content"], list) for b in m["content"]]
            thinking = [b for b in blocks if b["type"] == "thinking"]
            assert all(b["thinking"] == "<REDACTED>" and b["signature"] for b in thinking)
            for block in blocks:
                if block["type"] == "tool_result":
                    results[block["tool_use_id"]] = len(orjson.dumps(block["content"]))
        assert sum(1 for size in results.values() if size > 1024) >= 5


def test_sizes_match_the_measured_captures(cap: Loaded) -> None:
    for session in cap.sessions:
        for stream, requests in chains(cap, session["id"]).items():
            for request in requests:
                body = cap.json(request["id"])
                if stream == "main":
                    assert 120_000 <= request["size"] <= 200_000
                    assert 68_000 <= len(orjson.dumps(body["tools"])) <= 80_000
                    assert 30 <= len(body["tools"]) <= 45
                    assert sum(t["name"].startswith("mcp__") for t in body["tools"]) >= 5
                    assert 9_000 <= len(body["system"][2]["text"].encode()) <= 12_000
                else:
                    assert 30_000 <= request["size"] <= 60_000
                    assert len(body["tools"]) < 20


# -- responses ----------------------------------------------------------------------------


def test_responses_are_whole_messages_with_cache_consistent_usage(cap: Loaded) -> None:
    for session in cap.sessions:
        for requests in chains(cap, session["id"]).values():
            for request in requests:
                response = response_of(cap, request)
                body = cap.json(response["id"])
                assert list(body) == [
                    "id",
                    "type",
                    "role",
                    "model",
                    "content",
                    "stop_reason",
                    "stop_sequence",
                    "usage",
                ]
                assert body["id"] == request["message_id"]
                assert body["model"] == cap.json(request["id"])["model"]
                assert body["stop_reason"] == (
                    "tool_use" if body["content"][-1]["type"] == "tool_use" else "end_turn"
                )
                usage = body["usage"]
                prompt = request["size"] // 4
                total = (
                    usage["input_tokens"]
                    + usage["cache_read_input_tokens"]
                    + usage["cache_creation_input_tokens"]
                )
                assert total == prompt
                if request["cache_cause"] == "kept":
                    assert usage["cache_read_input_tokens"] > prompt // 2
                elif request["cache_cause"] not in ("compaction", "system"):
                    assert usage["cache_read_input_tokens"] == 0


# -- transcripts --------------------------------------------------------------------------


def test_transcript_lines_follow_claude_code_shapes(cap: Loaded) -> None:
    for session in cap.sessions:
        for relative in session["transcripts"]:
            raw = (cap.out / relative).read_bytes()
            assert raw.endswith(b"\n")
            lines = cap.lines(relative)
            seen: set[str] = set()
            versions = []
            for line in lines:
                if "uuid" not in line:
                    assert line["type"] in ("file-history-snapshot", "ai-title")
                    continue
                versions.append(line["version"])
                assert line["sessionId"] == session["id"]
                assert TIMESTAMP.match(line["timestamp"])
                if line["parentUuid"] is not None:
                    assert line["parentUuid"] in seen
                seen.add(line["uuid"])
                if line["type"] == "user":
                    assert re.fullmatch(UUID, line["promptId"])
            # An upgrade happens once; the lines after it name the new version.
            assert versions == sorted(versions) and set(versions) <= {"2.1.260", "2.1.262"}


def test_one_assistant_line_per_block_sharing_message_and_request_ids(cap: Loaded) -> None:
    for session in cap.sessions:
        groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for relative in session["transcripts"]:
            for line in cap.lines(relative):
                if line.get("type") == "assistant":
                    groups[line["message"]["id"]].append(line)
        for call in session["calls"]:
            lines = groups[call["message_id"]]
            final = cap.json(call["response"])
            assert len(lines) == len(final["content"])
            assert all(len(line["message"]["content"]) == 1 for line in lines)
            assert all(line["message"]["stop_reason"] is None for line in lines)
            assert {line.get("requestId") for line in lines} == {call["request_id"]}
            running = [line["message"]["usage"]["output_tokens"] for line in lines]
            assert running == sorted(running) and running[-1] < final["usage"]["output_tokens"]


def test_compaction_leaves_a_boundary_and_a_summary_line(cap: Loaded) -> None:
    for session in cap.sessions:
        lines = cap.lines(session["transcripts"][0])
        for compaction in session["compactions"]:
            at = next(
                i for i, line in enumerate(lines) if line.get("uuid") == compaction["boundary_uuid"]
            )
            boundary, summary = lines[at], lines[at + 1]
            assert boundary["type"] == "system" and boundary["subtype"] == "compact_boundary"
            assert boundary["parentUuid"] is None
            assert boundary["logicalParentUuid"] == lines[at - 1]["uuid"]
            assert boundary["compactMetadata"]["trigger"] == "auto"
            assert summary["isCompactSummary"] is True
            assert summary["parentUuid"] == boundary["uuid"]
            agent = f"agent-{compaction['agent_id']}.jsonl"
            assert any(path.endswith(f"/subagents/{agent}") for path in session["transcripts"])


# -- special calls ------------------------------------------------------------------------


def previous_main(cap: Loaded, session: str, before_ns: int) -> dict[str, Any]:
    main = chains(cap, session)["main"]
    return max((r for r in main if r["mtime_ns"] < before_ns), key=lambda r: r["mtime_ns"])


def transcript_message_ids(cap: Loaded, session: dict[str, Any]) -> set[str]:
    return {
        line["message"]["id"]
        for relative in session["transcripts"]
        for line in cap.lines(relative)
        if line.get("type") == "assistant"
    }


def test_the_compaction_request_copies_the_list_and_names_no_prompt(cap: Loaded) -> None:
    for session in cap.sessions:
        assert len(session["compactions"]) == 1
        compaction = session["compactions"][0]
        request = cap.bodies[compaction["request"]]
        before = previous_main(cap, session["id"], request["mtime_ns"])
        match, before_match = cap.billing(request["id"]), cap.billing(before["id"])
        assert match["prompt"] is None
        assert match["prev"] == before_match["prev"]
        messages = normalized(cap.json(request["id"])["messages"])
        earlier = normalized(cap.json(before["id"])["messages"])
        *kept, last = messages
        assert kept == earlier[: len(kept)]
        assert last["content"][:-1] == earlier[len(kept)]["content"]
        assert last["content"][-1]["text"].startswith("The conversation is about to be replaced")
        after = min(
            (r for r in chains(cap, session["id"])["main"] if r["mtime_ns"] > request["mtime_ns"]),
            key=lambda r: r["mtime_ns"],
        )
        assert cap.billing(after["id"])["prev"] == before["request_id"]
        assert after["cache_cause"] == "compaction"
        opening = cap.json(after["id"])["messages"][0]["content"][-1]["text"]
        assert opening.startswith("This session continues an earlier conversation")
        response = cap.bodies[compaction["response"]]
        assert response["claim"] is None and not response["joins"]
        assert response["message_id"] not in transcript_message_ids(cap, session)
        named = {cap.billing(b["id"])["prev"] for b in cap.of(session["id"], role="request")}
        assert response["request_id"] not in named


def test_the_title_call_names_the_session_and_nothing_names_it(cap: Loaded) -> None:
    for session in cap.sessions:
        titles = cap.of(session["id"], role="request", kind="title")
        assert len(titles) == 1
        body = cap.json(titles[0]["id"])
        assert body["model"].startswith("claude-haiku")
        assert body["messages"][0]["content"][0]["text"].startswith(
            "Please write a 5-10 word title"
        )
        assert orjson.loads(body["metadata"]["user_id"])["session_id"] == session["id"]
        assert cap.billing(titles[0]["id"])["prompt"] == session["calls"][0]["prompt_id"]
        response = response_of(cap, titles[0])
        assert response["claim"] is None and not response["joins"]
        assert response["message_id"] not in transcript_message_ids(cap, session)
        before = previous_main(cap, session["id"], titles[0]["mtime_ns"])
        assert cap.billing(titles[0]["id"])["prev"] == before["request_id"]


def test_subagents_run_their_own_chain_under_the_parent_prompt(cap: Loaded) -> None:
    for session in cap.sessions:
        agents = [s for s in session["streams"] if s["kind"] == "subagent"]
        assert len(agents) == 1
        agent = agents[0]
        assert re.fullmatch(r"a[0-9a-f]{16}", agent["stream"])
        requests = chains(cap, session["id"])[agent["stream"]]
        assert len(requests) >= 3
        parent = next(c for c in session["calls"] if c["message_id"] == agent["parent_message_id"])
        for request in requests:
            assert cap.billing(request["id"])["prompt"] == parent["prompt_id"]
            inner = orjson.loads(cap.json(request["id"])["metadata"]["user_id"])
            assert inner["session_id"] == session["id"]
        path = next(
            p for p in session["transcripts"] if p.endswith(f"agent-{agent['stream']}.jsonl")
        )
        lines = cap.lines(path)
        assert lines[0]["parentUuid"] is None and lines[0]["type"] == "user"
        assert all(line["isSidechain"] and line["agentId"] == agent["stream"] for line in lines)
        meta = orjson.loads((cap.out / path.replace(".jsonl", ".meta.json")).read_bytes())
        assert meta == {"agentType": "Explore", "spawnDepth": 1, "model": "claude-sonnet-4-6"}
        main_lines = cap.lines(session["transcripts"][0])
        use = next(
            line
            for line in main_lines
            if line.get("type") == "assistant"
            and line["message"]["content"][0].get("id") == agent["tool_use_id"]
        )
        assert use["message"]["content"][0]["name"] == "Agent"
        assert use["message"]["id"] == agent["parent_message_id"]
        result = next(
            line
            for line in main_lines
            if line.get("type") == "user"
            and isinstance(line.get("toolUseResult"), dict)
            and line["toolUseResult"].get("agentId") == agent["stream"]
        )
        assert result["message"]["content"][0]["tool_use_id"] == agent["tool_use_id"]


def test_uuid_named_responses_end_a_chain_and_only_a_transcript_claims_them(cap: Loaded) -> None:
    for session in cap.sessions:
        named = [
            b
            for b in cap.of(session["id"], role="response")
            if re.fullmatch(UUID, b["id"].removesuffix(".response"))
        ]
        assert len(named) == 1
        response = named[0]
        assert response["request_id"] is None and response["claim"] == "transcript"
        call = next(c for c in session["calls"] if c["response"] == response["id"])
        stream_calls = [c for c in session["calls"] if c["stream"] == call["stream"]]
        assert stream_calls[-1] is call


def test_mtimes_follow_the_calls(cap: Loaded) -> None:
    for session in cap.sessions:
        ordered = sorted(
            [b for b in cap.doc["bodies"] if b["session"] == session["id"]],
            key=lambda b: b["mtime_ns"],
        )
        for request, response in zip(ordered[::2], ordered[1::2], strict=True):
            assert (request["role"], response["role"]) == ("request", "response")
            assert request["message_id"] == response["message_id"]
            assert request["mtime_ns"] < response["mtime_ns"]
        times: dict[str, list[int]] = defaultdict(list)
        for relative in session["transcripts"]:
            lines = cap.lines(relative)
            last_ms = max(_ms(line["timestamp"]) for line in lines if "timestamp" in line)
            assert os.stat(cap.out / relative).st_mtime_ns // 1_000_000 >= last_ms
            for line in lines:
                if line.get("type") == "assistant":
                    times[line["message"]["id"]].append(_ms(line["timestamp"]))
        for call in session["calls"]:
            request, response = cap.bodies[call["request"]], cap.bodies[call["response"]]
            assert request["mtime_ns"] // 1_000_000 <= min(times[call["message_id"]])
            assert max(times[call["message_id"]]) <= response["mtime_ns"] // 1_000_000


def _ms(stamp: str) -> int:
    from datetime import datetime

    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1000)


# -- ground truth -------------------------------------------------------------------------


def test_cache_breaks_are_injected_and_recorded(cap: Loaded) -> None:
    for session in cap.sessions:
        breaks = [b for b in cap.doc["cache_breaks"] if b["session"] == session["id"]]
        assert sorted(b["injected"] for b in breaks) == [
            "effort",
            "fast_mode",
            "model",
            "model",
            "system",
            "tools_added",
            "tools_denied",
            "tools_loaded",
            "ttl",
            "ttl_5m",
            "upgrade",
        ]
        details = " ".join(b["detail"] for b in breaks)
        # To the model that keeps its cache and back to one the price table prices.
        assert "claude-opus-4-6 -> claude-opus-5-5" in details
        assert "claude-opus-5-5 -> claude-opus-4-6" in details
        assert " added" in details and " denied" in details and " loaded" in details
        for brk in breaks:
            request = cap.bodies[brk["request"]]
            assert request["cache_cause"] == brk["cause"] and brk["rewritten_tokens"] > 0
            assert request["message_id"] == brk["message_id"]
            assert request["stream"] == brk["stream"]
            assert (brk["stream"] == "main") == (brk["injected"] != "ttl_5m")
        kept = [c for c in cap.doc["cache_kept_changes"] if c["session"] == session["id"]]
        assert [(c["injected"], c["cause"]) for c in kept] == [("effort", "kept")]
        assert kept[0]["detail"].endswith("on claude-opus-5-5")
        assert cap.bodies[kept[0]["request"]]["cache_cause"] == "kept"


def test_expected_json_lists_every_body_and_matches_the_returned_document(cap: Loaded) -> None:
    check_consistency(cap)
    on_disk = (cap.out / "expected.json").read_bytes()
    assert (
        on_disk == orjson.dumps(cap.doc, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
    )
    assert cap.doc["schema"] == "asz.synth.expected/1"
    totals = cap.doc["totals"]
    responses = [b for b in cap.doc["bodies"] if b["role"] == "response"]
    assert totals["requests"] == totals["responses"] == len(responses)
    assert totals["body_bytes"] == sum(b["size"] for b in cap.doc["bodies"])
    assert totals["transcript_bytes"] == sum(
        (cap.out / p).stat().st_size for s in cap.sessions for p in s["transcripts"]
    )
    assert totals["unclaimable_responses"] == 2 * len(cap.sessions)
    unclaimed = {b["kind"] for b in responses if b["claim"] is None}
    assert unclaimed == {"title", "compaction"}


def test_the_join_keys_of_transcripts_and_requests_pair_up_exactly(cap: Loaded) -> None:
    """An independent join: calls from the transcripts (message ids in line order, the prompt
    of their lines, the previous call's request id) against what the requests name."""
    for session in cap.sessions:
        keys: dict[tuple[str, str], list[str]] = defaultdict(list)
        for relative in session["transcripts"]:
            prompt, previous, seen = None, "", []
            for line in cap.lines(relative):
                if line.get("type") == "user":
                    prompt = line["promptId"]
                if line.get("type") == "assistant" and line["message"]["id"] not in seen:
                    if not line["message"]["id"].startswith("msg_"):
                        continue
                    seen.append(line["message"]["id"])
                    keys[(previous, prompt)].append(line["message"]["id"])
                    previous = line.get("requestId", "")
        requests: dict[tuple[str, str], list[str]] = defaultdict(list)
        for request in cap.of(session["id"], role="request"):
            match = cap.billing(request["id"])
            if match["prompt"]:
                requests[(match["prev"] or "", match["prompt"])].append(request["id"])
        for request in cap.of(session["id"], role="request"):
            match = cap.billing(request["id"])
            key = (match["prev"] or "", match["prompt"])
            joins = len(keys.get(key, [])) == 1 and len(requests[key]) == 1
            assert joins == request["joins"], request["id"]
            if joins:
                assert keys[key] == [request["message_id"]]
        assert all(cap.bodies[c["request"]]["joins"] for c in session["calls"])


def test_index_lines_name_every_response(indexed: Loaded) -> None:
    check_consistency(indexed)
    raw = (indexed.out / "asz/provider-bodies/index.jsonl").read_bytes()
    lines = [orjson.loads(line) for line in raw.splitlines()]
    responses = [b for b in indexed.doc["bodies"] if b["role"] == "response"]
    assert len(lines) == len(responses)
    keys = [
        "timestamp",
        "session_id",
        "query_source",
        "model",
        "request_id",
        "message_id",
        "message_uuid",
        "request_file",
        "response_file",
    ]
    sources = set()
    for line in lines:
        assert list(line) == keys
        sources.add(line["query_source"])
        request = indexed.bodies[line["request_file"].removesuffix(".json")]
        response = indexed.bodies[line["response_file"].removesuffix(".json")]
        assert request["message_id"] == response["message_id"] == line["message_id"]
        assert response["request_id"] == line["request_id"]
    assert sources == {"repl_main_thread", "agent:Explore", "compact", "generate_session_title"}
    claims = {b["kind"]: b["claim"] for b in responses if b["kind"] != "call"}
    assert claims == {"title": "index", "compaction": "index"}
    assert indexed.doc["totals"]["unclaimable_responses"] == 0


# -- determinism --------------------------------------------------------------------------


def tree(out: Path) -> list[tuple[str, str, int]]:
    return sorted(
        (
            p.relative_to(out).as_posix(),
            hashlib.sha256(p.read_bytes()).hexdigest(),
            p.stat().st_mtime_ns,
        )
        for p in out.rglob("*")
        if p.is_file()
    )


def test_the_same_options_write_the_same_tree(cap: Loaded, tmp_path: Path) -> None:
    again = tmp_path / "again"
    synthesize(again, SynthOptions())
    assert tree(again) == tree(cap.out)


def test_another_seed_writes_another_capture(cap: Loaded, tmp_path: Path) -> None:
    other = load(tmp_path / "other", SynthOptions(seed=2))
    assert {b["sha256"] for b in other.doc["bodies"]}.isdisjoint(
        {b["sha256"] for b in cap.doc["bodies"]}
    )
    assert {s["id"] for s in other.sessions}.isdisjoint({s["id"] for s in cap.sessions})


def test_a_tools_file_replaces_the_tool_list(tmp_path: Path, cap: Loaded) -> None:
    source = cap.json(chains(cap, cap.sessions[0]["id"])["main"][0]["id"])
    tools = [t for t in source["tools"] if t["name"] in ("Agent", "Bash", "Read", "Grep")]
    captured = tmp_path / "request.json"
    captured.write_bytes(orjson.dumps({"model": "m", "tools": tools}))
    out = load(tmp_path / "out", SynthOptions(sessions=1, tools_file=captured))
    first = chains(out, out.sessions[0]["id"])["main"][0]
    assert [t["name"] for t in out.json(first["id"])["tools"]] == ["Agent", "Bash", "Grep", "Read"]
    check_consistency(out)


# -- properties ---------------------------------------------------------------------------

text_blocks = st.lists(
    st.fixed_dictionaries({"type": st.just("text"), "text": st.text(max_size=20)}),
    min_size=1,
    max_size=3,
)
result_blocks = st.lists(
    st.fixed_dictionaries(
        {"tool_use_id": st.just("toolu_01x"), "type": st.just("tool_result"), "content": st.text()}
    ),
    min_size=1,
    max_size=2,
)
message_lists = st.lists(
    st.fixed_dictionaries(
        {
            "role": st.sampled_from(["user", "assistant", "system"]),
            "content": text_blocks | result_blocks,
        }
    ),
    min_size=1,
    max_size=6,
)


@given(message_lists)
def test_rendering_changes_only_spelling_and_marker(messages: list[dict[str, Any]]) -> None:
    rendered = render_messages(messages)
    assert normalized(rendered) == messages
    assert rendered[-1]["content"][-1]["cache_control"] == CACHE_1H
    for original, spelled in zip(messages[:-1], rendered[:-1], strict=True):
        single = len(original["content"]) == 1 and original["content"][0]["type"] == "text"
        assert isinstance(spelled["content"], str) == single


tool_names = st.from_regex(r"[A-Za-z][A-Za-z0-9_]{0,30}", fullmatch=True)
descriptions = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\x85\u2028\u2029"),
    max_size=200,
).map(lambda s: "\n".join(line for line in s.split("\n") if not line.startswith("@@")).strip("\n"))
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(max_size=10),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)


@given(
    st.lists(
        st.builds(
            Tool,
            name=tool_names,
            sets=st.sets(st.sampled_from(["main", "agent", "late"]), min_size=1).map(
                lambda s: tuple(sorted(s))
            ),
            description=descriptions,
            schema=st.dictionaries(st.text(max_size=5), json_values, max_size=4),
        ),
        max_size=4,
    )
)
def test_tool_catalog_format_reads_back_what_it_holds(tools: list[Tool]) -> None:
    source = "# a comment\n\n" + "".join(
        f"@@tool {t.name} {' '.join(t.sets)}\n@@description\n{t.description}\n"
        f"@@schema\n{orjson.dumps(t.schema, option=orjson.OPT_INDENT_2).decode()}\n\n"
        for t in tools
    )
    assert list(parse_tools(source)) == tools


@given(st.text(max_size=60))
def test_encoded_cwd_keeps_only_letters_digits_and_dashes(cwd: str) -> None:
    encoded = encode_cwd(cwd)
    assert len(encoded) == len(cwd)
    assert re.fullmatch(r"[A-Za-z0-9-]*", encoded)
    assert encode_cwd(encoded) == encoded


@settings(max_examples=12, deadline=None)
@given(
    st.builds(
        SynthOptions,
        seed=st.integers(0, 10_000),
        sessions=st.integers(1, 2),
        turns=st.integers(1, 4),
        tool_calls=st.integers(0, 3),
        subagents=st.integers(0, 2),
        compactions=st.integers(0, 2),
        cache_breaks=st.booleans(),
        uuid_responses=st.integers(0, 2),
        index=st.booleans(),
    )
)
def test_any_small_capture_is_consistent(options: SynthOptions) -> None:
    with tempfile.TemporaryDirectory() as directory:
        out = load(Path(directory), options)
        check_consistency(out)
        for session in out.sessions:
            assert len([c for c in session["calls"] if c["stream"] == "main"]) == options.turns * (
                options.tool_calls + 1
            )
            assert len(session["compactions"]) == min(options.compactions, options.turns - 1)


def test_replaying_a_directory_without_transcripts_says_so_and_exits_2(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    claude = tmp_path / "claude"
    (claude / "projects" / "-home-dev-proj").mkdir(parents=True)
    (claude / "projects" / "-home-dev-proj" / "notes.txt").write_text("no transcript here")
    out = tmp_path / "out"
    cases = [
        (claude / "projects", f"no Claude Code transcripts under {claude / 'projects'} "),
        (claude, f"did you mean {claude / 'projects'}?"),
        (tmp_path / "absent", f"{tmp_path / 'absent'} is not a directory"),
    ]
    for source, said in cases:
        done = run_asz("synth", str(out), "--from-transcripts", str(source))
        assert done.returncode == 2 and done.stdout == b""
        assert said in done.stderr.decode(), done.stderr
        assert not out.exists()
