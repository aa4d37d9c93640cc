"""Roots landed by the real collector: from a Claude Code directory, the real samples, or a
synthetic capture."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from asz.store import Store, open_store
from asz.synth import SynthOptions, synthesize

__all__ = ["land_claude", "land_sample", "land_synth"]


def land_claude(tmp_path: Path, run_asz: Any, claude: Path) -> Store:
    """The Claude Code directory ``claude`` landed by one real ``asz collect --once`` pass
    into a new root, ``tmp_path / "root"``."""
    root = tmp_path / "root"
    done = run_asz("collect", "--once", "--root", str(root), env={"CLAUDE_CONFIG_DIR": str(claude)})
    assert done.returncode == 0, done.stderr
    return open_store(root)


def land_sample(tmp_path: Path, run_asz: Any, layout: Path) -> Store:
    """One layout of the real sample transcripts, as the projects of the Claude Code directory
    ``tmp_path / "claude"``, landed by one real pass."""
    claude = tmp_path / "claude"
    shutil.copytree(layout, claude / "projects")
    return land_claude(tmp_path, run_asz, claude)


def land_synth(tmp_path: Path, run_asz: Any, options: SynthOptions) -> tuple[Store, dict]:
    """A synthetic capture landed by one real ``asz collect --once`` pass; its expected.json."""
    claude = tmp_path / "claude"
    expected = synthesize(claude, options)
    return land_claude(tmp_path, run_asz, claude), expected
