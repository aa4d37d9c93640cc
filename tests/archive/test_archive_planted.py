"""Planted secrets never reach the archive: ``asz synth --secrets`` puts one value of every
kind the redactor finds (and near misses it must leave) in bodies and transcripts; after the
real collector lands it and the real ``asz push`` sends it under the default policy, every
object in the bucket, read back through boto3, decompressed and rebuilt, and everything
``asz --root s3://...`` gives back, holds none of them, and the near misses are all there.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import zstandard
from support.archive_roots import Machine, bucket_prefix
from support.s3server import BUCKET, S3Server

from asz.store import Store, open_store
from asz.store._framing import ZSTD_MAGIC
from asz.synth import SynthOptions

KEY = "a team's redaction key, long enough"


def _forms(value: str) -> list[bytes]:
    """A value as it may stand in bytes: itself, and escaped inside a JSON string."""
    escaped = json.dumps(value)[1:-1]
    return sorted({value.encode(), escaped.encode(), escaped.replace("/", "\\/").encode()})


def _holds(data: bytes, value: str) -> bool:
    return any(form in data for form in _forms(value))


def _home_forms(store: Store) -> list[str]:
    """Each user name a landed transcript's project folder holds (``-Users-<name>-...``), in
    every form a home path takes."""
    names = set()
    for session_id in store.sessions():
        for path in store.open_session(session_id).transcript_paths():
            parts = path.split("/", 1)[0].split("-")
            if len(parts) > 2 and parts[1] in ("Users", "home"):
                names.add(parts[2])
    return [
        form
        for name in sorted(names)
        for form in (f"/Users/{name}/", f"/home/{name}/", f"-Users-{name}-", f"-home-{name}-")
    ]


@pytest.mark.slow
def test_no_planted_secret_is_anywhere_in_the_bucket_and_every_near_miss_is(
    s3: S3Server, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "m")
    expected = machine.land(SynthOptions(sessions=1, turns=3, secrets=True, index=True))
    planted = [p for s in expected["sessions"] for p in s.get("planted", [])]
    secrets = [p["needle"] for p in planted if p["rule"]]
    misses = [p["value"] for p in planted if not p["rule"]]
    assert secrets and misses
    local = open_store(machine.root)
    landed_text = b"".join(
        local.open_session(s).body(i)
        for s in local.sessions()
        for i in local.open_session(s).body_ids()
    )
    assert all(_holds(landed_text, value) for value in secrets)  # the root holds them exact
    # The user's name in a home path, in every form it takes (a path, a project folder).
    homes = _home_forms(local)
    assert homes and any(_holds(landed_text, value) for value in homes)

    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    env = {**machine.env(), "ASZ_REDACT_KEY": KEY}
    pushed = machine.asz_env(env, "push", "--root", str(machine.root), "--config", str(config))
    assert pushed.returncode == 0, pushed.stderr
    # Every object, through boto3: as stored, and decompressed.
    objects = s3.objects(prefix + "/")
    copy = tmp_path / "copy"
    seen = [key.encode() for key in objects]
    for key, data in objects.items():
        seen.append(data)
        if data.startswith(ZSTD_MAGIC):
            seen.append(zstandard.ZstdDecompressor().decompressobj().decompress(data))
        target = copy / key.split("/", 1)[1]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    # Rebuilt through asz from those bytes: every body, every transcript line, every index line.
    held = open_store(copy)
    assert held.verify().problems == []
    for session_id in held.sessions():
        session = held.open_session(session_id)
        seen += [session.body(record_id) for record_id in session.body_ids()]
        seen += [line.data for line in session.transcript_lines()]
        seen += [line.data for line in session.index_lines()]
    # And through asz over the bucket: body, view, restore.
    root = f"s3://{BUCKET}/{prefix}"

    def read(*args: str) -> bytes:
        done = machine.asz_env(env, *args, "--root", root, "--config", str(config))
        assert done.returncode == 0, (args, done.stderr)
        return done.stdout

    for session_id in held.sessions():
        for record_id in held.open_session(session_id).body_ids():
            seen.append(read("body", session_id, record_id))
        seen.append(read("view", session_id, "--json"))
        back = tmp_path / "back" / session_id
        read("restore", session_id, "--to", str(back))
        seen += [path.read_bytes() for path in back.rglob("*") if path.is_file()]
        seen += [str(path.relative_to(back)).encode() for path in back.rglob("*")]
    everything = b"\0".join(seen)
    left = [value for value in secrets if _holds(everything, value)]
    assert left == [], left
    homes_left = [value for value in homes if _holds(everything, value)]
    assert homes_left == [], homes_left
    gone = [value for value in misses if not _holds(everything, value)]
    assert gone == [], gone
    assert b"\xc2\xabredacted:" in everything  # the markers show where they were
