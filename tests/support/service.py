"""``asz collect`` as a service: the real process on temporary directories, watched from
outside through its log lines, its HTTP endpoints and its metrics."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import orjson

from support.cli import asz_executable
from support.harness import http_get, metrics

__all__ = [
    "FAST",
    "WAIT",
    "A",
    "B",
    "RunningService",
    "child_env",
    "run_asz",
    "running_service",
    "wait_until",
]

A = "11111111-2222-4333-8444-555555555555"
B = "66666666-7777-4888-8999-aaaaaaaaaaaa"
WAIT = 30.0
"""Upper bound of every wait, so a broken service fails a test instead of hanging it."""
FAST = ("--batch-window", "0", "--settle-seconds", "0.2", "--listen", "127.0.0.1:0")


def child_env(tmp: Path, claude: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    home = tmp / "home"
    home.mkdir(exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CONFIG_DIR": str(claude),
    }
    env.update(extra or {})
    return env


class RunningService:
    """One ``asz collect`` process; its log lines are read as they come."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        self.port = int(self.wait_for_log("listening")["port"])

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            line = orjson.loads(raw)
            with self._lock:
                self.lines.append(line)

    def logged(self, event: str) -> list[dict[str, Any]]:
        with self._lock:
            return [line for line in self.lines if line["event"] == event]

    def wait_for_log(self, event: str, count: int = 1) -> dict[str, Any]:
        wait_until(lambda: len(self.logged(event)) >= count or self.process.poll() is not None)
        found = self.logged(event)
        assert len(found) >= count, f"no {event!r} log line; the service exited"
        return found[count - 1]

    def get(self, path: str) -> tuple[int, bytes]:
        return http_get(self.port, path)

    def metrics(self) -> dict[str, float]:
        return metrics(self.port)

    def metric(self, name: str) -> float:
        return self.metrics()[name]

    def wait_for_metric(self, name: str, predicate: Callable[[float], bool]) -> float:
        wait_until(lambda: predicate(self.metric(name)), f"{name} never satisfied the test")
        return self.metric(name)

    def wait_ready(self) -> None:
        wait_until(lambda: self.get("/readyz")[0] == 200, "the service never became ready")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        self.process.send_signal(sig)
        return self.process.wait(timeout=WAIT)


def wait_until(predicate: Callable[[], bool], what: str = "condition") -> None:
    deadline = time.monotonic() + WAIT
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting: {what}")
        time.sleep(0.05)


@contextlib.contextmanager
def running_service(
    tmp: Path, claude: Path, root: Path, *flags: str, env: dict[str, str] | None = None
) -> Iterator[RunningService]:
    process = subprocess.Popen(
        [*asz_executable(), "collect", "--root", str(root), *flags],
        env=child_env(tmp, claude, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield RunningService(process)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=WAIT)
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        process.stderr.close()


def run_asz(tmp: Path, claude: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [*asz_executable(), *args],
        env=child_env(tmp, claude),
        capture_output=True,
        timeout=120,
        check=False,
    )
