"""The real ``asz`` executable, run as a process with a private HOME."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["RunAsz", "asz_executable", "asz_runner"]


def asz_executable() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m asz``."""
    script = Path(sys.executable).with_name("asz")
    if script.exists():
        return [str(script)]
    found = shutil.which("asz")
    return [found] if found else [sys.executable, "-m", "asz"]


RunAsz = Callable[..., subprocess.CompletedProcess]


def asz_runner(home: Path) -> RunAsz:
    """What the ``run_asz`` fixture gives, with ``home`` as the private HOME: for a fixture
    wider than one test, which lands a capture once for all of them."""
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
