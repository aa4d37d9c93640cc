"""Where the tests find the repository, its fixtures and the real Claude Code samples."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "FIXTURES",
    "FIXTURE_ROOT",
    "FIXTURE_SESSION",
    "REPO",
    "SHARED_SAMPLES",
    "samples_dir",
]

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
FIXTURE_ROOT = FIXTURES / "root-0.1.0" / "root"
"""A small root landed by asz 0.1.0; ``sources.json`` beside it holds its sources' digests."""
FIXTURE_SESSION = "99ed4f49-1004-4720-98cc-672b32933aaf"
SHARED_SAMPLES = REPO.parent / "shared" / "claude-code-samples"
"""Where the real Claude Code samples sit beside the repository, when ``ASZ_SAMPLES`` is unset."""


def samples_dir() -> Path | None:
    """The real Claude Code samples, when this machine has them."""
    candidate = Path(os.environ.get("ASZ_SAMPLES") or SHARED_SAMPLES)
    return candidate if candidate.is_dir() else None
