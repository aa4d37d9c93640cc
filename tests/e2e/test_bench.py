"""The benchmarks run with what the README installs (``pip install .``), or say what they need.

The test extras are taken away by putting modules that refuse to import in front of them on
``PYTHONPATH``; each script is then run the way the README runs it, ``python bench/X.py``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from support.paths import REPO

BENCH = REPO / "bench"
TEST_EXTRAS = ("pytest", "_pytest", "hypothesis", "mypy", "ruff")


def without_test_extras(tmp_path: Path) -> dict[str, str]:
    blocked = tmp_path / "blocked"
    for name in TEST_EXTRAS:
        package = blocked / name
        package.mkdir(parents=True)
        (package / "__init__.py").write_text(
            f"raise ImportError('{name} is a test extra', name='{name}')\n"
        )
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    env["PYTHONPATH"] = str(blocked)
    return env


def bench(
    tmp_path: Path, script: str, *args: str, timeout: float = 60
) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(BENCH / script), *args],
        env=without_test_extras(tmp_path),
        capture_output=True,
        timeout=timeout,
        check=False,
        cwd=tmp_path,
    )


@pytest.mark.parametrize("script", sorted(path.name for path in BENCH.glob("*.py")))
def test_each_benchmark_starts_without_the_test_extras_or_says_what_it_needs(
    tmp_path: Path, script: str
) -> None:
    done = bench(tmp_path, script, "--help")
    if done.returncode == 0:
        assert done.stdout.startswith(b"usage: "), done.stdout
    else:
        assert done.stderr.decode().strip().endswith("pip install '.[test]'"), done.stderr


@pytest.mark.slow
def test_the_service_benchmark_runs_without_the_test_extras(tmp_path: Path) -> None:
    args = ("--files", "20", "--samples", "2", "--idle-seconds", "1", "--skip-default-window")
    done = bench(tmp_path, "service.py", *args, timeout=300)
    assert done.returncode == 0, done.stderr
    assert b"window 0 over 20 landed bodies" in done.stdout
