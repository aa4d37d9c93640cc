"""The service pushes to the archive after each landing pass, without ever holding landing up,
and says how the pushes go in its metrics and on ``/healthz``."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import orjson
import pytest
from support.archive_roots import bucket_prefix, landed_keys, pushed_files
from support.harness import Capture, Workspace, http_get, metrics, running, service_port, wait_for
from support.s3server import CREDENTIALS, S3Server, archive_config, proxied

from asz.store import open_store


def _workspace(tmp_path: Path, endpoint: str, prefix: str, **extra: object) -> Workspace:
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=2)
    config_dir = tmp_path / "home" / ".config" / "asz"
    config_dir.mkdir(parents=True)
    archive_config(config_dir / "asz.toml", endpoint, prefix, **extra)
    return ws


def _env(tmp_path: Path) -> dict[str, str]:
    return {**CREDENTIALS, "XDG_CACHE_HOME": str(tmp_path / "cache")}


def test_the_service_pushes_what_it_lands(s3: S3Server, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)
    with proxied(s3) as proxy:
        ws = _workspace(tmp_path, proxy.endpoint, prefix)
        log = tmp_path / "service.log"
        with running(ws.start_service(log, _env(tmp_path))):
            port = service_port(log)

            def all_pushed() -> bool:
                seen = metrics(port)
                return (
                    seen.get("asz_bodies_landed_total", 0) > 0
                    and seen.get("asz_archive_pushed_files_total", 0) > 0
                    and seen.get("asz_archive_waiting_files", 1) == 0
                )

            wait_for(all_pushed, what="the landed files to be pushed")
            seen = metrics(port)
            status, body = http_get(port, "/healthz")
            assert status == 200
            health = orjson.loads(body)
            assert health["status"] == "ok" and health["archive"]["failing_seconds"] is None
        want = landed_keys(open_store(ws.root), prefix)
        assert seen["asz_archive_pushed_files_total"] == len(want)
        assert seen["asz_archive_pushed_bytes_total"] == sum(map(len, want.values()))
        assert seen["asz_archive_push_errors_total"] == 0
        held = pushed_files(s3.objects(prefix + "/"))
        assert held == want
        assert proxy.puts(412) == {}


@pytest.mark.slow
def test_failing_pushes_never_hold_landing_up_and_healthz_says_so(
    s3: S3Server, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    broken = {"on": True}

    def fault(method: str, key: str, n: int) -> str:
        return "reset-before" if broken["on"] else ""

    with proxied(s3, fault) as proxy:
        ws = _workspace(tmp_path, proxy.endpoint, prefix, unhealthy_after=0.5)
        log = tmp_path / "service.log"
        with running(ws.start_service(log, _env(tmp_path))):
            port = service_port(log)

            def failing() -> bool:
                status, body = http_get(port, "/healthz")
                return status == 503 and orjson.loads(body)["status"] == "push_failing"

            wait_for(failing, what="/healthz to say pushes fail")
            seen = metrics(port)
            assert seen["asz_bodies_landed_total"] > 0  # landing went on
            assert seen["asz_archive_push_errors_total"] > 0
            assert seen["asz_archive_retries_total"] > 0
            assert seen["asz_archive_waiting_files"] > 0
            assert seen["asz_archive_pushed_files_total"] == 0
            broken["on"] = False  # the network is back: the next pass's push completes

            def healthy() -> bool:
                status, _ = http_get(port, "/healthz")
                return status == 200 and metrics(port)["asz_archive_waiting_files"] == 0

            wait_for(healthy, what="the pushes to catch up")
        want = landed_keys(open_store(ws.root), prefix)
        held = pushed_files(s3.objects(prefix + "/"))
        assert held == want
        assert proxy.puts(412) == {}
        assert set(proxy.puts(200).values()) == {1}


def test_the_metrics_move_while_a_long_push_goes(s3: S3Server, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)
    with proxied(s3, lambda method, key, n: "slow" if method == "PUT" else "") as proxy:
        proxy.delay = 0.3
        ws = _workspace(tmp_path, proxy.endpoint, prefix, workers=2)
        log = tmp_path / "service.log"
        with running(ws.start_service(log, _env(tmp_path))):
            port = service_port(log)
            seen: list[tuple[float, float]] = []

            def midway() -> bool:
                now = metrics(port)
                pushed = now.get("asz_archive_pushed_files_total", 0)
                waiting = now.get("asz_archive_waiting_files", 0)
                seen.append((pushed, waiting))
                return pushed > 0 and waiting > 0

            wait_for(midway, what="objects counted while files still wait")
            wait_for(lambda: midway() and seen[-1][1] < seen[-2][1], what="the waiting to fall")


@pytest.mark.slow
def test_the_service_pushes_redacted_and_counts_redactions_by_rule(
    s3: S3Server, tmp_path: Path
) -> None:
    from asz.redact import RULE_NAMES

    prefix = bucket_prefix(tmp_path)
    ws = _workspace(tmp_path, s3.endpoint, prefix, redact=True)
    log = tmp_path / "service.log"
    env = {**_env(tmp_path), "ASZ_REDACT_KEY": "a team's redaction key, long enough"}
    with running(ws.start_service(log, env)):
        port = service_port(log)

        def all_pushed() -> bool:
            seen = metrics(port)
            return (
                seen.get("asz_archive_pushed_files_total", 0) > 0
                and seen.get("asz_archive_waiting_files", 1) == 0
            )

        wait_for(all_pushed, what="the landed files to be pushed")
        seen = metrics(port)
    counted = {key: n for key, n in seen.items() if key.startswith("asz_redactions_total{")}
    assert {key.split("=", 1)[1].rstrip("}") for key in counted} == set(RULE_NAMES)
    assert sum(counted.values()) > 0 and seen["asz_redaction_failures_total"] == 0
    held = pushed_files(s3.objects(prefix + "/"))
    want = landed_keys(open_store(ws.root), prefix)
    assert held.keys() == want.keys() and held != want  # each file, redacted


def test_the_service_pushes_at_most_every_push_interval(s3: S3Server, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)
    with proxied(s3) as proxy:
        ws = _workspace(tmp_path, proxy.endpoint, prefix, push_interval=4.0)
        log = tmp_path / "service.log"
        with running(ws.start_service(log, _env(tmp_path))):
            port = service_port(log)

            def pushed(files: int) -> bool:
                seen = metrics(port)
                return (
                    seen.get("asz_archive_pushed_files_total", 0) >= files
                    and seen.get("asz_archive_waiting_files", 1) == 0
                )

            wait_for(lambda: pushed(1), what="the first push")
            first = metrics(port)["asz_archive_pushed_files_total"]
            transcript = next(ws.projects.rglob("*.jsonl"))
            with transcript.open("ab") as out:
                out.write(b'{"type":"summary","summary":"later"}\n')
            wait_for(lambda: pushed(first + 1), what="the line landed since to be pushed")
        # Each push starts at the record's marker: created by the first, looked for by the next.
        starts = [s.at for s in proxy.seen if "/_archive/roots/" in s.key]
    assert len(starts) >= 2
    assert all(later - earlier >= 3.9 for earlier, later in pairwise(starts))
