"""How fast ``asz serve`` answers a long session's pages, and the memory it needs.

Synthesises one session of about ``--calls`` model calls (one prompt's call plus its tool
calls per turn), lands it with one collector pass (which keeps the session's cache report),
starts ``asz serve`` on a free loopback port, and times, over real HTTP:

- the session page (the timeline's first page, the chart of every call), the first time
  (the view document built, the kept report read) and once warm;
- the call page of the request nearest ``--request-kb`` KB (the request taken apart, the
  previous request compared with it), the first time and once warm;
- the call page of the session's last joined request, whose body is rebuilt through every
  record landed before it, the first time and once warm;
- the session list;

then prints the server's peak RSS. Then it lands ``--sessions`` short sessions (one prompt and
its call each) into a root of their own and times, on a server over it, the session list and
the prompt search across them all: a word a few prompts hold, and one most prompts hold (each
the first time and once warm). The targets: under 1 s for the session page and the search,
under 0.5 s for the call page, under 300 MB.

    .venv/bin/python bench/serve.py [--calls 1000] [--request-kb 200] [--sessions 1000]
                                    [--keep DIR]
"""

from __future__ import annotations

import argparse
import http.client
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from view import land  # this directory's bench/view.py: one long session, landed

from asz.commands.collect import collect_once
from asz.config import Config
from asz.synth import SynthOptions, synthesize

TARGETS = {"session": 1.0, "call": 0.5, "last": 0.5, "search": 1.0, "rss_mb": 300.0}


def timed_get(port: int, path: str) -> tuple[float, int, int]:
    """Seconds to the last byte, the status, and the bytes of the answer."""
    started = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    connection.request("GET", path)
    response = connection.getresponse()
    body = response.read()
    connection.close()
    return time.perf_counter() - started, response.status, len(body)


def peak_rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024


def started(root: Path) -> tuple[subprocess.Popen[bytes], int]:
    """``asz serve`` over ``root`` on a free loopback port, and the port."""
    asz = shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"
    server = subprocess.Popen(
        [asz, "serve", "--root", str(root), "--listen", "127.0.0.1:0", "--log-format", "json"],
        stdout=subprocess.PIPE,
    )
    assert server.stdout is not None
    return server, json.loads(server.stdout.readline())["port"]


def timed_twice(port: int, name: str, path: str, note: str = "") -> None:
    """Prints how long ``path`` takes the first time and once warm, with its target."""
    cold = timed_get(port, path)
    warm = timed_get(port, path)
    assert cold[1] == warm[1] == 200, (path, cold, warm)
    said = f"  {name:8} first {cold[0]:6.3f} s, then {warm[0]:6.3f} s ({cold[2]:,} bytes)"
    target = TARGETS.get(name.rstrip("*"))
    print(said + note + (f"; target under {target} s" if target is not None else ""))


def measure_search(workdir: Path, sessions: int) -> None:
    """The list and the prompt search over ``sessions`` short sessions."""
    capture = workdir / "many"
    options = SynthOptions(
        seed=11, sessions=sessions, turns=1, tool_calls=0, subagents=0, compactions=0
    )
    synthesize(capture, options)
    config = Config(root=workdir / "many-root", claude_dirs=(capture,))
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    server, port = started(config.root)
    try:
        print(f"{sessions:,} sessions of one prompt each")
        timed_twice(port, "list", "/")
        timed_twice(port, "search", "/?q=refund")
        timed_twice(port, "search*", "/?q=the")
        print("  (search: a word some prompts hold; search*: one most prompts hold)")
    finally:
        server.terminate()
        server.wait(timeout=30)


def measure(workdir: Path, calls: int, tool_calls: int, request_kb: int) -> None:
    root, expected, _seconds = land(workdir, calls, tool_calls)
    session = expected["sessions"][0]
    joined = {call["request"]: call["message_id"] for call in session["calls"]}
    requests = [b for b in expected["bodies"] if b["role"] == "request" and b["id"] in joined]
    nearest = min(requests, key=lambda body: abs(body["size"] - request_kb * 1000))
    last = requests[-1]
    server, port = started(root)
    try:
        pages = {
            "session": f"/sessions/{session['id']}",
            "call": f"/sessions/{session['id']}/calls/{joined[nearest['id']]}",
            "last": f"/sessions/{session['id']}/calls/{joined[last['id']]}",
            "list": "/",
        }
        print(f"{len(session['calls'])} calls in session {session['id']}")
        for name, path in pages.items():
            note = ""
            if name in ("call", "last"):
                size = (nearest if name == "call" else last)["size"]
                note = f"; a request of {size / 1000:,.0f} KB"
            timed_twice(port, name, path, note)
        print(f"  peak RSS {peak_rss_mb(server.pid):.0f} MB; target under {TARGETS['rss_mb']:.0f}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--tool-calls", type=int, default=3)
    parser.add_argument("--request-kb", type=int, default=200)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        measure(workdir, args.calls, args.tool_calls, args.request_kb)
        measure_search(workdir, args.sessions)


if __name__ == "__main__":
    main()
