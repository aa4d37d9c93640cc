"""Shared test fixtures: the real ``asz`` executable, and the real Claude Code samples. What
the fixtures are made of lives in the ``support`` package, which every test package imports."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from support.cli import RunAsz, asz_runner
from support.paths import samples_dir

if TYPE_CHECKING:
    from support.s3server import S3Server


@pytest.fixture
def samples() -> Path:
    found = samples_dir()
    if found is None:
        pytest.skip("the Claude Code samples are not on this machine (set ASZ_SAMPLES)")
    return found


@pytest.fixture
def run_asz(tmp_path: Path) -> RunAsz:
    """Runs the real ``asz`` in a subprocess with a private HOME, returning the finished process."""
    return asz_runner(tmp_path / "home")


@pytest.fixture(scope="module")
def s3() -> Iterator[S3Server]:
    """An S3-protocol server (moto) on the loopback for the module's tests (``s3server``)."""
    from support.s3server import S3Server

    server = S3Server()
    yield server
    server.stop()
