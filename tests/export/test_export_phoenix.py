"""The export read back from a real OpenTelemetry backend, Arize Phoenix (``phoenix_server``).

A synthetic capture landed by the real collector is exported by the real ``asz export otlp``,
and every span is read back over Phoenix's REST API: one per call of the view, the token counts
of the cache report (the responses', else the transcripts'), its causes and costs, each
subagent call under the call that started it. Each test sends to a Phoenix project of its own
(``openinference.project.name`` in ``OTEL_RESOURCE_ATTRIBUTES``).
"""

from __future__ import annotations

import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.cli import asz_executable
from support.harness import Capture, Workspace, metrics, running, service_port, wait_for
from support.phoenix_server import Phoenix, phoenix  # noqa: F401  (the fixture)
from support.serving import child_env, land

from asz.synth import SynthOptions, synthesize

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The landed root and the Claude Code directory it came from."""
    tmp = tmp_path_factory.mktemp("phoenix-root")
    claude = tmp / "claude"
    synthesize(claude, SynthOptions(seed=4))
    return land(tmp, claude), claude


def asz(tmp: Path, *args: str, project: str = "default") -> subprocess.CompletedProcess:
    env = {"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}
    return subprocess.run(
        [*asz_executable(), *args],
        env=child_env(tmp / "home", env),
        capture_output=True,
        timeout=120,
        check=False,
    )


def read_json(tmp: Path, *args: str) -> Any:
    done = asz(tmp, *args)
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def test_every_call_reads_back_from_phoenix_with_the_reports_figures(
    phoenix: Phoenix,  # noqa: F811
    landed: tuple[Path, Path],
    tmp_path: Path,
) -> None:
    root = tmp_path / "root"
    shutil.copytree(landed[0], root, symlinks=True)
    project = "every-call"
    done = asz(tmp_path, "export", "otlp", "--root", str(root), "--endpoint", phoenix.url,
               "--json", project=project)  # fmt: skip
    assert done.returncode == 0, done.stderr
    sent = orjson.loads(done.stdout)["spans_sent"]
    spans = phoenix.wait_for_spans(sent, project=project)
    assert len(spans) == sent
    by_id = {span["context"]["span_id"]: span for span in spans}
    by_message = {
        span["attributes"]["gen_ai.response.id"]: span
        for span in spans
        if "gen_ai.response.id" in span["attributes"]
    }
    listed = read_json(tmp_path, "sessions", "--root", str(root), "--json")
    calls_seen = 0
    for session in sorted(entry["id"] for entry in listed):
        view = read_json(tmp_path, "view", "--root", str(root), session, "--json")
        report = read_json(tmp_path, "cache", "--root", str(root), session, "--json")
        rows = {row["message_id"]: row for row in report["rows"] if row["message_id"]}
        parents = {
            stream["id"]: stream["started_by"]["message_id"]
            for stream in view["streams"]
            if stream["started_by"]
        }
        for call in view["calls"]:
            if call["synthetic"]:
                continue
            calls_seen += 1
            span = by_message[call["message_id"]]
            row = rows[call["message_id"]]
            attributes = span["attributes"]
            assert attributes["gen_ai.conversation.id"] == session
            assert attributes["gen_ai.usage.output_tokens"] == row["output_tokens"]
            assert (
                attributes["gen_ai.usage.cache_read.input_tokens"]
                == (row["cache_read_input_tokens"])
            )
            assert (
                attributes["gen_ai.usage.cache_creation.input_tokens"]
                == (row["cache_creation_input_tokens"])
            )
            assert attributes["gen_ai.usage.input_tokens"] == (
                row["input_tokens"]
                + row["cache_read_input_tokens"]
                + row["cache_creation_input_tokens"]
            )
            assert attributes.get("asz.cache.cause") == row["cause"]
            assert attributes.get("asz.cache.rewritten_tokens") == row["rewritten_tokens"]
            assert attributes.get("asz.cost_usd") == pytest.approx(row["cost_usd"])
            assert attributes.get("asz.waste_usd") == pytest.approx(row["waste_usd"])
            parent = parents.get(call["stream"])
            if parent is None:
                assert span["parent_id"] is None
            else:
                above = by_id[span["parent_id"]]
                assert above["attributes"]["gen_ai.response.id"] == parent
                assert span["context"]["trace_id"] == above["context"]["trace_id"]
    assert calls_seen == len(by_message)
    assert any(span["parent_id"] for span in spans), "the capture has subagents"

    again = asz(tmp_path, "export", "otlp", "--root", str(root), "--endpoint", phoenix.url,
                "--json", project=project)  # fmt: skip
    assert again.returncode == 0, again.stderr
    assert orjson.loads(again.stdout)["spans_sent"] == 0
    assert len(phoenix.spans(project)) == len(spans)


def test_a_service_killed_mid_export_leaves_each_call_once_in_phoenix(
    phoenix: Phoenix,  # noqa: F811
    tmp_path: Path,
) -> None:
    project = "killed"
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=12)  # some hundred spans, sent one per batch
    config = tmp_path / "home" / ".config" / "asz"
    config.mkdir(parents=True)
    (config / "asz.toml").write_text(
        f'[otlp]\nendpoint = "{phoenix.url}"\nbatch_spans = 1\nbackoff = 0.1\nmetrics = false\n'
    )
    env = {"OTEL_RESOURCE_ATTRIBUTES": f"openinference.project.name={project}"}
    log = tmp_path / "service.log"
    sent: list[float] = []

    def some_sent() -> bool:
        sent[:] = [metrics(port).get("asz_otlp_spans_sent_total", 0.0)]
        return sent[0] >= 3

    with running(ws.start_service(log, env)) as service:
        port = service_port(log)
        wait_for(some_sent, what="a few spans sent")
        service.send_signal(signal.SIGKILL)
        service.wait(timeout=30)
    dry = ws.run("export", "otlp", "--dry-run", "--json")
    want = {span["span_id"] for span in orjson.loads(dry.stdout)["spans"]}
    assert sent[0] < len(want), "killed before the export ended"
    again = tmp_path / "again.log"
    with running(ws.start_service(again, env)):
        port = service_port(again)

        def ended() -> bool:
            seen = metrics(port)
            return (
                seen["asz_otlp_last_export_success_timestamp_seconds"] > 0
                and seen["asz_otlp_spans_waiting"] == 0
            )

        wait_for(ended, what="the export to end")
    spans = phoenix.wait_for_spans(len(want), project=project)
    ids = Counter(span["context"]["span_id"] for span in spans)
    assert set(ids) == want and max(ids.values()) == 1
