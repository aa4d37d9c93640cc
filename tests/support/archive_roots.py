"""Roots for the archive tests: a synthetic capture landed by the real collector, and the
real ``asz`` run against an archive on the loopback S3 server (``s3server``)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path

from asz.store import Store, open_store, parse_extent
from asz.synth import SynthOptions, synthesize
from support.cli import asz_executable
from support.s3server import BUCKET, CREDENTIALS, archive_config

__all__ = [
    "Machine",
    "bucket_prefix",
    "is_extent",
    "is_pushed_file",
    "landed_keys",
    "pushed_files",
    "without_project",
]


@dataclass
class Machine:
    """One developer's machine: a Claude Code directory, a root, a HOME and a cache."""

    base: Path

    @property
    def claude(self) -> Path:
        return self.base / "claude"

    @property
    def root(self) -> Path:
        return self.base / "root"

    def env(self) -> dict[str, str]:
        (self.base / "home").mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.base / "home"),
            "LANG": "C.UTF-8",
            "CLAUDE_CONFIG_DIR": str(self.claude),
            "XDG_CACHE_HOME": str(self.base / "cache"),
            **CREDENTIALS,
        }

    def asz(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[bytes]:
        return self.asz_env(self.env(), *args, timeout=timeout)

    def asz_env(
        self, env: dict[str, str], *args: str, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        """``asz`` with ``env`` as its whole environment."""
        return subprocess.run(
            [*asz_executable(), *args], env=env, capture_output=True, timeout=timeout, check=False
        )

    def land(self, options: SynthOptions | None = None) -> dict:
        """Synthesises a capture (unless one is there) and lands it with one real pass."""
        expected = {}
        if not self.claude.exists():
            expected = synthesize(self.claude, options or SynthOptions())
        done = self.asz("collect", "--once", "--root", str(self.root))
        assert done.returncode == 0, done.stderr
        return expected

    def say(self, session: str, text: str) -> None:
        """Claude Code writes one more prompt into the session's main transcript, and it
        lands."""
        transcript = next(self.claude.glob(f"projects/*/{session}.jsonl"))
        line = {"type": "user", "sessionId": session, "message": {"role": "user", "content": text}}
        with transcript.open("ab") as handle:
            handle.write(json.dumps(line).encode() + b"\n")
        self.land()

    def store(self) -> Store:
        return open_store(self.root)

    def configure(self, endpoint: str, prefix: str, **extra: object) -> Path:
        return archive_config(self.base / "asz.toml", endpoint, prefix, **extra)

    def push(self, config: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
        return self.asz("push", "--root", str(self.root), "--config", str(config), *args)

    def read(self, config: Path, prefix: str, *args: str) -> subprocess.CompletedProcess[bytes]:
        """A reading command over the archive."""
        return self.asz(*args, "--root", f"s3://{BUCKET}/{prefix}", "--config", str(config))

    def read_local(self, *args: str) -> subprocess.CompletedProcess[bytes]:
        return self.asz(*args, "--root", str(self.root))


def bucket_prefix(tmp_path: Path) -> str:
    """The test's own prefix in the shared bucket (its ``tmp_path`` is its own), so that tests
    sharing the server share nothing."""
    return "t-" + hashlib.sha256(str(tmp_path).encode()).hexdigest()[:10]


def landed_keys(store: Store, prefix: str) -> dict[str, bytes]:
    """Every landed file of the root as the archive should hold it: key -> bytes."""
    found = {}
    for session_id in store.sessions():
        for name in store.session(session_id).landed():
            found[f"{prefix}/{name.path}"] = store.backend.read(name.path, 1 << 30)
    return found


def is_extent(key: str) -> bool:
    """Whether the object at ``key`` is a session's ``extent-<n>`` (``asz.store.parse_extent``),
    which a push creates before it sends the session's files up to ``n``."""
    return parse_extent(key.rsplit("/", 1)[-1]) is not None


def is_pushed_file(key: str) -> bool:
    """Whether the object at ``key`` stands for a landed file (the file, its redacted
    counterpart, or a generation's manifest): not one of the archive's own objects
    (``_archive/``: claims, markers, redaction records), nor an extent."""
    return "/_archive/" not in key and not is_extent(key)


def pushed_files(held: dict[str, bytes]) -> dict[str, bytes]:
    """The objects of ``held`` that stand for landed files (:func:`is_pushed_file`): what a
    test compares with ``landed_keys``, nothing lost and nothing more."""
    return {key: data for key, data in held.items() if is_pushed_file(key)}


def without_project(report: object) -> object:
    """A cache report less each session's project directory, whose home path names the user
    (redacted in an archive): what else it says is the same over a redacted bucket."""
    if isinstance(report, dict):
        return {k: without_project(v) for k, v in report.items() if k != "project"}
    if isinstance(report, list):
        return [without_project(v) for v in report]
    return report
