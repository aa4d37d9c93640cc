"""A capture landed the way a live session lands it, many small files, and repacked with the
real ``asz repack``: what the store's and the archive's repack tests share."""

from __future__ import annotations

import random
from typing import Any

import orjson

from asz.store import open_store
from support.harness import Capture, Workspace, apply_write, plan_writes

__all__ = ["landed_in_passes", "repack", "sessions", "without_refs"]


def landed_in_passes(ws: Workspace, capture: Capture, passes: int = 10) -> None:
    """The capture written in ``passes`` steps, a collect pass after each: many small files."""
    writes = plan_writes(capture.dir, random.Random(5))
    step = max(1, len(writes) // passes)
    for start in range(0, len(writes), step):
        for write in writes[start : start + step]:
            apply_write(ws.claude, write)
        assert ws.collect_once()[0] == 0


def sessions(ws: Workspace) -> list[str]:
    return open_store(ws.root).sessions()


def without_refs(value: Any) -> Any:
    """A view document without its bodies' ``ref``: where a body landed (file, number, row),
    which is what a repack changes."""
    if isinstance(value, dict):
        return {k: without_refs(v) for k, v in value.items() if k != "ref"}
    if isinstance(value, list):
        return [without_refs(v) for v in value]
    return value


def repack(ws: Workspace, *args: str, env: dict[str, str] | None = None) -> Any:
    done = ws.run("repack", "--json", *args, extra_env=env)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)
