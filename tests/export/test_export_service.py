"""The service exports what it lands to the OTLP endpoint in a task of its own: landing never
waits for it, an endpoint that is down is tried again with backoff and ``/healthz`` says so,
the metrics count spans sent, waiting and failed, the cache-cost counters go over OTLP too, and
a service killed mid-export and started again sends each call once (the last batch at most
twice, to a backend that keeps spans by id once)."""

from __future__ import annotations

import signal
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support.harness import Capture, Workspace, http_get, metrics, running, service_port, wait_for
from support.otlp_receiver import Receiver

pytestmark = pytest.mark.slow


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    found = Receiver()
    yield found
    found.close()


def workspace(tmp_path: Path, receiver: Receiver, **otlp: object) -> Workspace:
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=2)
    settings = {"endpoint": receiver.url, "timeout": 1, "backoff": 0.1, "backoff_cap": 0.5}
    settings.update(otlp)
    lines = "".join(f"{key} = {orjson.dumps(value).decode()}\n" for key, value in settings.items())
    config = tmp_path / "home" / ".config" / "asz"
    config.mkdir(parents=True)
    (config / "asz.toml").write_text(f"[otlp]\n{lines}")
    return ws


def planned(ws: Workspace) -> list[str]:
    """The span ids a whole export of the root sends, from a dry run."""
    done = ws.run("export", "otlp", "--dry-run", "--json")
    assert done.returncode == 0, done.stderr
    return [span["span_id"] for span in orjson.loads(done.stdout)["spans"]]


def test_the_service_exports_what_it_lands_and_its_cache_counters(
    receiver: Receiver, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, receiver, metrics_interval=0.2)
    log = tmp_path / "service.log"
    with running(ws.start_service(log)) as service:
        port = service_port(log)

        def all_sent() -> bool:
            seen = metrics(port)
            return seen.get("asz_bodies_landed_total", 0) > 0 and seen.get(
                "asz_otlp_spans_sent_total", 0
            ) == len(receiver.spans())

        wait_for(all_sent, what="the landed calls to be exported")
        wait_for(lambda: len(receiver.spans()) == len(planned(ws)), what="every span")
        seen = metrics(port)
        status, body = http_get(port, "/healthz")
        assert status == 200
        health = orjson.loads(body)
        assert health["status"] == "ok" and health["otlp"]["failing_seconds"] is None
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
    ids = Counter(span["span_id"] for span in receiver.spans())
    assert set(ids) == set(planned(ws)) and max(ids.values()) == 1
    assert seen["asz_otlp_spans_failed_total"] == 0
    assert seen["asz_otlp_spans_waiting"] == 0

    # The last values of each OTLP counter are the Prometheus counters' figures.
    last: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for metric in receiver.metrics():
        for point in metric["points"]:
            last[(metric["name"], tuple(sorted(point["attributes"].items())))] = point["value"]
    calls = {k[1]: v for k, v in last.items() if k[0] == "asz.model.calls"}
    assert calls and sum(calls.values()) == sum(
        value for key, value in seen.items() if key.startswith("asz_model_calls_total")
    )
    tokens = sum(v for k, v in last.items() if k[0] == "asz.model.tokens")
    assert tokens == sum(v for k, v in seen.items() if k.startswith("asz_model_tokens_total"))
    breaks = sum(v for k, v in last.items() if k[0] == "asz.cache.breaks")
    assert breaks == sum(v for k, v in seen.items() if k.startswith("asz_cache_breaks_total"))
    assert breaks > 0


def test_an_endpoint_that_is_down_never_holds_landing_up_and_healthz_says_so(
    receiver: Receiver, tmp_path: Path
) -> None:
    ws = workspace(tmp_path, receiver, unhealthy_after=0.5)
    receiver.refuse = 1_000_000
    log = tmp_path / "service.log"
    with running(ws.start_service(log)):
        port = service_port(log)

        def failing() -> bool:
            status, body = http_get(port, "/healthz")
            return status == 503 and orjson.loads(body)["status"] == "export_failing"

        wait_for(failing, what="/healthz to say exports fail")
        seen = metrics(port)
        assert seen["asz_bodies_landed_total"] > 0  # landing went on
        assert seen["asz_otlp_spans_failed_total"] > 0
        assert seen["asz_otlp_spans_waiting"] > 0
        assert seen["asz_otlp_spans_sent_total"] == 0
        tries = len(receiver.received.requests)
        wait_for(lambda: len(receiver.received.requests) > tries, what="another try")
        receiver.refuse = 0

        def healthy() -> bool:
            status, _ = http_get(port, "/healthz")
            return status == 200 and metrics(port)["asz_otlp_spans_waiting"] == 0

        wait_for(healthy, what="the export to catch up")
    ids = Counter(span["span_id"] for span in receiver.spans())
    assert set(ids) == set(planned(ws)) and max(ids.values()) == 1


def test_a_service_killed_mid_export_sends_each_call_once_and_the_last_batch_at_most_twice(
    receiver: Receiver, tmp_path: Path
) -> None:
    batch = 4
    ws = workspace(tmp_path, receiver, batch_spans=batch, timeout=10)
    receiver.delay = 0.2
    log = tmp_path / "service.log"
    with running(ws.start_service(log)) as service:
        wait_for(lambda: len(receiver.spans()) >= 2 * batch, what="two batches taken")
        service.send_signal(signal.SIGKILL)
        service.wait(timeout=30)
    before = len(receiver.spans())
    want = set(planned(ws))
    assert before < len(want), "killed before the export ended"
    receiver.delay = 0.0
    with running(ws.start_service(log)):
        wait_for(lambda: {s["span_id"] for s in receiver.spans()} == want, what="every span")
    ids = Counter(span["span_id"] for span in receiver.spans())
    assert set(ids) == want
    assert sum(ids.values()) - len(want) <= batch
