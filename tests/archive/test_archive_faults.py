"""Pushes through failures: connections reset before and after the server took a request,
503 throttling, the server stopped in the middle of a push, the collector killed during one.

Each ends with a bucket that verifies, holding every landed file (nothing lost), and, counted
at the proxy, exactly one PUT the server took per object and none it refused because the
object was there already (nothing uploaded twice: a push whose answer was lost looks before
it sends again).
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path

import pytest
from support.archive_roots import Machine, bucket_prefix, is_pushed_file, landed_keys, pushed_files
from support.harness import Capture, Workspace, running, wait_for
from support.s3server import BUCKET, CREDENTIALS, FaultProxy, S3Server, archive_config, proxied

from asz.store import open_store
from asz.synth import SynthOptions


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    landed = Machine(tmp_path_factory.mktemp("laptop"))
    landed.land(SynthOptions(seed=7, sessions=3, index=True))
    return landed


def _whole(s3: S3Server, proxy: FaultProxy, store_keys: dict[str, bytes], prefix: str) -> None:
    """Nothing lost, nothing twice."""
    held = s3.objects(prefix + "/")
    assert pushed_files(held) == store_keys
    puts = proxy.puts(200)
    assert set(puts) == set(held) and set(puts.values()) == {1}, puts
    assert proxy.puts(412) == {}


def _verifies(machine: Machine, s3: S3Server, prefix: str) -> None:
    done = machine.read(machine.configure(s3.endpoint, prefix), prefix, "verify")
    assert done.returncode == 0, done.stderr


def test_resets_before_and_after_the_server_took_the_request(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)

    def fault(method: str, key: str, n: int) -> str:
        if method == "PUT":
            return {0: "reset-after", 1: "reset-before"}.get(n % 3, "")
        return "reset-before" if method == "HEAD" and n % 4 == 0 else ""

    with proxied(s3, fault) as proxy:
        done = machine.push(machine.configure(proxy.endpoint, prefix, attempts=8), "--json")
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        assert counts["retries"] > 0 and counts["complete"]
        assert any(seen.fault == "reset-after" and seen.status == 200 for seen in proxy.seen)
        _whole(s3, proxy, landed_keys(machine.store(), prefix), prefix)
    _verifies(machine, s3, prefix)


def test_503_throttling_is_waited_out(s3: S3Server, machine: Machine, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)

    asked: Counter[tuple[str, str]] = Counter()

    def fault(method: str, key: str, n: int) -> str:
        asked[method, key] += 1
        return "503" if asked[method, key] <= 2 else ""  # SlowDown, twice for each

    with proxied(s3, fault) as proxy:
        done = machine.push(machine.configure(proxy.endpoint, prefix, attempts=8), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["retries"] >= proxy.requests("PUT") // 2
        _whole(s3, proxy, landed_keys(machine.store(), prefix), prefix)
    _verifies(machine, s3, prefix)


def test_the_server_stopped_in_the_middle_of_a_push(machine: Machine, tmp_path: Path) -> None:
    s3 = S3Server()  # its own: this test stops it
    prefix = bucket_prefix(tmp_path)
    want = landed_keys(machine.store(), prefix)

    files = [0]

    def fault(method: str, key: str, n: int) -> str:
        # Past the marker, the claims and the extents (a PUT each), with two workers each
        # sending one PUT at a time: every file before the two in flight at the 5th went.
        if method == "PUT" and is_pushed_file(key):
            files[0] += 1
            if files[0] == 5:
                s3.stop()  # this PUT and every request after it meet no server
        return ""

    try:
        with proxied(s3, fault) as proxy:
            config = machine.configure(proxy.endpoint, prefix, workers=2, attempts=3)
            done = machine.push(config, "--json")
            assert done.returncode == 1
            counts = json.loads(done.stdout)
            # Files failed one by one, or the breaker stopped the push: either says why.
            assert counts["errors"] or counts["stopped"]
            assert 0 < counts["waiting_files"] < len(want)
            _no_secrets(done.stdout + done.stderr)
            s3.start()
            again = machine.push(config, "--json")
            assert again.returncode == 0, again.stderr
            assert json.loads(again.stdout)["waiting_files"] == 0
            _whole(s3, proxy, want, prefix)
        _verifies(machine, s3, prefix)
    finally:
        s3.stop()


def _no_secrets(said: bytes) -> None:
    assert b"connect" in said.lower() or b"error" in said.lower()  # it said what failed
    for name in ("AWS_SECRET_ACCESS_KEY", "AWS_ACCESS_KEY_ID"):
        assert CREDENTIALS[name].encode() not in said


def test_errors_name_the_object_never_the_credentials(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    broken = sorted(landed_keys(machine.store(), prefix))[-1]

    def fault(method: str, key: str, n: int) -> str:  # that one object's PUT never gets there
        return "reset-before" if method == "PUT" and key == broken else ""

    with proxied(s3, fault) as proxy:
        done = machine.push(machine.configure(proxy.endpoint, prefix, attempts=2), "--json")
        proxy_host = f"127.0.0.1:{proxy.port}"
    assert done.returncode == 1
    counts = json.loads(done.stdout)
    assert counts["errors"] == [f"{broken}: the connection was reset ({proxy_host})"], counts
    _no_secrets(done.stdout + done.stderr)
    # Nothing answers at all: the push stops, and its one line names the archive and why.
    with proxied(s3, lambda method, key, n: "reset-before") as proxy:
        done = machine.push(machine.configure(proxy.endpoint, prefix, attempts=2), "--json")
    assert done.returncode == 1
    said = done.stderr.decode().strip().splitlines()
    assert len(said) == 1 and f"s3://{BUCKET}/{prefix} stopped" in said[0], said
    _no_secrets(done.stdout + done.stderr)


def test_a_bucket_that_stops_answering_mid_command_is_one_line_and_exit_1(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    # The first request (the root's listing) is answered, every later one is cut off.
    with proxied(s3, lambda method, key, n: "reset-before" if n > 1 else "") as proxy:
        broken = machine.configure(proxy.endpoint, prefix, attempts=2)
        done = machine.read(broken, prefix, "sessions")
    assert done.returncode == 1
    said = done.stderr.decode().strip().splitlines()
    assert len(said) == 1 and "the bucket did not answer" in said[0], said
    assert "Traceback" not in done.stderr.decode()
    _no_secrets(done.stdout + done.stderr)


@pytest.mark.slow
def test_the_collector_killed_during_a_push(s3: S3Server, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=3)
    env = {**CREDENTIALS, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    config = tmp_path / "home" / ".config" / "asz" / "asz.toml"
    config.parent.mkdir(parents=True)
    with proxied(s3, lambda method, key, n: "slow" if method == "PUT" else "") as proxy:
        proxy.delay = 0.3
        archive_config(config, proxy.endpoint, prefix, workers=2)
        with running(ws.start_service(tmp_path / "service.log", env)) as service:

            def under_way() -> bool:
                return sum(map(is_pushed_file, proxy.puts(200))) >= 3

            wait_for(under_way, what="a push under way")
            service.send_signal(signal.SIGKILL)
            service.wait(timeout=30)
        want = landed_keys(open_store(ws.root), prefix)
        # It was killed before the end: its record says files are still to go.
        left = json.loads(ws.run("push", "--dry-run", "--json", extra_env=env).stdout)
        assert 0 < len(left["would_push"]) < len(want)
        proxy.delay = 0.0
        done = ws.run("push", "--json", extra_env=env)
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        assert counts["waiting_files"] == 0
        assert counts["files"] + counts["already_there"] == len(left["would_push"])
        _whole(s3, proxy, want, prefix)
    done = ws.run("verify", extra_env=env)
    assert done.returncode == 0
