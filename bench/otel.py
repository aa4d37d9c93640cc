"""How fast ``asz export otlp`` sends a root's calls as spans, and what exporting adds to a pass.

Synthesises ``--sessions`` sessions of about ``--calls`` model calls each (10 x 1,000 by
default: a 10,000-call root), lands them with one collector pass (which keeps each session's
cache report, as the service does), and sends them to a sink on the loopback that takes every
OTLP/HTTP request (200, as a collector does; it does not decode, so the figures are asz's
side). It prints:

- the whole export, ``asz export otlp`` as a person runs it (one process, start to exit): spans
  per second (the goal: the 10,000-call root in under 10 s);
- the same command again, with nothing new: every session's cursor says it was wholly sent;
- what the service's export adds to a pass, in process: the export of a session that did not
  change (a look at its cursor), and of a session of ``--calls`` calls that landed something
  (its view and its kept cache report read, its spans built, the new ones sent).

    .venv/bin/python bench/otel.py [--sessions 10] [--calls 1000] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import orjson

from asz.commands.collect import collect_once
from asz.config import Config
from asz.export.cursor import Cursors
from asz.export.otel import SpanSender, resolve_target
from asz.export.run import SpanExport
from asz.store import open_store
from asz.synth import SynthOptions, synthesize
from asz.view.prices import price_table


class Sink:
    """Takes every request on a free loopback port, counting requests and bytes."""

    def __init__(self) -> None:
        self.requests = 0
        self.bytes = 0
        sink = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                size = int(self.headers.get("Content-Length", 0))
                self.rfile.read(size)
                sink.requests += 1
                sink.bytes += size
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"


def land(workdir: Path, sessions: int, calls: int) -> tuple[Path, float]:
    capture = workdir / "claude"
    tool_calls = 3
    options = SynthOptions(
        seed=11,
        sessions=sessions,
        turns=max(1, calls // (tool_calls + 1)),
        tool_calls=tool_calls,
        subagents=2,
        compactions=1,
    )
    synthesize(capture, options)
    config = Config(root=workdir / "root", claude_dirs=(capture,))
    started = time.perf_counter()
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    return config.root, time.perf_counter() - started


def export_command(root: Path, endpoint: str) -> tuple[float, dict[str, Any]]:
    """``asz export otlp --json`` start to exit: its wall time and what it said."""
    asz = shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"
    started = time.perf_counter()
    done = subprocess.run(
        [asz, "export", "otlp", "--root", str(root), "--endpoint", endpoint, "--json"],
        check=True,
        capture_output=True,
    )
    return time.perf_counter() - started, json.loads(done.stdout)


def per_pass(root: Path, endpoint: str) -> tuple[float, float, int]:
    """Seconds the service's export adds to a pass: for a session that did not change, and
    for one that landed something (its cursor's mark dropped, so it is read again whole)."""
    store = open_store(root)
    session = max(store.sessions(), key=lambda s: store.session(s).summary().calls or 0)
    sender = SpanSender(resolve_target(endpoint, (), "", 10.0))
    cursors = Cursors(store, sender.target.traces_url)

    def export() -> float:
        """One export of the session, its cursor read afresh as the service's next pass
        would."""
        fresh = Cursors(store, sender.target.traces_url)
        run = SpanExport(store, price_table(), sender, fresh, batch=512, quiet_seconds=300.0)
        started = time.perf_counter()
        run.run([session])
        return time.perf_counter() - started

    unchanged = min(export() for _ in range(5))
    path = root / cursors.directory / f"{session}.json"
    cursor = orjson.loads(path.read_bytes())
    changed = []
    for _ in range(3):
        path.write_bytes(orjson.dumps({**cursor, "done_at": None}))
        changed.append(export())
    sender.close()
    return unchanged, min(changed), store.session(session).summary().calls or 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--calls", type=int, default=1000, help="calls per session")
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    sink = Sink()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        root, landed = land(workdir, args.sessions, args.calls)
        print(f"landed {args.sessions} sessions of about {args.calls:,} calls in {landed:.1f} s")
        seconds, said = export_command(root, sink.url)
        spans = said["spans_sent"]
        print(
            f"  asz export otlp   {seconds:6.2f} s  {spans:,} spans, {spans / seconds:,.0f} "
            f"spans/s, {sink.requests} requests, {sink.bytes / 1e6:.1f} MB of protobuf"
        )
        again, said = export_command(root, sink.url)
        print(
            f"  ... again         {again:6.2f} s  {said['spans_sent']} spans, "
            f"{said['sessions_unchanged']} sessions unchanged"
        )
        unchanged, changed, calls = per_pass(root, sink.url)
        print(f"  per pass, a session unchanged     {unchanged * 1000:8.1f} ms")
        print(f"  per pass, a {calls:,}-call session landed in  {changed * 1000:8.1f} ms")


if __name__ == "__main__":
    main()
