"""The team archive under faults: pushes through a proxy that adds latency, throttles and goes
away, and reading commands over the bucket against the local root.

Synthesises a capture of ``--sessions`` sessions, lands it with one collector pass, starts an
S3-protocol server on the loopback (moto in server mode, in this process) behind the tests'
fault proxy (``tests/support/s3server.py``: every request counted), and runs each ``asz`` as a whole
process, the way a person runs it. Each push goes to a prefix of its own, from a record
started afresh, and pushes are repeated (as the service does after its next pass) until the
archive is complete:

- ``latency``: every answer held back ``--latency`` (20 ms);
- ``slowdown``: that, and ``--slowdown`` (30%) of the requests answered ``503 SlowDown``;
- ``gone``: latency, and the server gone (connections refused) for ``--gone`` (60 s) once
  half the objects are up; the push stops at the breaker, and is run again every 5 s until it
  completes (each later push resumes);

for each: the time to a complete archive, the pushes it took, and the requests sent per
landed file (all pushes), and by the last (resumed) push per file it pushed. Then
``asz sessions`` and ``asz cache --json`` over the local root and over the bucket (latency
only), with an empty local cache (cold) and again (warm); and ``asz serve``'s first index
page, from the start of its process, over the local root and over the bucket: with an empty
local cache (cold), on a second start, and on a third start with the kept session list
removed from the cache (what a second start cost before the list was kept), each with the
requests it sent before that page was answered (``--reads`` chooses among ``sessions``,
``cache`` and ``serve``).

moto is a single-threaded Python server and answers every request itself, so the figures
are a floor set by the server, not by the client.

    .venv/bin/python bench/archive.py [--sessions 70] [--turns 6] [--workers 8]
        [--latency 0.02] [--slowdown 0.3] [--gone 60] [--faults latency,slowdown,gone]
        [--reads sessions,cache,serve] [--keep DIR]

It needs moto, which the test extras install (``pip install '.[test]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from asz.commands.collect import collect_once
from asz.config import Config
from asz.synth import SynthOptions, synthesize

TESTS = Path(__file__).resolve().parents[1] / "tests"
RESUME_EVERY = 5.0
"""Seconds between pushes while the archive is not complete (the service's rescan)."""


def land(workdir: Path, sessions: int, turns: int) -> Path:
    capture = workdir / "claude"
    synthesize(capture, SynthOptions(seed=11, sessions=sessions, turns=turns, subagents=1))
    config = Config(root=workdir / "root", claude_dirs=(capture,))
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    return config.root


def asz(workdir: Path, config: Path, *args: str, cache: str = "cache") -> tuple[float, Any]:
    """Wall time of one ``asz`` process, and what it printed (JSON when it is)."""
    from support.s3server import CREDENTIALS

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "XDG_CACHE_HOME": str(workdir / cache),
        **CREDENTIALS,
    }
    exe = Path(sys.executable).with_name("asz")
    started = time.perf_counter()
    done = subprocess.run(
        [str(exe), *args, "--config", str(config)], env=env, capture_output=True, check=False
    )
    seconds = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"asz {' '.join(args)} failed: {done.stderr.decode()}")
    try:
        return seconds, json.loads(done.stdout)
    except ValueError:
        return seconds, done.stdout


def configure(workdir: Path, endpoint: str, prefix: str, workers: int) -> Path:
    from support.s3server import archive_config

    return archive_config(
        workdir / f"{prefix}.toml", endpoint, prefix, workers=workers, attempts=6, backoff=0.25
    )


def push_until_complete(
    workdir: Path, root: Path, config: Path, proxy: Any
) -> tuple[float, int, int, float]:
    """Seconds to a complete archive, the pushes it took, the requests of all of them, and
    the requests of the last one per file it pushed."""
    (root / "_state" / "archive-pushed.jsonl").unlink(missing_ok=True)
    started = time.perf_counter()
    pushes = 0
    while True:
        before = len(proxy.seen)
        _, counts = asz(workdir, config, "push", "--json", "--root", str(root))
        pushes += 1
        if counts["complete"]:
            took = time.perf_counter() - started
            went = max(1, counts["files"] + counts["already_there"])
            return took, pushes, len(proxy.seen), (len(proxy.seen) - before) / went
        print(f"    push {pushes}: {counts['stopped'] or counts['errors'][:1]}")
        time.sleep(RESUME_EVERY)


def measure_pushes(workdir: Path, root: Path, args: argparse.Namespace) -> None:
    from support.s3server import S3Server, proxied

    files = sum(1 for _ in root.rglob("*.asz"))
    server = S3Server()
    try:
        print(f"{args.sessions} sessions landed in {files} files; {args.workers} workers")
        print(
            f"  {'fault':<10} {'complete in':>12} {'pushes':>7} {'requests/file':>14} "
            f"{'last push, per file it pushed':>30}"
        )
        for name in args.faults.split(","):
            if name not in ("latency", "slowdown", "gone"):
                raise SystemExit(f"no such fault: {name}")
            took, pushes, sent, last = push_through(server, workdir, root, name, args)
            print(f"  {name:<10} {took:11.1f}s {pushes:7d} {sent / files:14.2f} {last:10.2f}")
        with proxied(server, lambda method, key, n: "slow") as proxy:
            proxy.delay = args.latency
            config = configure(workdir, proxy.endpoint, "bench-latency", args.workers)
            reads = args.reads.split(",")
            measure_reads(workdir, root, config, args.sessions, reads)
            if "serve" in reads:
                measure_serve(workdir, root, config, proxy, args.sessions)
    finally:
        server.stop()


def push_through(
    server: Any, workdir: Path, root: Path, name: str, args: argparse.Namespace
) -> tuple[float, int, int, float]:
    """Pushes through the proxy with ``name``'s fault until the archive is complete."""
    from support.s3server import proxied

    chance = args.slowdown if name == "slowdown" else 0.0
    draw = random.Random(1).random
    puts = [0]

    def fault(method: str, key: str, n: int) -> str:
        if method == "PUT":
            puts[0] += 1
        return "503" if draw() < chance else "slow"

    with proxied(server, fault) as proxy:
        proxy.delay = args.latency
        if name == "gone":
            half = sum(1 for _ in root.rglob("*.asz")) // 2

            def away() -> None:
                while puts[0] < half:
                    time.sleep(0.01)
                proxy.refuse()
                time.sleep(args.gone)
                proxy.listen()

            threading.Thread(target=away, daemon=True).start()
        config = configure(workdir, proxy.endpoint, f"bench-{name}", args.workers)
        return push_until_complete(workdir, root, config, proxy)


def measure_reads(workdir: Path, root: Path, config: Path, sessions: int, reads: list[str]) -> None:
    from support.s3server import BUCKET

    url = f"s3://{BUCKET}/bench-latency"
    print(f"  {'command':<24} {'local':>8} {'bucket cold':>12} {'bucket warm':>12}")
    commands = [("sessions",), ("cache", "--json")]
    for args in (command for command in commands if command[0] in reads):
        local, local_out = asz(workdir, config, *args, "--root", str(root))
        cache = f"cache-{args[0]}"
        shutil.rmtree(workdir / cache, ignore_errors=True)
        cold, cold_out = asz(workdir, config, *args, "--root", url, cache=cache)
        warm, _ = asz(workdir, config, *args, "--root", url, cache=cache)
        same = "same output" if cold_out == local_out else "OUTPUT DIFFERS"
        name = f"{args[0]} ({sessions})"
        print(f"  asz {name:<20} {local:7.2f}s {cold:11.2f}s {warm:11.2f}s  {same}")


def first_page(
    workdir: Path, config: Path, root: str, cache: str, proxy: Any
) -> tuple[float, float, int, int]:
    """Seconds from the start of an ``asz serve`` process to its first index page, of them
    those from the request to the page, and the requests (all, and ``LIST``s) it sent the
    bucket until then."""
    import http.client

    from support.s3server import CREDENTIALS

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "XDG_CACHE_HOME": str(workdir / cache),
        **CREDENTIALS,
    }
    exe = Path(sys.executable).with_name("asz")
    command = [str(exe), "serve", "--root", root, "--config", str(config)]
    before = len(proxy.seen)
    started = time.perf_counter()
    server = subprocess.Popen(
        [*command, "--listen", "127.0.0.1:0", "--log-format", "json"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        asked = time.perf_counter()
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
        connection.request("GET", "/")
        response = connection.getresponse()
        response.read()
        answered = time.perf_counter()
        assert response.status == 200, response.status
        seen = proxy.seen[before:]
    finally:
        server.terminate()
        server.wait(timeout=30)
    # A listing is a GET of the bucket itself (its query names the prefix); an object's
    # key names the prefix in its path.
    lists = sum(1 for s in seen if s.method == "GET" and "/" not in s.key)
    return answered - started, answered - asked, len(seen), lists


def measure_serve(workdir: Path, root: Path, config: Path, proxy: Any, sessions: int) -> None:
    from support.s3server import BUCKET

    url = f"s3://{BUCKET}/bench-latency"
    cache = "cache-serve"
    shutil.rmtree(workdir / cache, ignore_errors=True)
    print(
        f"  asz serve, first index page ({sessions} sessions): from the process start, "
        "and from the request"
    )
    local, page, _, _ = first_page(workdir, config, str(root), cache, proxy)
    print(f"    local root                         {local:7.2f}s {page:7.2f}s")
    for name in ("bucket, cold cache", "bucket, second start", "bucket, list not kept"):
        if name == "bucket, list not kept":
            for kept in (workdir / cache).rglob("session-list.json"):
                kept.unlink()
        took, page, sent, lists = first_page(workdir, config, url, cache, proxy)
        print(f"    {name:<34} {took:7.2f}s {page:7.2f}s  {sent:6d} requests, {lists:5d} LISTs")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=70)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.02, help="seconds per answer")
    parser.add_argument("--slowdown", type=float, default=0.3, help="share answered SlowDown")
    parser.add_argument("--gone", type=float, default=60.0, help="seconds the server is gone")
    parser.add_argument(
        "--faults", default="latency,slowdown,gone", help="which pushes to make, in order"
    )
    parser.add_argument(
        "--reads", default="sessions,cache,serve", help="which readers to time over the bucket"
    )
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    try:
        import moto  # noqa: F401

        sys.path.insert(0, str(TESTS))
    except ImportError:
        print("bench/archive.py needs moto: pip install '.[test]'", file=sys.stderr)
        raise SystemExit(1) from None
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        measure_pushes(workdir, land(workdir, args.sessions, args.turns), args)


if __name__ == "__main__":
    main()
