"""How long ``asz statusline`` takes per message on a long session, against Python's own start.

Writes one session transcript of ``--calls`` model calls the way Claude Code writes them (an
assistant line per content block, a user line per tool result, the cache growing call by call,
a break every 400 calls, a compaction in the middle), runs ``asz statusline`` once on it with
no state (the first run, which reads the whole session), then ``--runs`` times appends one
more call and runs it again, as Claude Code does after each message. Each run is timed from
start to exit, in a process of its own, with the transcript's JSON on stdin; a bare
``python -c pass`` of the same interpreter is timed right after each run, so both see the
same load on the machine. Prints the percentiles of each and the ratio of the status line's
to Python's (the goal is at most 3x at p99).

    .venv/bin/python bench/statusline.py [--calls 5000] [--runs 300] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SESSION = "5e55b0a5-0000-4000-8000-00000000b3c0"
MODEL = "claude-opus-4-6"
BREAK_EVERY = 400


def call_lines(n: int, cache_read: int, written: int, stamp: str) -> list[dict[str, object]]:
    """The lines of one call: its text and tool use, then the tool's result."""
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": written,
        "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": written},
        "output_tokens": 120,
    }
    message = {"id": f"msg_{n:08d}", "model": MODEL, "role": "assistant", "usage": usage}
    envelope = {"sessionId": SESSION, "timestamp": stamp, "requestId": f"req_{n:08d}"}
    text = {"type": "text", "text": "Looking at the file. " * 8}
    tool = {"type": "tool_use", "id": f"toolu_{n:08d}", "name": "Read", "input": {"path": "x"}}
    result = {"type": "tool_result", "tool_use_id": f"toolu_{n:08d}", "content": "line\n" * 400}
    return [
        {**envelope, "type": "assistant", "message": {**message, "content": [text]}},
        {**envelope, "type": "assistant", "message": {**message, "content": [tool]}},
        {
            **envelope,
            "type": "user",
            "message": {"role": "user", "content": [result]},
            "toolUseResult": {"stdout": "line\n" * 400},
        },
    ]


class Transcript:
    """A growing transcript: each call reads what the one before left, unless it breaks."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.n = 0
        self.read = 0
        self.written = 20_000

    def append(self, calls: int, compaction_at: int | None = None) -> None:
        with self.path.open("a") as file:
            for _ in range(calls):
                self.n += 1
                if self.n == compaction_at:
                    boundary = {"type": "system", "subtype": "compact_boundary", "timestamp": ""}
                    file.write(json.dumps(boundary) + "\n")
                    self.read, self.written = 0, 20_000
                elif self.n % BREAK_EVERY == 0:
                    self.read, self.written = 0, self.read + self.written
                else:
                    self.read, self.written = self.read + self.written, 600
                stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime())
                for line in call_lines(self.n, self.read, self.written, stamp):
                    file.write(json.dumps(line, separators=(",", ":")) + "\n")


def timed(command: list[str], stdin: bytes, env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    done = subprocess.run(command, input=stdin, env=env, capture_output=True, check=True)
    return time.perf_counter() - started, done.stdout


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--runs", type=int, default=300)
    parser.add_argument("--keep", type=Path, help="write the session here and keep it")
    args = parser.parse_args()
    asz = Path(sys.executable).with_name("asz")
    if not asz.exists():
        sys.exit("the asz console script is not next to this Python: pip install .")
    work = args.keep or Path(tempfile.mkdtemp(prefix="asz-bench-statusline-"))
    work.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(work / "home"),
        "XDG_CACHE_HOME": str(work / "cache"),
        "LANG": "C.UTF-8",
    }
    shutil.rmtree(work / "cache", ignore_errors=True)
    transcript = Transcript(work / "projects" / "-bench" / f"{SESSION}.jsonl")
    transcript.path.parent.mkdir(parents=True, exist_ok=True)
    transcript.path.unlink(missing_ok=True)
    transcript.append(args.calls, compaction_at=args.calls // 2)
    stdin = json.dumps(
        {"session_id": SESSION, "transcript_path": str(transcript.path), "model": {"id": MODEL}}
    ).encode()
    command = [str(asz), "statusline"]
    bare = [sys.executable, "-c", "pass"]
    size = transcript.path.stat().st_size
    first, line = timed(command, stdin, env)
    print(f"session: {args.calls:,} calls, {size / 1e6:.1f} MB of transcript")
    print(f"first run (no state, reads the whole session): {first * 1000:.0f} ms")
    print(f"  {line.decode().strip()}")
    ours: list[float] = []
    python: list[float] = []
    for _ in range(args.runs):
        transcript.append(1)
        seconds, line = timed(command, stdin, env)
        ours.append(seconds)
        python.append(timed(bare, b"", env)[0])
    print(f"then {args.runs} runs, each after one more call:")
    print(f"  {'':24} {'p50':>8} {'p90':>8} {'p99':>8} {'max':>8}")
    for name, values in (("asz statusline", ours), ("python -c pass", python)):
        cells = [f"{percentile(values, q) * 1000:7.1f}ms" for q in (0.5, 0.9, 0.99)]
        print(f"  {name:24} {' '.join(cells)} {max(values) * 1000:7.1f}ms")
    for q in (0.5, 0.99):
        ratio = percentile(ours, q) / percentile(python, q)
        print(f"  ratio at p{round(q * 100)}: {ratio:.2f}x python's start")
    print(f"  last line: {line.decode().strip()}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
