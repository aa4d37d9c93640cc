"""``asz verify`` and ``asz body`` on a real landed capture: exact bytes back, damage named."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.cli import asz_executable

from asz.synth import SynthOptions, synthesize


@pytest.fixture(scope="module")
def landed(tmp_path_factory) -> tuple[Path, Path, dict]:
    """A synth capture collected by the real ``asz collect --once``, shared read-only."""
    base = tmp_path_factory.mktemp("landed")
    claude, root = base / "claude", base / "root"
    expected = synthesize(claude, SynthOptions(sessions=2, turns=4))
    env = {**os.environ, "CLAUDE_CONFIG_DIR": str(claude), "HOME": str(base)}
    done = subprocess.run(
        [*asz_executable(), "collect", "--once", "--root", str(root), "--json"],
        env=env,
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return claude, root, expected


def _copy_root(root: Path, into: Path) -> Path:
    target = into / "root"
    shutil.copytree(root, target)
    return target


def _body_files(root: Path, session: str) -> list[Path]:
    return sorted((root / session / "provider_body").iterdir())


_REBUILD_ALL = """
import sys
from pathlib import Path
from asz.store import open_store

root, out = Path(sys.argv[1]), Path(sys.argv[2])
store = open_store(root)
for line in sys.stdin.read().splitlines():
    session, body = line.split(" ")
    (out / body).write_bytes(store.session(session).body(body))
"""


def test_every_claimed_body_rebuilds_exactly_in_a_fresh_process(
    run_asz, landed, tmp_path: Path
) -> None:
    """Every body, rebuilt by a process that shares nothing with the landing; and the first
    and last of each session through ``asz body``, as a person asks for one."""
    claude, root, expected = landed
    claimed = [body for body in expected["bodies"] if body["claim"] in ("request", "transcript")]
    assert claimed
    out = tmp_path / "rebuilt"
    out.mkdir()
    asked = "".join(f"{body['session']} {body['id']}\n" for body in claimed)
    done = subprocess.run(
        [sys.executable, "-c", _REBUILD_ALL, str(root), str(out)],
        input=asked.encode(),
        capture_output=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    for body in claimed:
        assert (out / body["id"]).read_bytes() == (claude / body["file"]).read_bytes(), body["id"]
    ends = {}
    for body in claimed:
        ends.setdefault(body["session"], []).append(body)
    for body in [b for bodies in ends.values() for b in (bodies[0], bodies[-1])]:
        result = run_asz("body", "--root", str(root), body["session"], body["id"])
        assert result.returncode == 0, result.stderr
        assert result.stdout == (claude / body["file"]).read_bytes(), body["id"]


def test_verify_passes_on_what_landed(run_asz, landed) -> None:
    _, root, expected = landed
    result = run_asz("verify", "--root", str(root), "--json")
    assert result.returncode == 0, result.stdout
    report = json.loads(result.stdout)
    claimed = [body for body in expected["bodies"] if body["claim"] in ("request", "transcript")]
    assert report["bodies"] == len(claimed)
    assert report["sessions"] == len(expected["sessions"])
    assert report["problems"] == []


def test_a_flipped_byte_fails_verify_naming_the_file(run_asz, landed, tmp_path: Path) -> None:
    _, root, expected = landed
    root = _copy_root(root, tmp_path)
    session = expected["sessions"][0]["id"]
    victim = _body_files(root, session)[0]
    data = bytearray(victim.read_bytes())
    data[len(data) // 2] ^= 0x01
    victim.write_bytes(bytes(data))
    result = run_asz("verify", "--root", str(root), session, "--json")
    assert result.returncode == 1
    problems = json.loads(result.stdout)["problems"]
    assert any(problem["file"] == str(victim) for problem in problems)


def test_a_truncated_file_fails_verify_naming_it(run_asz, landed, tmp_path: Path) -> None:
    _, root, expected = landed
    root = _copy_root(root, tmp_path)
    session = expected["sessions"][0]["id"]
    victim = _body_files(root, session)[-1]
    victim.write_bytes(victim.read_bytes()[:-7])
    result = run_asz("verify", "--root", str(root))
    assert result.returncode == 1
    assert f"asz: problem: {victim}: ".encode() in result.stderr  # problems go to stderr


def test_a_missing_file_fails_the_bodies_that_copy_from_it(run_asz, landed, tmp_path: Path) -> None:
    claude, root, expected = landed
    root = _copy_root(root, tmp_path / "a")
    session = expected["sessions"][0]["id"]
    # Land one more request of the session in a file of its own, so it copies from the
    # earlier file, then take that earlier file away.
    last_request = max(
        (b for b in expected["bodies"] if b["session"] == session and b["role"] == "request"),
        key=lambda b: b["mtime_ns"],
    )
    source = claude / last_request["file"]
    extra = tmp_path / "claude" / "asz" / "provider-bodies"
    extra.mkdir(parents=True)
    clone = json.loads(source.read_bytes())
    clone["messages"].append({"role": "user", "content": "one more turn " * 400})
    name = "0f0e0d0c-0b0a-4909-8807-060504030201.request.json"
    (extra / name).write_bytes(json.dumps(clone, separators=(",", ":")).encode())
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    assert run_asz("collect", "--once", "--root", str(root), env=env).returncode == 0
    files = _body_files(root, session)
    first, newest = files[0], files[-1]
    first.unlink()
    result = run_asz("verify", "--root", str(root), session, "--json")
    assert result.returncode == 1
    problems = json.loads(result.stdout)["problems"]
    assert any(problem["file"] == str(newest) and problem["row"] == 1 for problem in problems)
    body = run_asz("body", "--root", str(root), session, name.removesuffix(".json"))
    assert body.returncode == 1
