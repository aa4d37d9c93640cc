"""The example of ``docs/api.md``, written out and run as a script."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from support.paths import REPO

__all__ = ["EXAMPLE", "api_example", "run_example"]

EXAMPLE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def api_example(tmp_path: Path, *, archive: bool = False) -> Path:
    """The example of ``docs/api.md``, written out as a script; with ``archive``, opening its
    root with ``asz.archive.open_root`` as the page says, so that it reads a bucket too."""
    code = EXAMPLE.search((REPO / "docs" / "api.md").read_text()).group(1)
    if archive:
        code = code.replace("from asz.store import open_store", "from asz.archive import open_root")
        code = code.replace("store = open_store(sys.argv[1])", "store = open_root(sys.argv[1])")
        assert "open_store" not in code
    script = tmp_path / "read_root.py"
    script.write_text(code)
    return script


def run_example(tmp_path: Path, root: Path | str, *, archive: bool = False) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(api_example(tmp_path, archive=archive)), str(root)],
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)
