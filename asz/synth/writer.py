"""Collects a capture and writes it out with the simulated mtimes.

A transcript receives its lines over the whole session, and its mtime must be the time of its
last line, so transcripts are built in memory and written at the end, each with ``os.utime``.
A body file is whole when it is made, and a long session's requests add up to tens of GB, so
each body is written as it is added and a request's bytes are not kept (its size and digest
are); a response's are, the simulation reads its usage again. The tree is the same for a
seed either way.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

__all__ = ["BODIES_DIR", "PROJECTS_DIR", "Body", "Capture"]

BODIES_DIR = "asz/provider-bodies"
PROJECTS_DIR = "projects"


@dataclass
class Body:
    """One body file and what the simulation knows about it (the ground truth)."""

    name: str
    role: str
    data: bytes | None
    """The exact bytes; None for a request once written (see the module)."""
    mtime_ns: int
    session: str
    kind: str
    stream: str | None
    message_id: str | None
    request_id: str | None
    names_request: str | None = None
    prompt_id: str | None = None
    cache_cause: str | None = None

    size: int = 0
    sha256: str = ""

    def __post_init__(self) -> None:
        assert self.data is not None
        self.size = len(self.data)
        self.sha256 = hashlib.sha256(self.data).hexdigest()

    @property
    def file(self) -> str:
        return f"{BODIES_DIR}/{self.name}.json"

    def parsed(self) -> Any:
        """The body as JSON (a response's: a request's bytes are not kept)."""
        if self.data is None:
            raise ValueError(f"{self.name}: a request's bytes are not kept once written")
        return orjson.loads(self.data)


class Capture:
    """The files of a capture under ``outdir``, keyed by path relative to it."""

    def __init__(self, outdir: Path) -> None:
        self.outdir = outdir
        self.bodies: list[Body] = []
        self.files: dict[str, bytearray] = {}
        self.mtimes: dict[str, int] = {}
        self._body_files: set[str] = set()

    def add_body(self, body: Body) -> Body:
        """Writes the body file now, with its mtime (see the module)."""
        if body.file in self._body_files or body.file in self.files:
            raise ValueError(f"{body.file} written twice")
        assert body.data is not None
        self._write(body.file, body.data, body.mtime_ns)
        self._body_files.add(body.file)
        if body.role == "request":
            body.data = None
        self.bodies.append(body)
        return body

    def append(self, path: str, data: bytes, mtime_ns: int) -> None:
        self.files.setdefault(path, bytearray()).extend(data)
        self.mtimes[path] = mtime_ns

    def put(self, path: str, data: bytes, mtime_ns: int) -> None:
        if path in self.files or path in self._body_files:
            raise ValueError(f"{path} written twice")
        self.files[path] = bytearray(data)
        self.mtimes[path] = mtime_ns

    def has_body(self, name: str) -> bool:
        return f"{BODIES_DIR}/{name}.json" in self._body_files

    def size(self, path: str) -> int:
        return len(self.files[path])

    @property
    def last_mtime(self) -> int:
        return max([*self.mtimes.values(), *(body.mtime_ns for body in self.bodies)], default=0)

    def write(self) -> None:
        """Writes the files built in memory (the bodies are written already)."""
        for path in sorted(self.files, key=lambda name: (self.mtimes[name], name)):
            self._write(path, bytes(self.files[path]), self.mtimes[path])

    def _write(self, path: str, data: bytes, mtime_ns: int) -> None:
        target = self.outdir / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        os.utime(target, ns=(mtime_ns, mtime_ns))
