"""A repacked session in the archive: its generation goes after its files, and a reader of the
bucket sees each body and line once, whether the objects from before the repack are there too
or not."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.archive_roots import is_extent
from support.harness import Capture, Workspace, asz_command
from support.repacking import landed_in_passes, repack, sessions, without_refs
from support.s3server import BUCKET, CREDENTIALS, S3Server, archive_config, proxied

from asz.store import open_store


def run(ws: Workspace, *args: str, root: str) -> subprocess.CompletedProcess[bytes]:
    env = ws.env({**CREDENTIALS, "XDG_CACHE_HOME": str(ws.base / "cache")})
    return subprocess.run(
        [*asz_command(), *args, "--root", root], env=env, capture_output=True, check=False
    )


def json_of(ws: Workspace, *args: str, root: str) -> Any:
    done = run(ws, *args, "--json", root=root)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def readers(ws: Workspace, config: Path, root: str) -> dict[str, Any]:
    """What the reading commands say of the root (the archive's or the local one)."""
    seen: dict[str, Any] = {"cache": json_of(ws, "cache", "--config", str(config), root=root)}
    for session in sessions(ws):
        seen[session] = {
            what: without_refs(json_of(ws, what, session, "--config", str(config), root=root))
            for what in ("view", "cache")
        }
    verified = json_of(ws, "verify", "--config", str(config), root=root)
    seen["verify"] = {k: verified[k] for k in ("bodies", "transcript_lines", "index_lines")}
    assert verified["problems"] == []
    return seen


def push(ws: Workspace, config: Path) -> dict[str, Any]:
    return json_of(ws, "push", "--config", str(config), root=str(ws.root))


@pytest.mark.slow
@pytest.mark.parametrize("pushed_before", [True, False])
def test_a_reader_of_the_bucket_sees_each_body_and_line_once_across_a_repack(
    s3: S3Server, tmp_path: Path, pushed_before: bool
) -> None:
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=6, sessions=2, turns=4))
    prefix = f"r{int(pushed_before)}-{abs(hash(tmp_path)) % 10**8}"
    bucket = f"s3://{BUCKET}/{prefix}"
    with proxied(s3) as proxy:
        config = archive_config(tmp_path / "asz.toml", proxy.endpoint, prefix)
        local = readers(ws, config, str(ws.root))
        if pushed_before:
            assert push(ws, config)["complete"]
        repack(ws, *sessions(ws))
        pushed = push(ws, config)
        assert pushed["complete"], pushed
        puts = [seen.key for seen in proxy.seen if seen.method == "PUT" and seen.status == 200]

    held = s3.objects(prefix + "/")
    store = open_store(ws.root)
    for session in sessions(ws):
        generation = store.session(session).generation()
        assert generation is not None
        manifest = f"{prefix}/{generation.path}"
        assert held[manifest] == (ws.root / generation.path).read_bytes()
        files = [f"{prefix}/{name.path}" for name in generation.files]
        assert all(puts.index(key) < puts.index(manifest) for key in files)
        old = [key for key in held if f"/{session}/provider_body/" in key]
        assert bool(old) == pushed_before  # retired objects stay until a prune
    direct = archive_config(tmp_path / "direct.toml", s3.endpoint, prefix)
    assert readers(ws, direct, bucket) == local
    assert push(ws, direct)["files"] == 0

    # What the generations replaced leaves only with --prune, once they are old enough.
    later = archive_config(tmp_path / "later.toml", s3.endpoint, prefix, prune_after=3600.0)
    waiting = json_of(ws, "push", "--prune", "--config", str(later), root=str(ws.root))
    assert waiting["pruned"]["objects"] == 0
    assert (waiting["pruned"]["waiting"] > 0) == pushed_before
    now = archive_config(tmp_path / "now.toml", s3.endpoint, prefix, prune_after=0.0)
    pruned = json_of(ws, "push", "--prune", "--config", str(now), root=str(ws.root))["pruned"]
    assert (pruned["objects"] > 0) == pushed_before and not pruned["errors"]
    left = set(s3.objects(prefix + "/"))
    assert {key for key in held if key not in left} == {
        key
        for key in held
        if "/g-" not in key and "/generation-" not in key and "/_" not in key
        if not is_extent(key)  # a session's highest extent is never pruned
    }
    assert readers(ws, direct, bucket) == local
