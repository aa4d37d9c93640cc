"""A large backlog lands in worker processes: the same landed bytes as in one process, and a
worker or collector killed mid-landing loses nothing and lands nothing twice."""

from __future__ import annotations

import errno
import json
import multiprocessing
import os
import random
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import orjson
import pytest
from support.cli import RunAsz, asz_executable
from support.harness import stale_temps

from asz.adapters import claude_code_local, landing_workers
from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.discovery import DiscoveredSession
from asz.adapters.landing_workers import SHARE_BYTES, WORKER_MIN_BYTES, worker_count
from asz.adapters.source_files import FileStat
from asz.adapters.transcript_landing import TranscriptSource
from asz.config import AdapterConfig, Adapters, Config, SessionFilter
from asz.crashpoints import ENV as CRASH_ENV
from asz.store import Store, open_store
from asz.store._layout import seq_file, transcripts_dir
from asz.store._root import Root, collector_lock
from asz.tally import Tally

PROJECT = "-work-project"
WORDS = [
    "the",
    "cache",
    "prefix",
    "broke",
    "because",
    "a",
    "tool",
    "schema",
    "changed",
    "between",
    "two",
    "calls",
]


def write_backlog(projects: Path, sessions: int, megabytes: float, seed: int = 7) -> list[str]:
    """Main transcripts and 2.1.x subagent files of ``sessions`` sessions, about
    ``megabytes`` in all, with assistant lines (message ids) and cwds as Claude Code writes."""
    rng = random.Random(seed)
    ids = [str(uuid.UUID(int=rng.getrandbits(128), version=4)) for _ in range(sessions)]
    per_file = int(megabytes * 1_000_000 / (sessions * 2))
    for number, session in enumerate(ids):
        files = {
            projects / PROJECT / f"{session}.jsonl": "main",
            projects / PROJECT / session / "subagents" / f"agent-a{number}.jsonl": f"a{number}",
        }
        for path, stream in files.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            lines = []
            size, target = 0, per_file * rng.uniform(0.5, 1.5)
            while size < target:
                text = " ".join(rng.choices(WORDS, k=rng.randint(5, 400)))
                line = orjson.dumps(
                    {
                        "type": "assistant",
                        "sessionId": session,
                        "cwd": f"/work/project/{stream}",
                        "requestId": f"req_{rng.getrandbits(64):x}",
                        "message": {
                            "id": f"msg_{rng.getrandbits(64):x}",
                            "role": "assistant",
                            "model": "claude-opus-4-5",
                            "content": [{"type": "text", "text": text}],
                        },
                    }
                )
                lines.append(line + b"\n")
                size += len(line) + 1
            path.write_bytes(b"".join(lines))
    return ids


def make_config(base: Path) -> Config:
    return Config(
        root=base / "root",
        claude_dirs=(base / "claude",),
        sessions=SessionFilter(exclude=()),
        adapters=Adapters(claude_code_local=AdapterConfig(max_delta_bytes=256 * 1024)),
    )


def open_root(config: Config) -> Store:
    return open_store(config.root, compression=config.compression)


def run(config: Config) -> Tally:
    with collector_lock(Root(config.root)):
        return collect_transcripts(config, open_root(config))


def landed_lines(config: Config, session: str) -> dict[str, bytes]:
    """source -> the bytes landed of it, each line once."""
    found: dict[str, bytes] = {}
    for line in open_root(config).session(session).transcript_lines():
        found[line.source] = found.get(line.source, b"") + line.data
    return found


def source_bytes(config: Config, session: str) -> dict[str, bytes]:
    projects = config.projects_dir
    return {
        str(path.relative_to(projects)): path.read_bytes()
        for path in projects.rglob("*.jsonl")
        if session in str(path.relative_to(projects))
    }


def force_workers(monkeypatch: pytest.MonkeyPatch, workers: int = 2) -> None:
    """Takes the worker path whatever the backlog and the cores (the landing stays real)."""
    monkeypatch.setattr(claude_code_local, "worker_count", lambda backlog, sessions: workers)


@pytest.mark.slow
def test_a_backlog_lands_the_same_in_workers_as_in_one_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    alone, shared = make_config(tmp_path / "alone"), make_config(tmp_path / "shared")
    ids = write_backlog(alone.projects_dir, sessions=9, megabytes=6)
    write_backlog(shared.projects_dir, sessions=9, megabytes=6)
    in_process = run(alone)
    monkeypatch.setattr(landing_workers, "SHARE_BYTES", 256 * 1024)  # several shares each
    force_workers(monkeypatch)
    in_workers = run(shared)

    for result in (in_process, in_workers):
        assert not result.errors and not result.conflict_sources and not result.pending
        assert result.sessions == set(ids)
    counts = ("transcript_files", "transcript_lines_landed", "source_bytes")
    assert [getattr(in_workers, name) for name in counts] == [
        getattr(in_process, name) for name in counts
    ]
    for session in ids:
        assert landed_lines(shared, session) == source_bytes(shared, session)
        assert landed_lines(shared, session) == landed_lines(alone, session)
        by_worker, by_one = (
            open_root(shared).session(session).facts(),
            open_root(alone).session(session).facts(),
        )
        assert by_worker.calls == by_one.calls and len(by_worker.calls) > 10
        assert (
            by_worker.cwds
            == by_one.cwds
            == {"/work/project/main", f"/work/project/a{ids.index(session)}"}
        )
    assert not open_root(shared).verify().problems
    assert run(shared).transcript_files == 0


def test_a_worker_that_dies_loses_nothing_and_lands_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = make_config(tmp_path)
    ids = write_backlog(config.projects_dir, sessions=8, megabytes=4)
    monkeypatch.setattr(landing_workers, "SHARE_BYTES", 256 * 1024)
    force_workers(monkeypatch)
    # Spawned workers take the environment along: each dies as it publishes its third file.
    monkeypatch.setenv(CRASH_ENV, "transcript.published:3")
    broken = run(config)
    assert any("the worker landing it stopped" in error for error in broken.errors)
    assert not stale_temps(config.root)

    monkeypatch.delenv(CRASH_ENV)
    healed = run(config)
    assert not healed.errors and not healed.conflict_sources
    for session in ids:
        assert landed_lines(config, session) == source_bytes(config, session)
    assert not open_root(config).verify().problems
    facts = [open_root(config).session(session).facts() for session in ids]
    lines = sum(data.count(b"\n") for s in ids for data in source_bytes(config, s).values())
    assert sum(len(fact.calls) for fact in facts) == lines  # every line one call, each once


def session_of(size: int, name: str = "s") -> DiscoveredSession:
    session = DiscoveredSession(str(uuid.uuid4()))
    session.add(
        TranscriptSource(
            Path(name),
            f"{PROJECT}/{name}.jsonl",
            session.session,
            "main",
            seen=FileStat(1, 2, size, 3),
        )
    )
    return session


def test_shares_put_the_largest_sessions_first_and_hold_about_a_share_each() -> None:
    sizes = [SHARE_BYTES * 3, 10, SHARE_BYTES // 2, SHARE_BYTES // 2, SHARE_BYTES // 3, 5]
    sessions = [session_of(size, str(n)) for n, size in enumerate(sizes)]
    shares = landing_workers._shares(sessions)
    sums = [sum(s.sources[0].seen.size for s in share) for share in shares]  # type: ignore[union-attr]
    assert sums[0] == SHARE_BYTES * 3
    assert all(total <= SHARE_BYTES for total in sums[1:])
    assert sorted(s.session for share in shares for s in share) == sorted(
        s.session for s in sessions
    )
    assert sums == sorted(sums, reverse=True)


def test_only_a_large_backlog_over_several_sessions_starts_workers() -> None:
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    assert worker_count(WORKER_MIN_BYTES - 1, 100) == 0
    assert worker_count(WORKER_MIN_BYTES, 1) == 0
    expected = min(cores or 1, landing_workers.MAX_WORKERS)
    assert worker_count(WORKER_MIN_BYTES, 100) == (expected if expected > 1 else 0)


def test_the_backlog_counts_only_sessions_with_nothing_landed(tmp_path: Path) -> None:
    store = open_store(tmp_path / "root")
    landed, new, emptied = session_of(1000), session_of(2000), session_of(4000)
    # The session's seq file, written once its first landed file was published.
    store.backend.replace_derived(seq_file(landed.session), b"3\n")
    # A killed collector can leave a session's directories with nothing published in them.
    (tmp_path / "root" / transcripts_dir(emptied.session) / "s-0123456789abcdef").mkdir(
        parents=True
    )
    assert landing_workers.backlog_bytes(store, [landed, new, emptied]) == 6000


def collect_env(base: Path) -> dict[str, str]:
    return {"CLAUDE_CONFIG_DIR": str(base / "claude"), "ASZ_ROOT": str(base / "root")}


@pytest.mark.slow
def test_asz_collect_lands_a_large_backlog_in_workers(tmp_path: Path, run_asz: RunAsz) -> None:
    if worker_count(WORKER_MIN_BYTES, 100) == 0:
        pytest.skip("one core: a backlog lands in the collector's own process")
    config = make_config(tmp_path)
    ids = write_backlog(config.projects_dir, sessions=24, megabytes=WORKER_MIN_BYTES / 1e6 * 1.1)
    done = run_asz("collect", "--once", "--json", env=collect_env(tmp_path))
    assert done.returncode == 0, done.stderr
    assert b"landing a backlog in worker processes" in done.stderr
    summary = json.loads(done.stdout.splitlines()[-1])
    total = sum(path.stat().st_size for path in config.projects_dir.rglob("*.jsonl"))
    assert summary["source_bytes"] == total and not summary["errors"]
    assert run_asz("verify", env=collect_env(tmp_path)).returncode == 0
    for session in ids[:3]:
        target = tmp_path / "restored" / session
        assert (
            run_asz("restore", session, "--to", str(target), env=collect_env(tmp_path)).returncode
            == 0
        )
        for relpath, data in source_bytes(config, session).items():
            assert (target / relpath).read_bytes() == data


def alive(pid: int) -> bool:
    """Whether ``pid`` still runs (a zombie waiting to be reaped has stopped)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return False
    return state != "Z"


def children(pid: int) -> set[int]:
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        text = (task / "children").read_text()
        found |= {int(child) for child in text.split()}
    return found


@pytest.mark.slow
@pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="workers die with their collector on Linux"
)
def test_killing_the_collector_mid_landing_takes_its_workers_and_loses_nothing(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    if worker_count(WORKER_MIN_BYTES, 100) == 0:
        pytest.skip("one core: a backlog lands in the collector's own process")
    config = make_config(tmp_path)
    ids = write_backlog(config.projects_dir, sessions=24, megabytes=WORKER_MIN_BYTES / 1e6 * 1.5)
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), **collect_env(tmp_path)}

    collector = subprocess.Popen(
        [*asz_executable(), "collect", "--once"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        workers: set[int] = set()
        while time.monotonic() < deadline and collector.poll() is None:
            workers = children(collector.pid)
            if workers and any(config.root.glob("*/transcripts/*/transcript-*.asz")):
                break
            time.sleep(0.01)
        assert workers, "the collector never started its workers"
        collector.send_signal(signal.SIGKILL)
        collector.wait()
    finally:
        if collector.poll() is None:
            collector.kill()
    at_kill = set(config.root.rglob("transcript-*.asz"))
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.05)
    left = [pid for pid in workers if alive(pid)]
    assert not left, f"workers {left} outlived their collector"
    assert set(config.root.rglob("transcript-*.asz")) == at_kill, "a worker landed on alone"

    again = run_asz("collect", "--once", env=collect_env(tmp_path))
    assert again.returncode == 0, again.stderr
    assert run_asz("verify", env=collect_env(tmp_path)).returncode == 0
    for session in ids:
        assert landed_lines(config, session) == source_bytes(config, session)
    assert not stale_temps(config.root)


class _NoProcesses:
    """A spawn context that cannot start a process, as under a process limit."""

    def __init__(self, real: multiprocessing.context.BaseContext) -> None:
        self._real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)

    def Process(self, *args: object, **kwargs: object) -> object:
        raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN))


def _no_semaphores(*args: object, **kwargs: object) -> object:
    raise OSError(errno.ENOSYS, "no process-shared semaphores (/dev/shm)")


@pytest.mark.parametrize("trouble", ["no processes", "no semaphores"])
def test_a_backlog_lands_in_the_collector_when_workers_cannot_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trouble: str
) -> None:
    config = make_config(tmp_path)
    ids = write_backlog(config.projects_dir, sessions=4, megabytes=1)
    force_workers(monkeypatch)
    if trouble == "no processes":
        crippled = _NoProcesses(multiprocessing.get_context("spawn"))
        monkeypatch.setattr(multiprocessing, "get_context", lambda method=None: crippled)
    else:
        monkeypatch.setattr(landing_workers, "ProcessPoolExecutor", _no_semaphores)
    result = run(config)
    assert not result.errors and result.sessions == set(ids)
    for session in ids:
        assert landed_lines(config, session) == source_bytes(config, session)
