"""Failures no retry mends end the push at once, with the cause as S3 (or the network) gave it.

A bucket that is not there, credentials refused or missing, an endpoint that is gone: every
other request of the push would meet the same, so the push stops after the first (or, for an
endpoint that does not answer, after the breaker's few in a row), says so in one line, and
exits 1. What it did not send waits for the next push. Throttling and resets are not of
these: they are retried, and the workers pause together.
"""

from __future__ import annotations

import json
import socket
from pathlib import Path

import pytest
from support.archive_roots import Machine, bucket_prefix, is_pushed_file, landed_keys, pushed_files
from support.s3server import BUCKET, CREDENTIALS, FaultProxy, S3Server, archive_config, proxied

from asz.archive.retry import BREAKER
from asz.synth import SynthOptions


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    landed = Machine(tmp_path_factory.mktemp("laptop"))
    landed.land(SynthOptions(seed=5, sessions=4, index=True))
    return landed


def _one_line(done: object, *needles: str) -> str:
    """Exit 1 and one line on stderr, naming the cause."""
    assert done.returncode == 1, done.stderr  # type: ignore[attr-defined]
    said = done.stderr.decode().strip().splitlines()  # type: ignore[attr-defined]
    assert len(said) == 1, said
    for needle in needles:
        assert needle in said[0], said
    assert "Traceback" not in said[0]
    return said[0]


def test_no_such_bucket_ends_the_push_at_once(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    with proxied(s3) as proxy:
        config = archive_config(tmp_path / "asz.toml", proxy.endpoint, "x")
        config.write_text(config.read_text().replace(BUCKET, "no-such-bucket-here"))
        done = machine.push(config, "--json")
        line = _one_line(done, "NoSuchBucket", "the next push resumes")
        assert "s3://no-such-bucket-here/x" in line
        counts = json.loads(done.stdout)
        assert counts["errors"] == [] and not counts["complete"]
        assert counts["waiting_files"] == len(landed_keys(machine.store(), "x"))
        assert len(proxy.seen) <= 2, proxy.seen  # not one request per file


@pytest.mark.parametrize(
    "code",
    ["InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied"],
)
def test_refused_credentials_end_the_push_at_once(
    s3: S3Server, machine: Machine, tmp_path: Path, code: str
) -> None:
    def fault(method: str, key: str, n: int) -> str:
        return f"error:{code}:403"

    with proxied(s3, fault) as proxy:
        done = machine.push(machine.configure(proxy.endpoint, bucket_prefix(tmp_path)), "--json")
        _one_line(done, code)
        assert len(proxy.seen) == 1, proxy.seen
    assert s3.objects(bucket_prefix(tmp_path) + "/") == {}


def test_credentials_that_may_read_but_not_write_end_the_push_at_its_first_put(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    def fault(method: str, key: str, n: int) -> str:
        return "error:AccessDenied:403" if method == "PUT" else ""

    with proxied(s3, fault) as proxy:
        config = machine.configure(proxy.endpoint, bucket_prefix(tmp_path), workers=8)
        done = machine.push(config, "--json")
        _one_line(done, "AccessDenied")
        assert proxy.requests("PUT") <= 8  # the ones already in flight, then none


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_endpoint_nothing_listens_on_ends_the_push_after_the_breaker(
    machine: Machine, tmp_path: Path
) -> None:
    port = _closed_port()
    config = machine.configure(f"http://127.0.0.1:{port}", bucket_prefix(tmp_path), workers=8)
    done = machine.push(config, "--json")
    _one_line(done, f"connection refused to 127.0.0.1:{port}")
    counts = json.loads(done.stdout)
    assert counts["retries"] < BREAKER and counts["errors"] == []


def test_no_credentials_says_where_asz_looked(machine: Machine, tmp_path: Path) -> None:
    port = _closed_port()
    config = machine.configure(f"http://127.0.0.1:{_closed_port()}", bucket_prefix(tmp_path))
    env = {k: v for k, v in machine.env().items() if k not in CREDENTIALS}
    # The instance metadata endpoint, the chain's last resort, moved where nothing answers.
    env |= {"AWS_METADATA_ENDPOINT": f"http://127.0.0.1:{port}", "AWS_REGION": "us-east-1"}
    done = machine.asz_env(env, "push", "--root", str(machine.root), "--config", str(config))
    _one_line(done, "no credentials found", "AWS_ACCESS_KEY_ID", "~/.aws/credentials")
    assert "testing" not in done.stderr.decode()


def test_the_server_gone_midway_stops_after_the_breaker_and_the_next_push_resumes(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    want = landed_keys(machine.store(), prefix)
    holder: list[FaultProxy] = []
    files = [0]

    def fault(method: str, key: str, n: int) -> str:
        if method == "PUT" and is_pushed_file(key):  # past the marker, claims and extents
            files[0] += 1
            if files[0] == 3:
                holder[0].refuse()  # the server is gone: every connection from now is refused
        return ""

    with proxied(s3, fault) as proxy:
        holder.append(proxy)
        config = machine.configure(proxy.endpoint, prefix, workers=2)
        done = machine.push(config, "--json")
        line = _one_line(done, "connection refused", "still to push", "the next push resumes")
        counts = json.loads(done.stdout)
        assert counts["errors"] == [] and 0 < counts["waiting_files"] < len(want)
        assert f"{counts['waiting_files']} files still to push" in line
        proxy.listen()
        again = machine.push(config, "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["waiting_files"] == 0
        held = s3.objects(prefix + "/")
        assert pushed_files(held) == want
        assert proxy.puts(412) == {}


def test_throttling_pauses_every_worker_together(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    """One worker meets SlowDown: every worker waits (at least half the first backoff, 0.4 s
    here) before its next request, rather than the other seven going on at full speed."""
    prefix = bucket_prefix(tmp_path)

    def fault(method: str, key: str, n: int) -> str:
        return "503" if method == "PUT" and n == 5 else ""

    with proxied(s3, fault) as proxy:
        config = machine.configure(proxy.endpoint, prefix, workers=8, backoff=0.4, backoff_cap=1.0)
        done = machine.push(config, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["retries"] == 1
        throttled = next(seen.at for seen in proxy.seen if seen.status == 503)
        during = [s for s in proxy.seen if throttled + 0.05 < s.at < throttled + 0.35]
        assert during == [], during
        assert any(seen.at > throttled for seen in proxy.seen)  # and then it went on
        assert proxy.puts(412) == {}
