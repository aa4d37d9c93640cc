"""Collects a capture in memory and writes it out with the simulated mtimes.

Files are written only at the end: a transcript receives its lines over the whole session,
and its mtime must be the time of its last line, so building everything first and then
writing once with ``os.utime`` keeps the tree identical for a seed.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path

BODIES_DIR = "asz/provider-bodies"
PROJECTS_DIR = "projects"


@dataclass
class Body:
    """One body file and what the simulation knows about it (the ground truth)."""

    name: str
    role: str
    data: bytes
    mtime_ns: int
    session: str
    kind: str
    stream: str | None
    message_id: str | None
    request_id: str | None
    names_request: str | None = None
    prompt_id: str | None = None
    cache_cause: str | None = None

    @property
    def file(self) -> str:
        return f"{BODIES_DIR}/{self.name}.json"

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


class Capture:
    """The files of a capture, keyed by path relative to the output directory."""

    def __init__(self) -> None:
        self.bodies: list[Body] = []
        self.files: dict[str, bytearray] = {}
        self.mtimes: dict[str, int] = {}

    def add_body(self, body: Body) -> Body:
        self.bodies.append(body)
        self.put(body.file, body.data, body.mtime_ns)
        return body

    def append(self, path: str, data: bytes, mtime_ns: int) -> None:
        self.files.setdefault(path, bytearray()).extend(data)
        self.mtimes[path] = mtime_ns

    def put(self, path: str, data: bytes, mtime_ns: int) -> None:
        if path in self.files:
            raise ValueError(f"{path} written twice")
        self.files[path] = bytearray(data)
        self.mtimes[path] = mtime_ns

    def has_body(self, name: str) -> bool:
        return f"{BODIES_DIR}/{name}.json" in self.files

    def size(self, path: str) -> int:
        return len(self.files[path])

    @property
    def last_mtime(self) -> int:
        return max(self.mtimes.values(), default=0)

    def write(self, outdir: Path) -> None:
        for path in sorted(self.files, key=lambda name: (self.mtimes[name], name)):
            target = outdir / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(bytes(self.files[path]))
            os.utime(target, ns=(self.mtimes[path], self.mtimes[path]))
