"""``systemd-analyze verify``, the check systemd itself makes of a unit."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

__all__ = ["systemd_verify"]


def systemd_verify(unit: Path, home: Path, tmp: Path) -> subprocess.CompletedProcess[str]:
    """``systemd-analyze --user verify`` with a private HOME and runtime directory."""
    if shutil.which("systemd-analyze") is None:
        pytest.skip("systemd-analyze is not on this machine")
    runtime = tmp / "runtime"
    runtime.mkdir(mode=0o700, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(runtime),
    }
    return subprocess.run(
        ["systemd-analyze", "--user", "verify", str(unit)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
