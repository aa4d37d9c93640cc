"""A stop stops: Ctrl-C on ``asz push``, and the service stopping in the middle of a push.

The push ends within a second or two, not after the uploads already queued: no new request
starts, those in flight finish or are abandoned, every upload that finished is in the push
record, and the next push sends nothing twice (an abandoned one is looked for first).
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import orjson
import pytest
from support.archive_roots import Machine, bucket_prefix, is_pushed_file, landed_keys, pushed_files
from support.cli import asz_executable
from support.harness import Capture, Workspace, running, wait_for
from support.s3server import BUCKET, CREDENTIALS, FaultProxy, S3Server, archive_config, proxied

from asz.adapters.session_filter import landed_admits
from asz.archive import open_bucket
from asz.archive.push import Pusher
from asz.archive.record import PushRecord
from asz.config_file import load_config
from asz.locations import ArchiveUrl
from asz.store import open_store
from asz.synth import SynthOptions

STOPPED_WITHIN = 3.0
"""Seconds from the signal to the process's end: the push's grace (1 s) and a margin; before,
Ctrl-C took as long as the queued uploads (25 s on a 9,943-file root)."""


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> Machine:
    landed = Machine(tmp_path_factory.mktemp("laptop"))
    landed.land(SynthOptions(seed=9, sessions=6, index=True))
    return landed


def _record(root: Path, prefix: str, proxy: FaultProxy) -> tuple[set[str], set[str]]:
    """The paths the push record holds as done, and as tried (sent, not known to be done):
    landed files, and extents once one is known to be there."""
    record = PushRecord.for_root(root, f"s3://{BUCKET}/{prefix}", proxy.endpoint)
    assert not record.rebuilt
    return set(record.done), set(record.tried)


def _files_put(proxy: FaultProxy) -> int:
    return sum(map(is_pushed_file, proxy.puts(200)))


def _slow(proxy: FaultProxy) -> None:
    proxy.fault = lambda method, key, n: "slow" if method == "PUT" else ""
    proxy.delay = 0.4


def _the_next_push_completes(
    push: subprocess.CompletedProcess[bytes], proxy: FaultProxy, s3: S3Server, want: dict
) -> None:
    assert push.returncode == 0, push.stderr
    assert json.loads(push.stdout)["waiting_files"] == 0
    prefix = next(iter(want)).split("/", 1)[0]
    held = s3.objects(prefix + "/")
    assert pushed_files(held) == want
    assert proxy.puts(412) == {}
    assert set(proxy.puts(200).values()) == {1}  # nothing sent twice


def _started_push(machine: Machine, config: Path, output: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [*asz_executable(), "push", "--root", str(machine.root), "--config", str(config)],
        env=machine.env(),
        stdout=output,
        stderr=output,
    )


@pytest.mark.slow
def test_ctrl_c_on_asz_push_ends_it_at_once_and_records_what_went(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    want = landed_keys(machine.store(), prefix)
    with proxied(s3) as proxy:
        _slow(proxy)
        config = machine.configure(proxy.endpoint, prefix, workers=2)
        push = _started_push(machine, config, subprocess.PIPE)
        with running(push):
            wait_for(lambda: _files_put(proxy) >= 3, what="a push under way")
            push.send_signal(signal.SIGINT)
            signalled = time.monotonic()
            _out, err = push.communicate(timeout=30)
            took = time.monotonic() - signalled
        assert push.returncode == 130, err
        assert took < STOPPED_WITHIN, took
        said = err.decode()
        assert "Traceback" not in said and "stopped by Ctrl-C" in said, said
        assert "the next push resumes" in said
        done, tried = _record(machine.root, prefix, proxy)
        # Every upload the server took is recorded: done, or tried (in flight at the stop).
        taken = {key.split("/", 1)[1] for key in proxy.puts(200) if is_pushed_file(key)}
        assert taken <= done | tried, taken - (done | tried)
        assert done and len(tried) <= 2  # at most one per worker was in flight
        assert len(done) < len(want)
        proxy.delay = 0.0
        _the_next_push_completes(machine.push(config, "--json"), proxy, s3, want)


@pytest.mark.slow
def test_the_service_stopping_mid_push_ends_within_seconds(s3: S3Server, tmp_path: Path) -> None:
    prefix = bucket_prefix(tmp_path)
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=6)
    env = {**CREDENTIALS, "XDG_CACHE_HOME": str(tmp_path / "cache")}
    config = tmp_path / "home" / ".config" / "asz" / "asz.toml"
    config.parent.mkdir(parents=True)
    log = tmp_path / "service.log"
    with proxied(s3) as proxy:
        _slow(proxy)
        archive_config(config, proxy.endpoint, prefix, workers=2)
        with running(ws.start_service(log, env)) as service:
            wait_for(lambda: _files_put(proxy) >= 3, what="a push under way")
            service.send_signal(signal.SIGTERM)
            signalled = time.monotonic()
            service.wait(timeout=30)
            took = time.monotonic() - signalled
        assert service.returncode == 0
        assert took < STOPPED_WITHIN, took
        lines = [orjson.loads(line) for line in log.read_bytes().splitlines() if line[:1] == b"{"]
        events = [line.get("event") for line in lines]
        assert "push_stopped" in events and events[-1] == "stopped", events
        want = landed_keys(open_store(ws.root), prefix)
        done, tried = _record(ws.root, prefix, proxy)
        taken = {key.split("/", 1)[1] for key in proxy.puts(200) if is_pushed_file(key)}
        assert taken <= done | tried and len(done) < len(want)
        proxy.delay = 0.0
        _the_next_push_completes(ws.run("push", "--json", extra_env=env), proxy, s3, want)


@pytest.mark.slow
def test_a_killed_push_resumes_looking_only_for_what_was_in_flight(
    s3: S3Server, machine: Machine, tmp_path: Path
) -> None:
    """A path is recorded as tried once it is sent: after a kill, the next push asks the
    bucket (HEAD) only about the uploads in flight at the kill, not about all that was left."""
    prefix = bucket_prefix(tmp_path)
    want = landed_keys(machine.store(), prefix)
    with proxied(s3) as proxy:
        _slow(proxy)
        config = machine.configure(proxy.endpoint, prefix, workers=2)
        push = _started_push(machine, config, subprocess.DEVNULL)
        with running(push):
            wait_for(lambda: _files_put(proxy) >= 3, what="a push under way")
            push.kill()
            push.wait(timeout=30)
        done, tried = _record(machine.root, prefix, proxy)
        assert len(want) - len(done) > 4 and 0 < len(tried) <= 2
        proxy.delay = 0.0
        proxy.seen.clear()
        again = machine.push(config, "--json")
        heads = [s.key for s in proxy.seen if s.method == "HEAD" and "/_archive/" not in s.key]
        assert sorted(heads) == sorted(f"{prefix}/{path}" for path in tried)
        _the_next_push_completes(again, proxy, s3, want)


def test_a_stop_asked_before_the_push_sends_anything_holds(
    s3: S3Server, machine: Machine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C while the push reads its record, before it sends: the push must not clear it."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    prefix = bucket_prefix(tmp_path)
    config = load_config(
        machine.configure(s3.endpoint, prefix),
        root=machine.root,
        env={"HOME": str(tmp_path)},
    )
    store = open_store(machine.root)
    pusher = Pusher(
        machine.root,
        store,
        landed_admits(config, store),
        ArchiveUrl.parse(config.archive.url),
        open_bucket(config.archive.url, config.archive),
        workers=2,
    )
    pusher.stop("stopped by Ctrl-C")
    tally = pusher.run()
    assert tally.interrupted and tally.files == 0
    assert s3.objects(prefix) == {}
