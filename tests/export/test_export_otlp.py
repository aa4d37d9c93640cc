"""``asz export otlp`` against the tests' own OTLP/HTTP receiver: the real executable on a
synthetic root landed by the real collector, every span decoded with ``opentelemetry-proto``.

The receiver pins what a backend reads: each attribute's name and protobuf type, the span
kinds, the ids (derived from the session and message ids), the parent of a subagent's call;
and that a call is sent once however often the export runs, even when the endpoint fails
between two batches.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.cli import asz_executable
from support.otlp_receiver import Receiver
from support.serving import child_env, land

from asz.export.cursor import Cursors
from asz.export.otel import SpanSender, resolve_target
from asz.export.run import SpanExport
from asz.store import open_store
from asz.synth import SynthOptions, synthesize
from asz.view.prices import price_table

CLIENT, INTERNAL = 3, 1
"""``Span.SpanKind`` values of the OTLP protobuf."""


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("otlp")
    claude = tmp / "claude"
    synthesize(claude, SynthOptions(seed=4))
    return land(tmp, claude)


@pytest.fixture
def root(landed: Path, tmp_path: Path) -> Path:
    """A copy of the landed root of its own, since an export writes its cursors into it."""
    copy = tmp_path / "root"
    shutil.copytree(landed, copy, symlinks=True)
    return copy


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def asz(tmp: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*asz_executable(), *args],
        env=child_env(tmp / "home", env),
        capture_output=True,
        timeout=120,
        check=False,
    )


def export(tmp: Path, root: Path, *args: str, **kw: Any) -> subprocess.CompletedProcess:
    return asz(tmp, "export", "otlp", "--root", str(root), *args, **kw)


def read_json(tmp: Path, *args: str) -> Any:
    done = asz(tmp, *args)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def sessions(tmp: Path, root: Path) -> list[str]:
    listed = read_json(tmp, "sessions", "--root", str(root), "--json")
    return sorted(entry["id"] for entry in listed)


def digest(text: str, size: int) -> str:
    return hashlib.sha256(text.encode()).digest()[:size].hex()


@pytest.mark.slow
def test_every_call_is_one_span_with_the_genai_and_asz_attributes_typed(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    done = export(tmp_path, root, "--endpoint", receiver.url, "--json")
    assert done.returncode == 0, done.stderr
    said = orjson.loads(done.stdout)
    spans = receiver.spans()
    assert said["spans_sent"] == len(spans) > 0
    assert said["error"] is None and said["problems"] == []

    by_id = {span["span_id"]: span for span in spans}
    assert len(by_id) == len(spans), "no span is sent twice"
    for session in sessions(tmp_path, root):
        view = read_json(tmp_path, "view", "--root", str(root), session, "--json")
        report = read_json(tmp_path, "cache", "--root", str(root), session, "--json")
        rows = {row["message_id"]: row for row in report["rows"] if row["message_id"]}
        streams = {stream["id"]: stream for stream in view["streams"]}
        calls = [call for call in view["calls"] if not call["synthetic"]]
        assert calls
        for call in calls:
            span = by_id[digest(f"{session}\0{call['message_id']}", 8)]
            row = rows[call["message_id"]]
            attributes = span["attributes"]
            assert span["trace_id"] == digest(session, 16)
            assert span["kind"] == CLIENT
            assert span["name"] == f"chat {call['model']}"
            assert span["start"] <= span["end"]
            assert span["scope"][1] == "https://opentelemetry.io/schemas/1.41.0"
            assert span["resource"]["service.name"] == ("string_value", "claude-code")
            assert attributes["gen_ai.operation.name"] == ("string_value", "chat")
            assert attributes["gen_ai.provider.name"] == ("string_value", "anthropic")
            assert attributes["gen_ai.conversation.id"] == ("string_value", session)
            assert attributes["gen_ai.request.model"] == ("string_value", call["model"])
            assert attributes["gen_ai.response.model"] == ("string_value", call["model"])
            assert attributes["gen_ai.response.id"] == ("string_value", call["message_id"])
            assert attributes["asz.stream"] == ("string_value", call["stream"])
            if call["stop_reason"]:
                assert attributes["gen_ai.response.finish_reasons"] == (
                    "array",
                    [("string_value", call["stop_reason"])],
                )
            if call["version"]:
                assert attributes["asz.claude_code.version"] == ("string_value", call["version"])
            whole = (
                row["input_tokens"]
                + row["cache_read_input_tokens"]
                + row["cache_creation_input_tokens"]
            )
            assert attributes["gen_ai.usage.input_tokens"] == ("int_value", whole)
            for name, field in (
                ("gen_ai.usage.output_tokens", "output_tokens"),
                ("gen_ai.usage.cache_read.input_tokens", "cache_read_input_tokens"),
                ("gen_ai.usage.cache_creation.input_tokens", "cache_creation_input_tokens"),
                ("asz.cache.write_5m.input_tokens", "cache_write_5m_input_tokens"),
                ("asz.cache.write_1h.input_tokens", "cache_write_1h_input_tokens"),
                ("asz.cache.expected_read_tokens", "expected_read"),
                ("asz.cache.rewritten_tokens", "rewritten_tokens"),
            ):
                expected = ("int_value", row[field]) if row[field] is not None else None
                assert attributes.get(name) == expected, (name, call["message_id"])
            for name, field in (("asz.cost_usd", "cost_usd"), ("asz.waste_usd", "waste_usd")):
                expected = ("double_value", row[field]) if row[field] is not None else None
                assert attributes.get(name) == expected, (name, call["message_id"])
            for name, field in (("asz.cache.cause", "cause"), ("asz.cache.detail", "detail")):
                expected = ("string_value", row[field]) if row[field] is not None else None
                assert attributes.get(name) == expected, (name, call["message_id"])
            for body in call["provider_bodies"]:
                assert attributes[f"asz.{body['role']}.body_id"] == ("string_value", body["id"])
            started_by = streams[call["stream"]]["started_by"]
            if started_by is None:
                assert span["parent_span_id"] is None
            else:
                parent = by_id[span["parent_span_id"]]
                assert parent["attributes"]["gen_ai.response.id"] == (
                    "string_value",
                    started_by["message_id"],
                )
                assert attributes["asz.call.kind"] == ("string_value", "subagent")
            breaks = [event for event in span["events"] if event["name"] == "asz.cache.break"]
            assert len(breaks) == (1 if row["rewritten_tokens"] else 0)
            for event in breaks:
                assert event["attributes"]["asz.cache.rewritten_tokens"] == (
                    "int_value",
                    row["rewritten_tokens"],
                )
        compactions = [s for s in spans if s["name"] == "compaction"]
        assert len([s for s in compactions if s["trace_id"] == digest(session, 16)]) == len(
            view["epochs"]
        )
        for epoch in view["epochs"]:
            span = by_id[digest(f"{session}\0compaction:{epoch['uuid']}", 8)]
            assert span["kind"] == INTERNAL
            assert span["attributes"]["asz.compaction.pre_tokens"] == (
                "int_value",
                epoch["pre_tokens"],
            )
            assert span["attributes"]["asz.compaction.summary_chars"] == (
                "int_value",
                len(epoch["summary"]),
            )
    kinds = Counter(span["attributes"].get("asz.call.kind", ("", ""))[1] for span in spans)
    assert kinds["subagent"] and kinds["side"] and kinds["compaction"], kinds
    assert not any(key.startswith("gen_ai.input") for s in spans for key in s["attributes"])


@pytest.mark.slow
def test_exporting_again_sends_nothing_and_a_dry_run_sends_nothing(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    dry = export(tmp_path, root, "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    planned = orjson.loads(dry.stdout)
    assert receiver.received.requests == []
    assert not (root / "_state" / "otlp").exists()

    first = export(tmp_path, root, "--endpoint", receiver.url)
    assert first.returncode == 0, first.stderr
    sent = len(receiver.spans())
    assert sent == planned["spans_sent"] == len(planned["spans"])
    again = export(tmp_path, root, "--endpoint", receiver.url, "--json")
    assert again.returncode == 0, again.stderr
    said = orjson.loads(again.stdout)
    assert len(receiver.spans()) == sent
    assert said["spans_sent"] == 0 and said["sessions_unchanged"] == 2
    for cursor in (root / "_state" / "otlp").rglob("*.json"):
        assert cursor.stat().st_mode & 0o777 == 0o600


@pytest.mark.slow
def test_an_endpoint_that_fails_between_batches_gets_each_span_once(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    config = tmp_path / "asz.toml"
    config.write_text(f'[otlp]\nendpoint = "{receiver.url}"\nbatch_spans = 7\ntimeout = 1\n')
    receiver.refuse = 1_000
    down = export(tmp_path, root, "--config", str(config), "--json")
    assert down.returncode == 1
    said = orjson.loads(down.stdout)
    assert said["spans_sent"] == 0 and said["spans_failed"] == 7
    errors = down.stderr.decode().splitlines()
    assert len(errors) == 1 and "Service Unavailable" in errors[0], errors
    assert receiver.spans() == []

    # Up for two batches, then down again: the two batches are kept as sent.
    receiver.refuse = 0
    with receiver.lock:
        receiver.received.requests.clear()
    taken: list[int] = []

    original = receiver._traces

    def then_down(body: bytes) -> None:
        original(body)
        taken.append(1)
        if len(taken) == 2:
            receiver.refuse = 1_000

    receiver._traces = then_down  # type: ignore[method-assign]
    partly = export(tmp_path, root, "--config", str(config), "--json")
    assert partly.returncode == 1
    assert orjson.loads(partly.stdout)["spans_sent"] == 14
    assert len(receiver.spans()) == 14

    receiver.refuse = 0
    rest = export(tmp_path, root, "--config", str(config), "--json")
    assert rest.returncode == 0, rest.stderr
    spans = receiver.spans()
    assert orjson.loads(rest.stdout)["spans_already_sent"] == 14
    ids = Counter(span["span_id"] for span in spans)
    assert ids and max(ids.values()) == 1, "every span exactly once"
    planned = orjson.loads(export(tmp_path, root, "--dry-run", "--json").stdout)
    assert len(ids) == len(planned["spans"])


@pytest.mark.slow
def test_headers_come_from_a_private_file_or_the_standard_variables(
    root: Path, receiver: Receiver, tmp_path: Path
) -> None:
    secret = tmp_path / "otlp-headers"
    secret.write_text("# the backend's key\nx-api-key = s3cr3t\n")
    secret.chmod(0o644)
    config = tmp_path / "asz.toml"
    config.write_text(
        f'[otlp]\nendpoint = "{receiver.url}"\nheaders = ["x-team=asz"]\n'
        f'headers_file = "{secret}"\n'
    )
    malformed = tmp_path / "malformed.toml"
    malformed.write_text(f'[otlp]\nendpoint = "{receiver.url}"\nheaders = ["x-key: s3cr3t"]\n')
    bad = export(tmp_path, root, "--config", str(malformed))
    assert bad.returncode == 2 and b"name=value" in bad.stderr
    assert b"s3cr3t" not in bad.stderr + bad.stdout
    refused = export(tmp_path, root, "--config", str(config))
    assert refused.returncode == 2
    assert "chmod 600" in refused.stderr.decode()
    assert receiver.received.requests == []

    secret.chmod(0o600)
    done = export(tmp_path, root, "--config", str(config), sessions(tmp_path, root)[0][:8])
    assert done.returncode == 0, done.stderr
    headers = {k.lower(): v for k, v in receiver.received.requests[-1].items()}
    assert headers["x-api-key"] == "s3cr3t" and headers["x-team"] == "asz"
    assert b"s3cr3t" not in refused.stderr + done.stdout + done.stderr
    assert len({span["trace_id"] for span in receiver.spans()}) == 1

    env = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.url,
        "OTEL_EXPORTER_OTLP_HEADERS": "authorization=Bearer%20t0k",
        "OTEL_SERVICE_NAME": "team-agents",
    }
    other = tmp_path / "other"
    shutil.copytree(root, other, symlinks=True, ignore=shutil.ignore_patterns("otlp"))
    done = export(tmp_path, other, env=env)
    assert done.returncode == 0, done.stderr
    headers = {k.lower(): v for k, v in receiver.received.requests[-1].items()}
    assert headers["authorization"] == "Bearer t0k"
    assert receiver.spans()[-1]["resource"]["service.name"] == ("string_value", "team-agents")


def test_no_endpoint_is_a_usage_error(root: Path, tmp_path: Path) -> None:
    done = export(tmp_path, root)
    assert done.returncode == 2
    assert "no OTLP endpoint" in done.stderr.decode()
    assert not (root / "_state" / "otlp").exists()


def test_a_failed_batch_leaves_every_session_it_did_not_reach_unfinished(
    root: Path, receiver: Receiver
) -> None:
    """The service exports the unfinished sessions again after a later pass; a session the
    export never reached because a batch failed before it must be among them."""
    store = open_store(root)
    ids = sorted(store.sessions())
    receiver.refuse = 1_000
    sender = SpanSender(resolve_target(receiver.url, (), "", 1.0))
    try:
        cursors = Cursors(store, sender.target.traces_url)
        export = SpanExport(store, price_table(), sender, cursors, batch=1, quiet_seconds=0)
        tally = export.run(ids)
    finally:
        sender.close()
    assert tally.error is not None
    assert export.unfinished == set(ids)
