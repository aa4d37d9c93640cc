"""Tests of ``asz synth --from-transcripts``: real transcripts replayed into bodies.

They use the real samples found through ``ASZ_SAMPLES`` (or ``../shared/claude-code-samples``
beside the repository) and are skipped when the samples are not there.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.paths import SHARED_SAMPLES

from asz.synth import SynthOptions, synthesize

SAMPLES = Path(os.environ.get("ASZ_SAMPLES") or SHARED_SAMPLES)
TRANSCRIPTS = SAMPLES / "transcripts"
LAYOUTS = ("v2.1.39-subagents-dir", "v2.0.74-flat-agent-files", "v1.0.98-inline-sidechains")
PREV_REQ = re.compile(r"cc_prev_req=([^;\s]+);")

pytestmark = pytest.mark.skipif(
    not TRANSCRIPTS.is_dir(), reason=f"Claude Code samples not found at {SAMPLES}"
)


class Replayed:
    def __init__(self, source: Path, out: Path, options: SynthOptions) -> None:
        self.source = source
        self.out = out
        self.doc = synthesize(out, options)
        self.bodies = {entry["id"]: entry for entry in self.doc["bodies"]}

    def raw(self, body_id: str) -> bytes:
        return (self.out / self.bodies[body_id]["file"]).read_bytes()

    def json(self, body_id: str) -> Any:
        return orjson.loads(self.raw(body_id))

    def lines(self, relative: str) -> list[dict[str, Any]]:
        out = []
        for raw in (self.out / relative).read_bytes().splitlines():
            try:
                line = orjson.loads(raw)
            except orjson.JSONDecodeError:
                continue
            if isinstance(line, dict):
                out.append(line)
        return out


@pytest.fixture(scope="module")
def replayed(tmp_path_factory: pytest.TempPathFactory) -> Replayed:
    source = TRANSCRIPTS / LAYOUTS[0]
    return Replayed(
        source, tmp_path_factory.mktemp("replay"), SynthOptions(from_transcripts=source)
    )


def texts_of(content: Any) -> list[str]:
    """Text of text blocks and of tool results, at any depth, as the transcript holds it."""
    if isinstance(content, str):
        return [content]
    out: list[str] = []
    for block in content if isinstance(content, list) else []:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            out.append(block["text"])
        elif block.get("type") == "tool_result":
            out.extend(texts_of(block.get("content")))
    return out


def encoded(text: str) -> bytes:
    return orjson.dumps(text)[1:-1]


def test_transcripts_are_copied_byte_for_byte(replayed: Replayed) -> None:
    sources = sorted(p for p in replayed.source.rglob("*.jsonl"))
    assert sources
    for path in sources:
        copy = replayed.out / "projects" / path.relative_to(replayed.source)
        assert copy.read_bytes() == path.read_bytes()


@pytest.mark.slow
def test_every_text_of_the_transcripts_reaches_a_body(replayed: Replayed) -> None:
    session = replayed.doc["sessions"][0]
    requests = b"\n".join(
        replayed.raw(b["id"]) for b in replayed.doc["bodies"] if b["role"] == "request"
    )
    responses = b"\n".join(
        replayed.raw(b["id"]) for b in replayed.doc["bodies"] if b["role"] == "response"
    )
    checked = 0
    for relative in session["transcripts"]:
        lines = replayed.lines(relative)
        last_call = max(
            (i for i, line in enumerate(lines) if line.get("type") == "assistant"), default=-1
        )
        for number, line in enumerate(lines):
            message = line.get("message")
            if not isinstance(message, dict) or line.get("type") not in ("user", "assistant"):
                continue
            for text in texts_of(message.get("content")):
                if line["type"] == "assistant":
                    assert encoded(text) in requests + responses
                elif number < last_call:
                    assert encoded(text) in requests, text[:80]
                checked += 1
    assert checked > 200


def test_each_message_id_is_one_call_whose_response_holds_its_blocks(replayed: Replayed) -> None:
    session = replayed.doc["sessions"][0]
    blocks: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for relative in session["transcripts"]:
        for line in replayed.lines(relative):
            message = line.get("message")
            if line.get("type") == "assistant" and message.get("model") != "<synthetic>":
                blocks[message["id"]].extend(message["content"])
    assert len(session["calls"]) == len(blocks)
    for call in session["calls"]:
        content = replayed.json(call["response"])["content"]
        expected = [
            {**b, "thinking": "<REDACTED>"} if b.get("type") == "thinking" else b
            for b in blocks[call["message_id"]]
        ]
        assert content == expected


def test_requests_name_the_previous_request_id_of_their_stream(replayed: Replayed) -> None:
    session = replayed.doc["sessions"][0]
    previous: dict[str, str | None] = {}
    for call in session["calls"]:
        billing = replayed.json(call["request"])["system"][0]["text"]
        named = PREV_REQ.search(billing)
        assert (named.group(1) if named else None) == previous.get(call["stream"])
        previous[call["stream"]] = call["request_id"]
    streams = {s["stream"]: s for s in session["streams"]}
    assert set(streams) == {"main", "a2898e3", "acompact-e1f845"}
    assert streams["a2898e3"]["tool_use_id"].startswith("toolu_")
    assert streams["a2898e3"]["parent_message_id"].startswith("msg_")


def test_a_compaction_boundary_restarts_the_message_list(replayed: Replayed) -> None:
    main = [c for c in replayed.doc["sessions"][0]["calls"] if c["stream"] == "main"]
    causes = [replayed.bodies[c["request"]]["cache_cause"] for c in main]
    assert causes[0] == "first" and causes.count("compaction") == 1
    after = main[causes.index("compaction")]
    first = texts_of(replayed.json(after["request"])["messages"][0]["content"])[0]
    assert first.startswith("This session is being continued from a previous conversation")
    session = replayed.doc["sessions"][0]
    (compaction,) = session["compactions"]
    summarised = replayed.json(compaction["request"])["messages"]
    assert len(summarised) > 100
    assert texts_of(summarised[-1]["content"])[-1].startswith("Your task is to create a detailed")


def test_the_ground_truth_describes_the_written_bodies(replayed: Replayed) -> None:
    for entry in replayed.doc["bodies"]:
        data = replayed.raw(entry["id"])
        assert len(data) == entry["size"]
        assert hashlib.sha256(data).hexdigest() == entry["sha256"]
        assert os.stat(replayed.out / entry["file"]).st_mtime_ns == entry["mtime_ns"]
    for call in replayed.doc["sessions"][0]["calls"]:
        request, response = replayed.bodies[call["request"]], replayed.bodies[call["response"]]
        assert request["mtime_ns"] < response["mtime_ns"]
    # 2.1.39 lines carry no promptId, so no reader can join a request to its call.
    assert not any(b["joins"] for b in replayed.doc["bodies"] if b["role"] == "request")


@pytest.mark.parametrize("layout", LAYOUTS[1:])
def test_older_layouts_replay_too(layout: str, tmp_path: Path) -> None:
    source = TRANSCRIPTS / layout
    result = Replayed(source, tmp_path, SynthOptions(from_transcripts=source, index=True))
    calls = [c for s in result.doc["sessions"] for c in s["calls"]]
    assert calls
    streams = {c["stream"] for c in calls}
    assert "main" in streams and len(streams) > 1
    index = (tmp_path / "asz/provider-bodies/index.jsonl").read_bytes().splitlines()
    assert len(index) == len(calls)


def test_a_captured_request_supplies_the_tool_list(tmp_path: Path) -> None:
    log = SAMPLES / "requests/vibe-coding-proxy-v2.1.153/log-2026-06-15-09-00-52.jsonl"
    body = orjson.loads(log.read_bytes().splitlines()[0])["request"]["body"]
    captured = tmp_path / "request.json"
    captured.write_bytes(orjson.dumps(body))
    source = TRANSCRIPTS / LAYOUTS[0]
    result = Replayed(
        source, tmp_path / "out", SynthOptions(from_transcripts=source, tools_file=captured)
    )
    main = next(c for c in result.doc["sessions"][0]["calls"] if c["stream"] == "main")
    assert result.json(main["request"])["tools"] == body["tools"]
    agent = next(c for c in result.doc["sessions"][0]["calls"] if c["stream"] == "a2898e3")
    names = [t["name"] for t in result.json(agent["request"])["tools"]]
    assert set(names) < {t["name"] for t in body["tools"]} and "Bash" in names
