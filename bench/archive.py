"""Push throughput into an archive, and reading commands over the bucket against the local root.

Synthesises a capture of ``--sessions`` sessions, lands it with one collector pass, starts an
S3-protocol server on the loopback (moto in server mode, in this process), then measures, each
as a whole ``asz`` process the way a person runs it:

- ``asz push``: MB/s and objects/s of the first push (the pass's own time, as ``--json`` says
  it; the whole process is said beside it), and the time of a second one that finds nothing
  new (the local record answers; no request is made);
- ``asz sessions``, ``asz view SESSION --json`` and ``asz cache --json`` over the local root,
  over the bucket with an empty local cache (cold: every object read), and again (warm: the
  listings are made again, the landed files and derived summaries come from the cache).

moto is a single-threaded Python server and answers every request itself, so the push
figures are a floor set by the server, not by the client: a real service answers many
requests at once.

    .venv/bin/python bench/archive.py [--sessions 20] [--turns 12] [--workers 8] [--keep DIR]

It needs moto, which the test extras install (``pip install '.[test]'``).
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from asz.commands.collect import collect_once
from asz.config import Config
from asz.synth import SynthOptions, synthesize

BUCKET = "bench-archive"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "bench",
    "AWS_SECRET_ACCESS_KEY": "bench",
    "AWS_REGION": "us-east-1",
}


def land(workdir: Path, sessions: int, turns: int) -> tuple[Path, Path, int]:
    capture = workdir / "claude"
    synthesize(capture, SynthOptions(seed=11, sessions=sessions, turns=turns, subagents=2))
    config = Config(root=workdir / "root", claude_dirs=(capture,))
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    source = sum(path.stat().st_size for path in capture.rglob("*") if path.is_file())
    return capture, config.root, source


def start_server() -> tuple[object, str]:
    try:
        import boto3
        from moto.server import ThreadedMotoServer
    except ImportError:
        print("bench/archive.py needs moto: pip install '.[test]'", file=sys.stderr)
        raise SystemExit(1) from None
    import logging

    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    os.environ.update(CREDENTIALS)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    endpoint = f"http://127.0.0.1:{port}"
    boto3.client("s3", endpoint_url=endpoint).create_bucket(Bucket=BUCKET)
    return server, endpoint


def asz(workdir: Path, *args: str, cache: str = "cache") -> tuple[float, bytes]:
    """Wall time of one ``asz`` process, and what it printed."""
    exe = Path(sys.executable).with_name("asz")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "XDG_CACHE_HOME": str(workdir / cache),
        **CREDENTIALS,
    }
    started = time.perf_counter()
    done = subprocess.run(
        [str(exe), *args, "--config", str(workdir / "asz.toml")],
        env=env,
        capture_output=True,
        check=False,
    )
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"asz {' '.join(args)} failed: {done.stderr.decode()}")
    return seconds, done.stdout


def measure(workdir: Path, sessions: int, turns: int, workers: int) -> None:
    _capture, root, source = land(workdir, sessions, turns)
    server, endpoint = start_server()
    try:
        url = f"s3://{BUCKET}/team"
        (workdir / "asz.toml").write_text(
            f'[archive]\nurl = "{url}"\nendpoint = "{endpoint}"\nworkers = {workers}\n'
        )
        seconds, out = asz(workdir, "push", "--json", "--root", str(root))
        pushed = json.loads(out)
        again, _ = asz(workdir, "push", "--root", str(root))
        megabytes = pushed["bytes"] / 1e6
        print(
            f"{sessions} sessions: {source / 1e6:,.1f} MB written by Claude Code, landed in "
            f"{pushed['files']} files ({megabytes:,.2f} MB)"
        )
        work = pushed["seconds"]
        print(
            f"  asz push          {work:6.2f} s  {megabytes / work:6.2f} MB/s  "
            f"{pushed['files'] / work:6.1f} objects/s  ({workers} workers; the pass alone, "
            f"{seconds:.2f} s for the whole process)"
        )
        print(f"  asz push again    {again:6.2f} s  (nothing new: no request)")
        _, listed = asz(workdir, "sessions", "--json", "--root", str(root))
        session = json.loads(listed)[0]["id"]
        print(f"  {'command':<24} {'local':>8} {'bucket cold':>12} {'bucket warm':>12}")
        for args in (("sessions",), ("view", session, "--json"), ("cache", "--json")):
            local, local_out = asz(workdir, *args, "--root", str(root))
            cold_cache = f"cache-{args[0]}"
            cold, cold_out = asz(workdir, *args, "--root", url, cache=cold_cache)
            warm, _ = asz(workdir, *args, "--root", url, cache=cold_cache)
            same = "same output" if cold_out == local_out else "OUTPUT DIFFERS"
            name = " ".join(args[:1])
            print(f"  asz {name:<20} {local:7.2f}s {cold:11.2f}s {warm:11.2f}s  {same}")
    finally:
        server.stop()  # type: ignore[attr-defined]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        measure(workdir, args.sessions, args.turns, args.workers)


if __name__ == "__main__":
    main()
