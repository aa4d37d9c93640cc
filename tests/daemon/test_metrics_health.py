"""Metrics and health: the registry and the endpoint on their own, then the real service.

The endpoint is always asked over real HTTP. The end-to-end test checks the two gauges that
matter most to an operator against what ``asz collect --once --json`` says of the same
directories, so the service and a single pass cannot drift apart.
"""

from __future__ import annotations

import http.client
import os
import socket
import time
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from support.claude_dir import Claude, request_body, response_body
from support.service import FAST, A, run_asz, running_service

from asz import __version__
from asz.archive.push_tally import PushTally
from asz.daemon.http import HealthState, ListenError, StatusServer, parse_listen
from asz.daemon.metrics import ERROR_KINDS, ServiceMetrics
from asz.redact import RULE_NAMES
from asz.tally import Tally


def samples(metrics: ServiceMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def a_pass(**counts: object) -> Tally:
    return Tally(**counts)  # type: ignore[arg-type]


# -- the registry ----------------------------------------------------------------------------


def test_gauges_follow_the_last_pass_and_counters_add_up() -> None:
    metrics = ServiceMetrics("9.9.9")
    metrics.record_pass(
        a_pass(bodies_landed=3, bodies_waiting=2, transcript_lines_landed=7, seconds=0.2),
        finished_at=1000.0,
    )
    metrics.record_pass(
        a_pass(bodies_landed=1, bodies_waiting=1, bodies_unreadable=4, errors=["x", "y"]),
        finished_at=2000.0,
    )
    found = samples(metrics)
    assert found[("asz_bodies_waiting", ())] == 1
    assert found[("asz_bodies_unreadable", ())] == 4
    assert found[("asz_bodies_landed_total", ())] == 4
    assert found[("asz_transcript_lines_landed_total", ())] == 7
    assert found[("asz_errors_total", (("kind", "pass"),))] == 2
    assert found[("asz_pass_duration_seconds_count", ())] == 2
    assert found[("asz_last_pass_timestamp_seconds", ())] == 2000.0
    assert found[("asz_build_info", (("version", "9.9.9"),))] == 1


def test_every_error_kind_is_exposed_from_the_start_and_no_other_is_taken() -> None:
    metrics = ServiceMetrics(__version__)
    found = samples(metrics)
    for kind in ERROR_KINDS:
        assert found[("asz_errors_total", (("kind", kind),))] == 0
    metrics.record_error("watch")
    assert samples(metrics)[("asz_errors_total", (("kind", "watch"),))] == 1
    with pytest.raises(ValueError):
        metrics.record_error("some session id")


@given(
    st.lists(
        st.builds(
            Tally,
            sessions=st.sets(st.uuids().map(str), max_size=3),
            bodies_landed=st.integers(0, 10**6),
            bodies_waiting=st.integers(0, 10**6),
            # the conflicts count is the number of conflict sources
            conflict_sources=st.lists(st.text(max_size=20), max_size=10),
            errors=st.lists(st.text(max_size=20), max_size=3),
            seconds=st.floats(0, 1000),
        ),
        max_size=5,
    )
)
def test_no_label_ever_names_a_session_or_a_path(passes: list[Tally]) -> None:
    metrics = ServiceMetrics(__version__)
    for counts in passes:
        metrics.record_pass(counts, finished_at=1.0)
    for _name, labels in samples(metrics):
        assert {key for key, _ in labels} <= {"kind", "version", "le", "rule"}


@given(
    st.dictionaries(
        st.one_of(st.sampled_from(RULE_NAMES), st.text(max_size=40)), st.integers(0, 10**6)
    ),
    st.lists(st.text(max_size=40), max_size=3),
)
def test_redactions_are_counted_by_rule_name_and_nothing_else_becomes_a_label(
    redactions: dict[str, int], failed: list[str]
) -> None:
    """Whatever a push's tally names (a redactor's rule, or anything else: a value would be
    the worst), the series are the known rules', created at start."""
    metrics = ServiceMetrics(__version__)
    tally = PushTally("s3://bucket/team", redactions=redactions, redaction_failed=failed)
    metrics.archive.record(tally, finished_at=1.0)
    found = samples(metrics)
    rules = {dict(labels)["rule"] for name, labels in found if name == "asz_redactions_total"}
    assert rules == set(RULE_NAMES)
    for rule in RULE_NAMES:
        want = redactions.get(rule, 0)
        assert found[("asz_redactions_total", (("rule", rule),))] == want
    assert found[("asz_redaction_failures_total", ())] == len(failed)


# -- the endpoint ----------------------------------------------------------------------------


def ask(port: int, path: str) -> tuple[int, str, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        connection.close()


@pytest.fixture
def served() -> tuple[StatusServer, HealthState, ServiceMetrics]:
    health = HealthState(__version__)
    metrics = ServiceMetrics(__version__)
    server = StatusServer("127.0.0.1:0", health, metrics)
    server.start()
    yield server, health, metrics
    server.close()


def test_port_0_picks_a_free_port_on_the_address_given(served) -> None:
    server, _, _ = served
    host, port = server.address
    assert host == "127.0.0.1" and port > 0


def test_metrics_are_served_in_the_text_format(served) -> None:
    server, _, metrics = served
    metrics.record_pass(a_pass(bodies_waiting=5), finished_at=3.0)
    status, content_type, body = ask(server.address[1], "/metrics")
    assert status == 200 and content_type.startswith("text/plain")
    assert b"asz_bodies_waiting 5.0" in body


def test_healthz_reports_the_loop_and_the_last_pass_and_503_when_the_loop_stalls(served) -> None:
    server, health, _ = served
    port = server.address[1]
    status, content_type, body = ask(port, "/healthz")
    report = orjson.loads(body)
    assert status == 200 and content_type == "application/json"
    assert report["version"] == __version__ and report["last_pass"] is None
    assert report["uptime_seconds"] >= 0
    health.pass_done(a_pass(transcript_files=1, bodies_landed=1).as_dict(), finished_at=1234.5)
    report = orjson.loads(ask(port, "/healthz")[2])
    assert report["last_pass_at"] == 1234.5 and report["last_pass"]["landed"] == 2
    health.last_tick = time.monotonic() - 3600
    status, _, body = ask(port, "/healthz")
    assert status == 503 and orjson.loads(body)["status"] == "stalled"
    health.tick()
    assert ask(port, "/healthz")[0] == 200


def test_readyz_is_503_until_the_first_scan_is_done(served) -> None:
    server, health, _ = served
    port = server.address[1]
    assert ask(port, "/readyz")[0] == 503
    health.ready = True
    assert ask(port, "/readyz")[0] == 200
    assert ask(port, "/no-such-page")[0] == 404


def test_an_ipv6_listen_address_is_served_on_ipv6() -> None:
    if not socket.has_ipv6:
        pytest.skip("no IPv6 here")
    health = HealthState(__version__)
    try:
        server = StatusServer("[::1]:0", health, ServiceMetrics(__version__))
    except OSError:
        pytest.skip("::1 cannot be bound here")
    server.start()
    try:
        host, port = server.address
        connection = http.client.HTTPConnection("::1", port, timeout=5)
        connection.request("GET", "/healthz")
        assert host == "::1" and connection.getresponse().status == 200
        connection.close()
    finally:
        server.close()


@given(
    st.one_of(
        st.ip_addresses(v=4).map(str), st.sampled_from(["localhost", "0.0.0.0", "example.org"])
    ),
    st.integers(0, 65535),
)
def test_parse_listen_takes_host_and_port(host: str, port: int) -> None:
    assert parse_listen(f"{host}:{port}") == (host, port)


@given(st.ip_addresses(v=6).map(str), st.integers(0, 65535))
def test_parse_listen_takes_a_bracketed_ipv6_address(host: str, port: int) -> None:
    assert parse_listen(f"[{host}]:{port}") == (host, port)


@pytest.mark.parametrize("listen", ["", "9477", "host:", ":9477", "h:99999", "h:x", "::1:9477"])
def test_parse_listen_refuses_what_is_not_host_and_port(listen: str) -> None:
    with pytest.raises(ListenError):
        parse_listen(listen)


# -- the real service ------------------------------------------------------------------------


def listening_sockets(pid: int) -> set[tuple[str, int]]:
    """The TCP addresses ``pid`` listens on, read from /proc (Linux only)."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        target = os.readlink(fd)
        if target.startswith("socket:["):
            inodes.add(target[len("socket:[") : -1])
    found = set()
    for table, width in (("tcp", 4), ("tcp6", 16)):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state != "0A" or inode not in inodes:
                continue
            address, port = local.split(":")
            raw = bytes.fromhex(address)
            if width == 4:
                host = socket.inet_ntop(socket.AF_INET, raw[::-1])
            else:
                words = b"".join(raw[i : i + 4][::-1] for i in range(0, 16, 4))
                host = socket.inet_ntop(socket.AF_INET6, words)
            found.add((host, int(port, 16)))
    return found


@pytest.mark.slow
def test_the_service_gauges_agree_with_a_single_pass(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    config = tmp_path / "asz.toml"
    config.write_text("[service]\nunreadable_after = 0.5\n")
    claude.start_transcript(A)
    claude.body("r1.request.json", request_body(A, "one"))
    claude.body("req_title.response.json", response_body("msg_title"))
    claude.body("req_other.response.json", response_body("msg_other"))
    with running_service(
        tmp_path,
        claude.path,
        tmp_path / "root",
        *FAST,
        "--rescan-interval",
        "600",
        "--config",
        str(config),
    ) as svc:
        svc.wait_ready()
        # Written while it runs: the settle queue parks it, and hands it to a pass once it
        # has been unreadable for unreadable_after.
        claude.body("broken.request.json", b'{"model": "claude-te')
        svc.wait_for_metric("asz_bodies_unreadable", lambda value: value == 1)
        once = run_asz(
            tmp_path,
            claude.path,
            "collect",
            "--once",
            "--json",
            "--root",
            str(tmp_path / "other-root"),
            "--config",
            str(config),
        )
        counts = orjson.loads(once.stdout)
        metrics = svc.metrics()
        assert (counts["bodies_waiting"], counts["bodies_unreadable"]) == (2, 1)
        assert metrics["asz_bodies_waiting"] == counts["bodies_waiting"]
        assert metrics["asz_bodies_unreadable"] == counts["bodies_unreadable"]
        assert metrics["asz_bodies_excluded"] == counts["bodies_excluded"]
        assert metrics[f"asz_build_info{{version={__version__}}}"] == 1
        assert metrics["asz_pass_duration_seconds_count"] >= 2
        assert metrics["asz_last_pass_timestamp_seconds"] > 0
        status, body = svc.get("/healthz")
        report = orjson.loads(body)
        assert status == 200 and report["ready"] is True
        assert report["last_pass"]["bodies_unreadable"] == 1
        if Path("/proc/self/net/tcp").exists():
            assert listening_sockets(svc.process.pid) == {("127.0.0.1", svc.port)}
        assert svc.stop() == 0
