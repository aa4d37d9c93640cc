"""Shared test fixtures: the real ``asz`` executable, and the real Claude Code samples."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from support.s3server import S3Server

REPO = Path(__file__).resolve().parent.parent
FIXTURE_ROOT = REPO / "tests" / "fixtures" / "root-0.1.0" / "root"
"""A small root landed by asz 0.1.0; ``sources.json`` beside it holds its sources' digests."""
FIXTURE_SESSION = "99ed4f49-1004-4720-98cc-672b32933aaf"


def samples_dir() -> Path | None:
    """The real Claude Code samples, when this machine has them."""
    candidate = Path(
        os.environ.get("ASZ_SAMPLES") or REPO.parent / "shared" / "claude-code-samples"
    )
    return candidate if candidate.is_dir() else None


@pytest.fixture
def samples() -> Path:
    found = samples_dir()
    if found is None:
        pytest.skip("the Claude Code samples are not on this machine (set ASZ_SAMPLES)")
    return found


def asz_executable() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m asz``."""
    script = Path(sys.executable).with_name("asz")
    if script.exists():
        return [str(script)]
    found = shutil.which("asz")
    return [found] if found else [sys.executable, "-m", "asz"]


RunAsz = Callable[..., subprocess.CompletedProcess]


@pytest.fixture
def run_asz(tmp_path: Path) -> RunAsz:
    """Runs the real ``asz`` in a subprocess with a private HOME, returning the finished process."""
    return asz_runner(tmp_path / "home")


def asz_runner(home: Path) -> RunAsz:
    """What ``run_asz`` gives, with ``home`` as the private HOME: for a fixture wider than one
    test, which lands a capture once for all of them."""
    home.mkdir(exist_ok=True)

    def run(*args: str, env: dict[str, str] | None = None, timeout: float = 120, **kw):
        full_env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "LANG": "C.UTF-8",
        }
        full_env.update(env or {})
        return subprocess.run(
            [*asz_executable(), *args],
            env=full_env,
            capture_output=True,
            timeout=timeout,
            check=False,
            **kw,
        )

    return run


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    """An S3-protocol server (moto) on the loopback for the module's tests (``s3server``)."""
    from support.s3server import S3Server

    server = S3Server()
    yield server
    server.stop()
