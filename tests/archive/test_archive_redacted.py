"""``asz push`` under the default redaction policy, against a real S3-protocol server.

A synthetic capture is landed by the real collector and pushed by the real ``asz push``; what
the bucket holds is the redacted counterpart of each landed file, which every reader of the
archive reads as a root: it verifies, and the cache report over it is the report over the
local root (equal values give equal markers).
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import orjson
import pytest
from support.archive_roots import Machine, bucket_prefix, pushed_files, without_project
from support.s3server import BUCKET, S3Server

from asz.store import REDACTED_DIR, STATE_DIR, open_store
from asz.store._framing import decode_file
from asz.synth import SynthOptions

KEY = "a team's redaction key, long enough"


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Machine, dict]:
    machine = Machine(tmp_path_factory.mktemp("laptop"))
    expected = machine.land(SynthOptions(sessions=2, index=True))
    return machine, expected


def _env(machine: Machine) -> dict[str, str]:
    return {**machine.env(), "ASZ_REDACT_KEY": KEY}


def _push(machine: Machine, config: Path, *args: str) -> tuple[int, bytes, bytes]:
    done = machine.asz_env(
        _env(machine), "push", "--root", str(machine.root), "--config", str(config), *args
    )
    return done.returncode, done.stdout, done.stderr


def _read(machine: Machine, config: Path, prefix: str, *args: str) -> bytes:
    done = machine.asz_env(
        _env(machine), *args, "--root", f"s3://{BUCKET}/{prefix}", "--config", str(config)
    )
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


def _local(machine: Machine, *args: str) -> bytes:
    done = machine.asz_env(_env(machine), *args, "--root", str(machine.root))
    assert done.returncode == 0, (args, done.stderr)
    return done.stdout


@pytest.mark.slow
def test_the_archive_holds_redacted_files_that_every_reader_reads(
    s3: S3Server, landed: tuple[Machine, dict], tmp_path: Path
) -> None:
    machine, expected = landed
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    code, out, err = _push(machine, config, "--json")
    assert code == 0, err
    counts = json.loads(out)
    assert counts["complete"] and counts["policy"] and sum(counts["redactions"].values()) > 0
    held = s3.objects(prefix + "/")
    landed_files = pushed_files(held)
    store = machine.store()
    names = [n for s in store.sessions() for n in store.open_session(s).landed()]
    assert len(landed_files) == len(names)
    differ = 0
    for name in names:
        data = landed_files[f"{prefix}/{name.path}"]
        redacted = decode_file(name.path, data)
        raw = store.open_session(name.path.split("/")[0]).read(name)
        assert redacted.header["seq"] == raw.header["seq"] and redacted.header["redacted"]
        differ += data != store.backend.read(name.path, 1 << 30)
        said = orjson.loads(held[f"{prefix}/_archive/redactions/{name.path}.json"])
        assert said["path"] == name.path and said["policy"] == counts["policy"]
        for hit in said["hits"]:
            assert set(hit) == {"at", "rule", "path"}
    assert differ  # the synthetic ids and home paths are replaced
    # Every reader: verify passes over the redacted files, the cache report is the same.
    verified = json.loads(_read(machine, config, prefix, "verify", "--json"))
    assert verified["problems"] == [] if "problems" in verified else verified["ok"], verified
    remote = json.loads(_read(machine, config, prefix, "cache", "--json"))
    local = json.loads(_local(machine, "cache", "--json"))
    assert without_project(remote) == without_project(local)  # causes, tokens, money
    for there, here in zip(remote, local, strict=True):  # only the user name differs
        assert there["project"] != here["project"] and "«redacted:user:" in there["project"]
    sessions = json.loads(_local(machine, "sessions", "--json"))
    for session in sessions:
        sid = session["id"]
        remote = json.loads(_read(machine, config, prefix, "cache", sid, "--json"))
        local = json.loads(_local(machine, "cache", sid, "--json"))
        assert without_project(remote) == without_project(local)
        view = _read(machine, config, prefix, "view", sid, "--json")
        assert "«redacted:" in view.decode()
    body = next(b for b in expected["bodies"] if b["session"] == sessions[0]["id"])
    got = _read(machine, config, prefix, "body", sessions[0]["id"], body["id"])
    assert "«redacted:" in got.decode()
    back = tmp_path / "back"
    _read(machine, config, prefix, "restore", sessions[1]["id"], "--to", str(back))
    restored = [p for p in back.rglob("*") if p.is_file()]
    assert restored and any("«redacted:" in p.read_text() for p in restored)
    # The local root stays exact, and what was made for the push is private.
    assert json.loads(_local(machine, "verify", "--json"))
    shadow = machine.root / STATE_DIR / REDACTED_DIR
    for path in [shadow, *shadow.rglob("*")]:
        mode = stat.S_IMODE(os.lstat(path).st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path


@pytest.mark.slow
def test_a_second_push_makes_nothing_again_and_a_lost_file_comes_back_the_same(
    s3: S3Server, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=1, turns=3))
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    code, out, err = _push(machine, config, "--json")
    assert code == 0, err
    shadow = next((machine.root / STATE_DIR / REDACTED_DIR).iterdir())
    made = {p: p.stat().st_ino for p in shadow.rglob("*.asz")}
    assert made
    code, out, err = _push(machine, config, "--json")
    assert code == 0 and json.loads(out)["files"] == 0 and json.loads(out)["redactions"] == {}
    assert {p: p.stat().st_ino for p in shadow.rglob("*.asz")} == made  # nothing made again
    # A counterpart lost is made again with the same bytes: the bucket holds them already.
    lost = sorted(made)[-1]
    data = lost.read_bytes()
    lost.unlink()
    open_store(machine.root)  # the local root is untouched by any of it
    code, out, err = _push(machine, config, "--json", "--relist")
    assert code == 0, err
    assert lost.read_bytes() == data


@pytest.mark.slow
def test_dry_run_counts_what_would_be_redacted_per_session_and_never_a_value(
    s3: S3Server, landed: tuple[Machine, dict], tmp_path: Path
) -> None:
    machine, _ = landed
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    code, out, err = _push(machine, config, "--dry-run", "--json")
    assert code == 0, err
    said = json.loads(out)
    sessions = json.loads(_local(machine, "cache", "--json"))
    sessions = [{"id": s["session"], "project": s["project"]} for s in sessions]
    assert set(said["redacted_by_session"]) == {s["id"] for s in sessions}
    for rules in said["redacted_by_session"].values():
        assert rules.get("user", 0) > 0, rules
    code, words, err = _push(machine, config, "--dry-run")
    assert code == 0, err
    for session in sessions:
        assert f"redacted in {session['id']}: " in words.decode()
        user = session["project"].split("/")[2]  # /Users/<name>/... or /home/<name>/...
        assert f"/{user}/" not in (out + words + err).decode()
    assert s3.objects(prefix + "/") == {}


@pytest.mark.slow
def test_a_file_that_cannot_be_redacted_goes_neither_raw_nor_at_all(
    s3: S3Server, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=2, turns=3))
    store = machine.store()
    damaged_session, whole_session = store.sessions()
    names = store.open_session(damaged_session).landed()
    damaged = names[len(names) // 2]
    path = machine.root / damaged.path
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.chmod(0o600)
    path.write_bytes(bytes(data))
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    code, out, err = _push(machine, config, "--json")
    assert code == 1
    counts = json.loads(out)
    assert [line.split(": ", 1)[0] for line in counts["redaction_failed"]] == [damaged.path]
    assert f"redaction failed: {damaged.path}" in err.decode()
    held = s3.objects(prefix + "/")
    pushed = {key.split("/", 1)[1] for key in pushed_files(held)}
    whole = {name.path for name in store.open_session(whole_session).landed()}
    before = {name.path for name in names if name.seq < damaged.seq}
    assert pushed == whole | before  # nothing of the damaged file, nor of its session after it
    for key, data in pushed_files(held).items():
        assert decode_file(key, data).header["redacted"] == counts["policy"]


@pytest.mark.slow
def test_a_policy_change_pushes_nothing_more_of_what_went_under_the_old_one(
    s3: S3Server, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=1, turns=3))
    prefix = bucket_prefix(tmp_path)
    raw = machine.configure(s3.endpoint, prefix)  # the policy off: the files went raw
    assert machine.push(raw).returncode == 0
    before = s3.objects(prefix + "/")
    redacted = machine.configure(s3.endpoint, prefix, redact=True)
    code, out, err = _push(machine, redacted, "--json")
    assert code == 1
    counts = json.loads(out)
    landed = [
        name.path
        for s in machine.store().sessions()
        for name in machine.store().open_session(s).landed()
    ]
    assert counts["other_policy"] == sorted(landed) and counts["files"] == 0
    assert "under another redaction policy (or raw)" in err.decode()
    for path in landed:
        assert path in err.decode()
    assert s3.objects(prefix + "/") == before  # nothing overwritten, nothing added


@pytest.mark.slow
@pytest.mark.parametrize(
    "point", ["body.written", "body.published", "transcript.written:3", "index.published"]
)
def test_a_push_killed_while_it_redacts_leaves_counterparts_that_verify_and_resumes(
    s3: S3Server, tmp_path: Path, point: str
) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=1, turns=3, index=True))
    prefix = bucket_prefix(tmp_path)
    config = machine.configure(s3.endpoint, prefix, redact=True)
    env = {**_env(machine), "ASZ_CRASH_AT": point}
    killed = machine.asz_env(
        env, "push", "--root", str(machine.root), "--config", str(config), "--json"
    )
    assert killed.returncode == 70, killed.stderr
    # Killed before any landed file went (the record's marker is made first).
    assert pushed_files(s3.objects(prefix + "/")) == {}
    shadow = next((machine.root / STATE_DIR / REDACTED_DIR).iterdir())
    assert open_store(shadow).verify().problems == []
    code, out, err = _push(machine, config, "--json")
    assert code == 0 and json.loads(out)["complete"], err
    assert not [p for p in shadow.rglob(".tmp-*")]
    for landed in shadow.rglob("*.asz"):
        assert Path(f"{landed}.redactions.json").is_file(), landed
    verified = machine.asz_env(
        _env(machine), "verify", "--root", f"s3://{BUCKET}/{prefix}", "--config", str(config)
    )
    assert verified.returncode == 0, verified.stdout + verified.stderr


def test_the_collector_never_sweeps_the_files_a_push_is_making(tmp_path: Path) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=1, turns=2))
    session = machine.store().sessions()[0]
    making = machine.root / STATE_DIR / REDACTED_DIR / ("f" * 24) / session / ".tmp-making"
    making.parent.mkdir(parents=True)
    making.write_bytes(b"a push's file, not yet published")
    dead = machine.root / session / ".tmp-dead"
    dead.write_bytes(b"a killed collector's")
    machine.land()  # another process takes the root: it removes what killed writers left
    assert not dead.exists() and making.exists()
