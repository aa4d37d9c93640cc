"""How fast the service lands what Claude Code writes, and what it costs while idle.

    .venv/bin/python bench/service.py [--files 100000] [--samples 60] [--idle-seconds 180]
                                      [--workdir DIR] [--skip-default-window]

Runs the real ``asz collect`` and prints:

1. latency from a body's write to its landing, p50 and p99, with ``batch_window`` 0 and with
   the default window (10 s), bodies written one at a time at random gaps of 0.1-0.6 s on a
   small root; a body's landing is when the landed file holding it appears (the root is
   polled every 10 ms, so figures are up to 10 ms late);
2. a root of ``--files`` landed bodies (written fast, landed by one ``collect --once``, which
   is timed), then the service started over it: seconds to READY=1, CPU (utime + stime from
   /proc/<pid>/stat) as a share of one core and RSS over ``--idle-seconds`` of idleness (the
   default rescan is every 60 s, so the window holds rescans), then latency with window 0 over
   that root, and seconds to READY=1 again after a restart.

Targets: p99 < 2 s with window 0 and < window + 2 s by default; idle below 1% of a core and
under 150 MB RSS; READY within 10 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# The tests' helpers that need nothing but what ``pip install .`` installs.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.claude_dir import Claude, request_body
from support.harness import asz_command, child_env

from asz.store import BODY_KIND, LandedFileError, LandedName, open_store

SESSIONS = [f"{number:08x}-2222-4333-8444-555555555555" for number in range(100)]
POLL = 0.01


class Service:
    """``asz collect`` with its log in a file and its notifications on a socket of ours."""

    def __init__(self, work: Path, claude: Path, root: Path, *flags: str) -> None:
        self.notify_dir = Path(tempfile.mkdtemp(prefix="asz-bench-"))
        self.receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.receiver.bind(str(self.notify_dir / "notify"))
        self.log = (work / "service.log").open("ab")
        env = child_env(work / "home", claude, {"NOTIFY_SOCKET": str(self.notify_dir / "notify")})
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [*asz_command(), "collect", "--root", str(root), *flags],
            env=env,
            stdout=self.log,
            stderr=self.log,
        )

        self.ready = threading.Event()
        self.ready_after = 0.0
        threading.Thread(target=self._read_notifications, daemon=True).start()

    def _read_notifications(self) -> None:
        """Reads every datagram, as systemd does, and notes when READY=1 came."""
        with contextlib.suppress(OSError):
            while message := self.receiver.recv(4096):
                if b"READY=1" in message and not self.ready.is_set():
                    self.ready_after = time.monotonic() - self.started
                    self.ready.set()

    def seconds_to_ready(self, limit: float = 600.0) -> float:
        if not self.ready.wait(limit):
            raise TimeoutError("the service never said READY=1")
        return self.ready_after

    def cpu_seconds(self) -> float:
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_mb(self, key: str = "VmRSS") -> float:
        for line in Path(f"/proc/{self.process.pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(timeout=120)
        finally:
            if self.process.poll() is None:
                self.process.kill()
            self.receiver.close()
            self.log.close()
            shutil.rmtree(self.notify_dir)


class LandingWatch:
    """When each body's landed file appeared, by polling the session's landed files."""

    def __init__(self, root: Path, session: str) -> None:
        # open_session: the session may not have landed anything yet.
        self.session = open_store(root).open_session(session)
        self.seen: set[str] = {name.path for name in self._files()}
        self.landed_at: dict[str, float] = {}

    def _files(self) -> list[LandedName]:
        return self.session.landed(BODY_KIND)

    def poll(self) -> None:
        now = time.time()
        for name in self._files():
            if name.path in self.seen:
                continue
            try:
                landed = self.session.read(name)
            except LandedFileError:
                continue
            self.seen.add(name.path)
            for record in landed.records:
                self.landed_at.setdefault(str(record.meta.get("id")), now)


def latency(claude: Claude, root: Path, session: str, samples: int, prefix: str) -> list[float]:
    """Writes ``samples`` bodies at random gaps and returns each one's write-to-landing time."""
    watch = LandingWatch(root, session)
    written: dict[str, float] = {}
    rng = random.Random(7)
    next_write = time.monotonic()
    while len(written) < samples or len(watch.landed_at) < samples:
        if len(written) < samples and time.monotonic() >= next_write:
            name = f"{prefix}{len(written):05d}.request"
            claude.body(f"{name}.json", request_body(session, name))
            written[name] = time.time()
            next_write = time.monotonic() + rng.uniform(0.1, 0.6)
        watch.poll()
        time.sleep(POLL)
    return [watch.landed_at[name] - at for name, at in written.items()]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(share * (len(ordered) - 1)))]


def show_latency(label: str, values: list[float]) -> None:
    print(
        f"  {label}: p50 {statistics.median(values):.3f} s, p99 {percentile(values, 0.99):.3f} s,"
        f" max {max(values):.3f} s over {len(values)} bodies"
    )


def build_backlog(claude: Claude, files: int) -> None:
    for session in SESSIONS:
        claude.start_transcript(session, project=f"-home-u-p{session[:8]}")
    claude.bodies.mkdir(parents=True, exist_ok=True)
    for number in range(files):
        session = SESSIONS[number % len(SESSIONS)]
        (claude.bodies / f"b{number:07d}.request.json").write_bytes(
            request_body(session, f"backlog {number}")
        )


def bench_small(work: Path, samples: int, default_window: bool) -> None:
    print("latency on a small root (settle 1 s, the default):")
    windows = [("window 0", ("--batch-window", "0"))]
    if default_window:
        windows.append(("window 10 s (default)", ()))
    for label, flags in windows:
        case = work / label.split()[1]
        claude = Claude(case / "claude")
        claude.start_transcript(SESSIONS[0])
        claude.bodies.mkdir(parents=True)
        root = case / "root"
        service = Service(case, claude.path, root, "--listen", "127.0.0.1:0", *flags)
        try:
            service.seconds_to_ready()
            show_latency(label, latency(claude, root, SESSIONS[0], samples, "s"))
        finally:
            service.stop()


def bench_large(work: Path, files: int, samples: int, idle_seconds: float) -> None:
    case = work / "large"
    claude = Claude(case / "claude")
    root = case / "root"
    started = time.monotonic()
    build_backlog(claude, files)
    print(f"{files} bodies written in {time.monotonic() - started:.1f} s")
    started = time.monotonic()
    once = subprocess.run(
        [*asz_command(), "collect", "--once", "--root", str(root)],
        env=child_env(case / "home", claude.path),
        capture_output=True,
        check=False,
    )
    print(
        f"collect --once landed them in {time.monotonic() - started:.1f} s (exit {once.returncode})"
    )

    service = Service(case, claude.path, root, "--listen", "127.0.0.1:0")
    try:
        print(f"READY after {service.seconds_to_ready():.2f} s (first start over the root)")
        cpu_before, at = service.cpu_seconds(), time.monotonic()
        peak = 0.0
        while time.monotonic() - at < idle_seconds:
            time.sleep(1.0)
            peak = max(peak, service.rss_mb())
        share = (service.cpu_seconds() - cpu_before) / (time.monotonic() - at)
        print(
            f"idle over {idle_seconds:.0f} s: {100 * share:.2f}% of a core,"
            f" RSS {service.rss_mb():.1f} MB (peak while idle {peak:.1f} MB,"
            f" high-water {service.rss_mb('VmHWM'):.1f} MB)"
        )
    finally:
        service.stop()

    service = Service(case, claude.path, root, "--listen", "127.0.0.1:0", "--batch-window", "0")
    try:
        print(f"READY after {service.seconds_to_ready():.2f} s (restart over the root)")
        show_latency(
            f"window 0 over {files} landed bodies",
            latency(claude, root, SESSIONS[0], samples, "l"),
        )
    finally:
        service.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--samples", type=int, default=60)
    parser.add_argument("--idle-seconds", type=float, default=180.0)
    parser.add_argument("--workdir", type=Path, help="work here and keep it")
    parser.add_argument("--skip-default-window", action="store_true")
    args = parser.parse_args()
    work = args.workdir or Path(tempfile.mkdtemp(prefix="asz-bench-service-"))
    work.mkdir(parents=True, exist_ok=True)
    try:
        bench_small(work, args.samples, default_window=not args.skip_default_window)
        bench_large(work, args.files, args.samples, args.idle_seconds)
    finally:
        if args.workdir is None:
            shutil.rmtree(work)


if __name__ == "__main__":
    main()
