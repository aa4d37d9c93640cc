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

then prints the server's peak RSS. The issue's targets: under 1 s for the session page, under
0.5 s for the call page, under 300 MB.

    .venv/bin/python bench/serve.py [--calls 1000] [--request-kb 200] [--keep DIR]
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

TARGETS = {"session": 1.0, "call": 0.5, "last": 0.5, "rss_mb": 300.0}


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


def measure(workdir: Path, calls: int, tool_calls: int, request_kb: int) -> None:
    root, expected, _seconds = land(workdir, calls, tool_calls)
    session = expected["sessions"][0]
    joined = {call["request"]: call["message_id"] for call in session["calls"]}
    requests = [b for b in expected["bodies"] if b["role"] == "request" and b["id"] in joined]
    nearest = min(requests, key=lambda body: abs(body["size"] - request_kb * 1000))
    last = requests[-1]
    asz = shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"
    server = subprocess.Popen(
        [asz, "serve", "--root", str(root), "--listen", "127.0.0.1:0", "--log-format", "json"],
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None
        port = json.loads(server.stdout.readline())["port"]
        pages = {
            "session": f"/sessions/{session['id']}",
            "call": f"/sessions/{session['id']}/calls/{joined[nearest['id']]}",
            "last": f"/sessions/{session['id']}/calls/{joined[last['id']]}",
            "list": "/",
        }
        print(f"{len(session['calls'])} calls in session {session['id']}")
        for name, path in pages.items():
            cold = timed_get(port, path)
            warm = timed_get(port, path)
            assert cold[1] == warm[1] == 200, (path, cold, warm)
            said = f"  {name:8} first {cold[0]:6.3f} s, then {warm[0]:6.3f} s ({cold[2]:,} bytes)"
            if name in ("call", "last"):
                size = (nearest if name == "call" else last)["size"]
                said += f"; a request of {size / 1000:,.0f} KB"
            if name in TARGETS:
                said += f"; target under {TARGETS[name]} s"
            print(said)
        print(f"  peak RSS {peak_rss_mb(server.pid):.0f} MB; target under {TARGETS['rss_mb']:.0f}")
    finally:
        server.terminate()
        server.wait(timeout=30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--tool-calls", type=int, default=3)
    parser.add_argument("--request-kb", type=int, default=200)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        measure(workdir, args.calls, args.tool_calls, args.request_kb)


if __name__ == "__main__":
    main()
