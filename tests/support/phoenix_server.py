"""Arize Phoenix run for real on the loopback, as the OpenTelemetry backend of the export tests.

Phoenix is large (a few hundred packages), so it lives in a virtual environment of its own:
``ASZ_PHOENIX`` names its ``phoenix`` executable (``.ci/run`` makes ``.venv-phoenix`` and sets
it), else the checkout's ``.venv-phoenix`` or a ``phoenix`` on PATH is used; with none the
tests skip, except in CI, where that is a failure. Each server gets free ports, a working
directory of its own (SQLite) and no telemetry, and is stopped when the tests are done.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest

from support.paths import REPO

__all__ = ["START_SECONDS", "Phoenix", "phoenix", "phoenix_executable"]

START_SECONDS = 180.0


def phoenix_executable() -> str | None:
    named = os.environ.get("ASZ_PHOENIX")
    if named:
        return named
    local = REPO / ".venv-phoenix" / "bin" / "phoenix"
    if local.exists():
        return str(local)
    return shutil.which("phoenix")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class Phoenix:
    def __init__(self, executable: str, directory: Path) -> None:
        self.port = _free_port()
        directory.mkdir(parents=True, exist_ok=True)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(directory),
            "LANG": "C.UTF-8",
            "PHOENIX_WORKING_DIR": str(directory),
            "PHOENIX_HOST": "127.0.0.1",
            "PHOENIX_PORT": str(self.port),
            "PHOENIX_GRPC_PORT": str(_free_port()),
            "PHOENIX_TELEMETRY_ENABLED": "false",
            "DO_NOT_TRACK": "1",
        }
        self.log = directory / "phoenix.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [executable, "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
            )
        self._wait_until_up()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def _wait_until_up(self) -> None:
        deadline = time.monotonic() + START_SECONDS
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"phoenix stopped: {self.log.read_text()[-2000:]}")
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(f"{self.url}/healthz", timeout=2) as answer,
            ):
                if answer.status == 200:
                    return
            time.sleep(0.25)
        raise RuntimeError(f"phoenix did not come up: {self.log.read_text()[-2000:]}")

    def spans(self, project: str = "default") -> list[dict[str, Any]]:
        """Every span of the project, read back over Phoenix's REST API page by page."""
        found: list[dict[str, Any]] = []
        cursor: str | None = None
        while True:
            query = {"limit": "1000", **({"cursor": cursor} if cursor else {})}
            url = f"{self.url}/v1/projects/{project}/spans?{urllib.parse.urlencode(query)}"
            try:
                with urllib.request.urlopen(url, timeout=30) as answer:
                    page = orjson.loads(answer.read())
            except urllib.error.HTTPError as err:
                if err.code == 404:  # no span yet, so no project
                    return []
                raise
            found += page["data"]
            cursor = page.get("next_cursor")
            if not cursor:
                return found

    def wait_for_spans(
        self, count: int, project: str = "default", seconds: float = 30.0
    ) -> list[dict[str, Any]]:
        """The project's spans, once Phoenix shows at least ``count`` (it writes them in the
        background after answering)."""
        deadline = time.monotonic() + seconds
        while True:
            spans = self.spans(project)
            if len(spans) >= count or time.monotonic() > deadline:
                return spans
            time.sleep(0.2)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@pytest.fixture(scope="module")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    executable = phoenix_executable()
    if executable is None:
        if os.environ.get("CI"):
            pytest.fail("CI runs the Phoenix tests: set ASZ_PHOENIX (.ci/run does)")
        pytest.skip(
            "Arize Phoenix is not installed: python3 -m venv .venv-phoenix && "
            ".venv-phoenix/bin/pip install arize-phoenix (or set ASZ_PHOENIX)"
        )
    server = Phoenix(executable, tmp_path_factory.mktemp("phoenix"))
    yield server
    server.stop()
