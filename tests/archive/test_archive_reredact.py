"""A redaction policy changed after a push, and repacked sessions pushed redacted, against a real
S3-protocol server through the real ``asz push``.

The archive is create-only: what a new policy makes of the files that went under the old one
goes beside them, as a generation whose manifest (naming the redacted files' digests) is
created last; every reader of the bucket then counts it and shows the new markers, and the
old objects are reported for ``--prune``, never overwritten.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import random
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.archive_roots import Machine, bucket_prefix, is_pushed_file, without_project
from support.harness import Capture, Workspace, apply_write, asz_command, plan_writes
from support.repacking import landed_in_passes, repack, sessions, without_refs
from support.s3server import BUCKET, CREDENTIALS, S3Server, archive_config, proxied

from asz.archive.bucket import FOLLOWS
from asz.store import open_store
from asz.synth import SynthOptions

KEY = "a team's redaction key, long enough"
WITHHELD = "«withheld:tools:"


def _with_policy(config: Path, *lines: str) -> Path:
    """``config`` with a ``[redact]`` table of ``lines`` (the default policy otherwise)."""
    config.write_text(config.read_text() + "[redact]\n" + "\n".join(lines) + "\n")
    return config


def _asz(machine: Machine, *args: str) -> subprocess.CompletedProcess[bytes]:
    return machine.asz_env({**machine.env(), "ASZ_REDACT_KEY": KEY}, *args)


def _push(machine: Machine, config: Path, *args: str) -> tuple[int, Any, str]:
    done = _asz(
        machine, "push", "--root", str(machine.root), "--config", str(config), "--json", *args
    )
    return done.returncode, json.loads(done.stdout), done.stderr.decode()


def _over(machine: Machine, config: Path, prefix: str, *args: str) -> bytes:
    done = _asz(machine, *args, "--root", f"s3://{BUCKET}/{prefix}", "--config", str(config))
    assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done.stdout


@pytest.mark.slow
def test_a_policy_change_holds_the_session_until_reredact_adds_it_beside_the_old(
    s3: S3Server, tmp_path: Path
) -> None:
    machine = Machine(tmp_path / "m")
    expected = machine.land(SynthOptions(sessions=2, turns=3, index=True))
    requests = {b["session"]: b["id"] for b in expected["bodies"] if b["id"].endswith(".request")}
    prefix = bucket_prefix(tmp_path)
    store = machine.store()
    landed = sorted(n.path for s in store.sessions() for n in store.open_session(s).landed())
    # One endpoint throughout (the push record belongs to one), seen through a proxy.
    with proxied(s3) as proxy:
        first = archive_config(tmp_path / "first.toml", proxy.endpoint, prefix, redact=True)
        code, pushed, err = _push(machine, first)
        assert code == 0 and pushed["complete"], err
        before = s3.etags(prefix + "/")
        old_bytes = s3.objects(prefix + "/")

        # The policy now withholds the tool schemas: every request body would differ.
        config = _with_policy(
            archive_config(
                tmp_path / "second.toml", proxy.endpoint, prefix, redact=True, prune_after=0.0
            ),
            'withhold = ["tools"]',
        )
        code, held, err = _push(machine, config)
        assert code == 1 and held["files"] == 0 and held["reredacted"] == []
        assert held["other_policy"] == landed
        bodies = {p for p in landed if "/provider_body/" in p}
        assert bodies and bodies <= set(held["would_differ"])
        assert "would now differ" in err and "asz push --reredact" in err
        for path in held["would_differ"]:
            assert f"{path} (would differ)" in err
        assert s3.etags(prefix + "/") == before  # nothing sent, nothing overwritten

        # --reredact: each session goes again as a generation beside the old objects.
        seen = len(proxy.seen)
        code, again, err = _push(machine, config, "--reredact")
        assert code == 0 and again["complete"], (again, err)
        puts = [s.key for s in proxy.seen[seen:] if s.method == "PUT" and s.status == 200]
        assert sorted(again["reredacted"]) == sorted(store.sessions())
        assert not set(puts) & set(before)  # no old key was written to
        after = s3.etags(prefix + "/")
        assert {key: after[key] for key in before} == before  # every old object as it was
        held_now = s3.objects(prefix + "/")
        assert all(held_now[key] == data for key, data in old_bytes.items())
        assert sorted(again["replaced"]) == sorted(f"{prefix}/{p}" for p in landed)
        for session in store.sessions():
            manifest = next(
                key for key in held_now if key.startswith(f"{prefix}/{session}/generation-")
            )
            files = orjson.loads(held_now[manifest])["files"]
            for item in files:  # the manifest names the redacted objects' digests, and came last
                data = held_now[f"{prefix}/{item['path']}"]
                assert hashlib.sha256(data).hexdigest() == item["sha256"]
                assert puts.index(f"{prefix}/{item['path']}") < puts.index(manifest)

        # Every reader of the bucket counts the new generation: the new markers, verify passes,
        # the cache report is the local one.
        direct = _with_policy(
            archive_config(tmp_path / "reader.toml", s3.endpoint, prefix, redact=True),
            'withhold = ["tools"]',
        )
        verified = json.loads(_over(machine, direct, prefix, "verify", "--json"))
        assert verified["problems"] == [], verified
        remote = json.loads(_over(machine, direct, prefix, "cache", "--json"))
        local = json.loads(_asz(machine, "cache", "--json", "--root", str(machine.root)).stdout)
        assert without_project(remote) == without_project(local)
        for session in store.sessions():
            body = _over(machine, direct, prefix, "body", session, requests[session]).decode()
            assert WITHHELD in body and "«redacted:" in body
        code, quiet, err = _push(machine, config)
        assert code == 0 and quiet["files"] == 0 and quiet["other_policy"] == [], err

        # What the generations replaced leaves with --prune, and the readers still read it whole.
        code, pruned, err = _push(machine, config, "--prune")
        assert code == 0 and pruned["pruned"]["objects"] == len(landed), (pruned["pruned"], err)
        left = set(s3.objects(prefix + "/"))
        assert not {f"{prefix}/{p}" for p in landed} & left
        assert json.loads(_over(machine, direct, prefix, "verify", "--json"))["problems"] == []
        session = store.sessions()[0]
        body = _over(machine, direct, prefix, "body", session, requests[session]).decode()
        assert WITHHELD in body


def _run(ws: Workspace, *args: str, root: str) -> subprocess.CompletedProcess[bytes]:
    env = ws.env({**CREDENTIALS, "XDG_CACHE_HOME": str(ws.base / "cache"), "ASZ_REDACT_KEY": KEY})
    return subprocess.run(
        [*asz_command(), *args, "--root", root], env=env, capture_output=True, check=False
    )


def _json(ws: Workspace, *args: str, root: str) -> Any:
    done = _run(ws, *args, "--json", root=root)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


@pytest.mark.slow
@pytest.mark.parametrize("pushed_before", [True, False])
def test_a_repacked_session_goes_redacted_as_its_generation(
    s3: S3Server, tmp_path: Path, pushed_before: bool
) -> None:
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=7, sessions=2, turns=4))
    prefix = bucket_prefix(tmp_path)
    config = archive_config(tmp_path / "asz.toml", s3.endpoint, prefix, redact=True)
    if pushed_before:
        assert _json(ws, "push", "--config", str(config), root=str(ws.root))["complete"]
    before = s3.etags(prefix + "/")
    repack(ws, *sessions(ws))
    pushed = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert pushed["complete"] and "generations_kept" not in pushed, pushed
    assert {key: s3.etags(prefix + "/")[key] for key in before} == before
    held = s3.objects(prefix + "/")
    store = open_store(ws.root)
    replaced = []
    for session in sessions(ws):
        generation = store.session(session).generation()
        assert generation is not None
        manifest = orjson.loads(held[f"{prefix}/{generation.path}"])
        assert manifest["redacted"] == pushed["policy"]
        for item in manifest["files"]:
            data = held[f"{prefix}/{item['path']}"]
            assert hashlib.sha256(data).hexdigest() == item["sha256"] and len(data) == item["size"]
            assert data != (ws.root / item["path"]).read_bytes()  # redacted, not the landed file
        replaced += [
            key for key in before if key.startswith(f"{prefix}/{session}/") and is_pushed_file(key)
        ]
    assert sorted(pushed["replaced"]) == sorted(replaced)
    assert bool(replaced) == pushed_before
    bucket = f"s3://{BUCKET}/{prefix}"
    verified = _json(ws, "verify", "--config", str(config), root=bucket)
    assert verified["problems"] == []
    local_cache = _json(ws, "cache", root=str(ws.root))
    assert without_project(_json(ws, "cache", "--config", str(config), root=bucket)) == (
        without_project(local_cache)
    )
    for session in sessions(ws):
        view = _json(ws, "view", session, "--config", str(config), root=bucket)
        local = _json(ws, "view", session, root=str(ws.root))
        assert len(view["calls"]) == len(local["calls"]) > 0
        assert "«redacted:" in orjson.dumps(without_refs(view)).decode()
    again = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert again["files"] == 0 and again["complete"]


@pytest.mark.slow
def test_each_redacted_file_pushed_in_parts_names_the_one_before_it(
    s3: S3Server, tmp_path: Path
) -> None:
    ws = Workspace(tmp_path)
    capture = Capture.make(tmp_path / "capture", seed=8, sessions=1, turns=4)
    writes = plan_writes(capture.dir, random.Random(3))
    prefix = bucket_prefix(tmp_path)
    config = archive_config(tmp_path / "asz.toml", s3.endpoint, prefix, redact=True)
    half = len(writes) // 2
    for part in (writes[:half], writes[half:]):  # two pushes, each of what landed since
        for write in part:
            apply_write(ws.claude, write)
        assert ws.collect_once()[0] == 0
        assert _json(ws, "push", "--config", str(config), root=str(ws.root))["complete"]
    client = s3.client()
    session = sessions(ws)[0]
    keys = sorted(
        (int(key.rsplit("-", 1)[1].split(".")[0]), key)
        for key in s3.objects(f"{prefix}/{session}/")
        if is_pushed_file(key)
    )
    assert len(keys) > 2
    for (seq, key), (_next, later) in itertools.pairwise(keys):
        data = client.get_object(Bucket=BUCKET, Key=key)["Body"].read()
        said = client.head_object(Bucket=BUCKET, Key=later)["Metadata"].get(FOLLOWS)
        assert said == f"{seq}:{hashlib.sha256(data).hexdigest()}", later


@pytest.mark.slow
def test_a_repacked_session_pushed_whole_is_reredacted_as_a_revision_of_its_generation(
    s3: S3Server, tmp_path: Path
) -> None:
    """A repacked session pushed with nothing landed since: the archive's generation covers
    every number the session has, so the new policy's goes beside it as a revision of it."""
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=9, sessions=2, turns=4))
    repack(ws, *sessions(ws))
    prefix = bucket_prefix(tmp_path)
    first = archive_config(tmp_path / "first.toml", s3.endpoint, prefix, redact=True)
    assert _json(ws, "push", "--config", str(first), root=str(ws.root))["complete"]
    before = s3.objects(prefix + "/")
    config = _with_policy(
        archive_config(tmp_path / "second.toml", s3.endpoint, prefix, redact=True, prune_after=0.0),
        'withhold = ["tools"]',
    )
    held = _run(ws, "push", "--config", str(config), "--json", root=str(ws.root))
    said = orjson.loads(held.stdout)
    assert held.returncode == 1 and said["files"] == 0 and said["other_policy"], said

    again = _json(ws, "push", "--config", str(config), "--reredact", root=str(ws.root))
    assert again["complete"] and sorted(again["reredacted"]) == sessions(ws), again
    now = s3.objects(prefix + "/")
    assert all(now[key] == data for key, data in before.items())  # nothing overwritten
    replaced = sorted(key for key in before if is_pushed_file(key) and "/_archive/" not in key)
    assert sorted(again["replaced"]) == replaced
    store = open_store(ws.root)
    for session in sessions(ws):
        manifests = [k for k in now if k.startswith(f"{prefix}/{session}/generation-")]
        new = [key for key in manifests if key not in before]
        assert len(manifests) == 2 and len(new) == 1 and new[0].endswith(".1.json"), manifests
        for item in orjson.loads(now[new[0]])["files"]:
            data = now[f"{prefix}/{item['path']}"]
            assert hashlib.sha256(data).hexdigest() == item["sha256"]

    bucket = f"s3://{BUCKET}/{prefix}"

    def read_back() -> None:
        _read_alike(ws, config, prefix)
        for session in sessions(ws):
            request = next(i for i in store.session(session).body_ids() if i.endswith(".request"))
            body = _run(ws, "body", session, request, "--config", str(config), root=bucket)
            assert body.returncode == 0 and WITHHELD.encode() in body.stdout, body.stderr
            back = tmp_path / "back" / session
            restored = _run(
                ws, "restore", session, "--to", str(back), "--config", str(config), root=bucket
            )
            assert restored.returncode == 0 and any(back.rglob("*.jsonl")), restored.stderr

    read_back()
    quiet = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert quiet["files"] == 0 and quiet["other_policy"] == [], quiet

    pruned = _json(ws, "push", "--config", str(config), "--prune", root=str(ws.root))
    assert pruned["pruned"]["objects"] == len(replaced), pruned["pruned"]
    assert not set(replaced) & set(s3.objects(prefix + "/"))
    read_back()


def _landed_in_small_passes(ws: Workspace, writes: list[Any]) -> None:
    """``writes`` landed in a few passes: many small files, for a repack to merge."""
    step = max(1, len(writes) // 8)
    for start in range(0, len(writes), step):
        for write in writes[start : start + step]:
            apply_write(ws.claude, write)
        assert ws.collect_once()[0] == 0


def _read_alike(ws: Workspace, config: Path, prefix: str) -> None:
    """Every reader of the bucket reads the root's sessions whole: verify finds nothing, the
    cache report is the local one, the view has every call."""
    bucket = f"s3://{BUCKET}/{prefix}"
    assert _json(ws, "verify", "--config", str(config), root=bucket)["problems"] == []
    assert without_project(_json(ws, "cache", "--config", str(config), root=bucket)) == (
        without_project(_json(ws, "cache", root=str(ws.root)))
    )
    for session in sessions(ws):
        view = _json(ws, "view", session, "--config", str(config), root=bucket)
        local = _json(ws, "view", session, root=str(ws.root))
        assert len(view["calls"]) == len(local["calls"]) > 0


def _pushed_then_reredacted(
    ws: Workspace, s3: S3Server, tmp_path: Path, prefix: str
) -> tuple[Path, Any]:
    """The root pushed redacted, then again under a policy that withholds the tools, with
    ``--reredact``: that policy's config, and what the second push said."""
    first = archive_config(tmp_path / "first.toml", s3.endpoint, prefix, redact=True)
    assert _json(ws, "push", "--config", str(first), root=str(ws.root))["complete"]
    config = _with_policy(
        archive_config(tmp_path / "second.toml", s3.endpoint, prefix, redact=True),
        'withhold = ["tools"]',
    )
    return config, _json(ws, "push", "--config", str(config), "--reredact", root=str(ws.root))


@pytest.mark.slow
def test_what_lands_after_a_repacked_session_went_redacted_goes_after_its_generation(
    s3: S3Server, tmp_path: Path
) -> None:
    """A stream's windows landed after a repack follow the generation's windows of it: their
    redacted offsets go on from where those of the generation's counterparts ended."""
    ws = Workspace(tmp_path)
    capture = Capture.make(tmp_path / "capture", seed=12, sessions=2, turns=4)
    writes = plan_writes(capture.dir, random.Random(6))
    half = len(writes) // 2
    _landed_in_small_passes(ws, writes[:half])
    repacked = repack(ws, *sessions(ws))["sessions"]
    assert any(outcome["state"] == "repacked" for outcome in repacked), repacked
    prefix = bucket_prefix(tmp_path)
    config = archive_config(tmp_path / "asz.toml", s3.endpoint, prefix, redact=True)
    assert _json(ws, "push", "--config", str(config), root=str(ws.root))["complete"]

    _landed_in_small_passes(ws, writes[half:])
    later = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert later["complete"] and later["redaction_failed"] == [] and later["files"] > 0, later
    _read_alike(ws, config, prefix)


@pytest.mark.slow
def test_a_session_repacked_after_its_reredaction_goes_on_being_pushed(
    s3: S3Server, tmp_path: Path
) -> None:
    """Re-redacted at its highest number, then repacked here at that same number: the
    archive's generation covers the repacked files, and what lands later goes after it."""
    ws = Workspace(tmp_path)
    capture = Capture.make(tmp_path / "capture", seed=11, sessions=2, turns=4)
    writes = plan_writes(capture.dir, random.Random(4))
    half = len(writes) // 2
    _landed_in_small_passes(ws, writes[:half])
    prefix = bucket_prefix(tmp_path)
    config, again = _pushed_then_reredacted(ws, s3, tmp_path, prefix)
    assert again["complete"] and again["reredacted"], again

    repacked = repack(ws, *sessions(ws))["sessions"]
    assert any(outcome["state"] == "repacked" for outcome in repacked), repacked
    quiet = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert quiet["complete"] and quiet["redaction_failed"] == [] and quiet["files"] == 0, quiet

    for write in writes[half:]:
        apply_write(ws.claude, write)
    assert ws.collect_once()[0] == 0
    later = _json(ws, "push", "--config", str(config), root=str(ws.root))
    assert later["complete"] and later["redaction_failed"] == [] and later["files"] > 0, later
    _read_alike(ws, config, prefix)
    bucket = f"s3://{BUCKET}/{prefix}"
    store = open_store(ws.root)
    for session in sessions(ws):
        for request in (i for i in store.session(session).body_ids() if i.endswith(".request")):
            body = _run(ws, "body", session, request, "--config", str(config), root=bucket)
            assert body.returncode == 0, body.stderr
            tools = b'"tools":[{' in store.session(session).body(request)
            assert (WITHHELD.encode() in body.stdout) == tools, request


@pytest.mark.slow
@pytest.mark.parametrize("before", ["raw", "another policy"])
def test_a_push_that_relists_takes_its_files_under_an_older_policy_for_what_they_are(
    s3: S3Server, tmp_path: Path, before: str
) -> None:
    """The record lost, or ``--relist``: what went under an older policy (or raw) differs from
    what this policy sends, yet it is this root's: held for --reredact, never a conflict."""
    ws = Workspace(tmp_path)
    _landed_in_small_passes(
        ws, plan_writes(Capture.make(tmp_path / "c", seed=13).dir, random.Random(7))
    )
    prefix = bucket_prefix(tmp_path)
    first = archive_config(tmp_path / "first.toml", s3.endpoint, prefix, redact=before != "raw")
    assert _json(ws, "push", "--config", str(first), root=str(ws.root))["complete"]
    held_before = s3.objects(prefix + "/")
    config = _with_policy(
        archive_config(tmp_path / "second.toml", s3.endpoint, prefix, redact=True),
        'withhold = ["tools"]',
    )
    (ws.root / "_state" / "archive-pushed.jsonl").unlink()

    for relist in ([], ["--relist"]):
        done = _run(ws, "push", "--config", str(config), "--json", *relist, root=str(ws.root))
        held = orjson.loads(done.stdout)
        assert done.returncode == 1 and held["conflicts"] == [] and held["other_policy"], held
        assert held["files"] == 0, held
        assert b"conflict" not in done.stderr and b"--reredact" in done.stderr, done.stderr
        sent = set(s3.objects(prefix + "/")) - set(held_before)
        assert all("/_archive/roots/" in key for key in sent), sent  # the new record's marker

    again = _json(ws, "push", "--config", str(config), "--reredact", root=str(ws.root))
    assert again["complete"] and sorted(again["reredacted"]) == sessions(ws), again
    now = s3.objects(prefix + "/")
    assert all(now[key] == data for key, data in held_before.items())
    _read_alike(ws, config, prefix)


@pytest.mark.slow
def test_a_reredaction_after_the_record_was_lost_goes_beside_every_generation_there(
    s3: S3Server, tmp_path: Path
) -> None:
    """Re-redacted once, the record lost, the policy changed again: the new generation takes
    the revision above the one in the bucket, which the rebuilt record never names."""
    ws = Workspace(tmp_path)
    _landed_in_small_passes(
        ws, plan_writes(Capture.make(tmp_path / "c", seed=14).dir, random.Random(8))
    )
    prefix = bucket_prefix(tmp_path)
    _second, again = _pushed_then_reredacted(ws, s3, tmp_path, prefix)
    assert again["complete"]
    (ws.root / "_state" / "archive-pushed.jsonl").unlink()
    third = _with_policy(
        archive_config(tmp_path / "third.toml", s3.endpoint, prefix, redact=True),
        'withhold = ["tools", "system"]',
    )
    held = _run(ws, "push", "--config", str(third), "--json", root=str(ws.root))
    assert held.returncode == 1 and orjson.loads(held.stdout)["conflicts"] == [], held.stdout

    again = _json(ws, "push", "--config", str(third), "--reredact", root=str(ws.root))
    assert again["complete"] and again["conflicts"] == [], again
    keys = s3.objects(prefix + "/")
    for session in sessions(ws):
        assert f"{prefix}/{session}/generation-{_highest(ws, session):08d}.2.json" in keys
    _read_alike(ws, third, prefix)
    store = open_store(ws.root)
    bucket = f"s3://{BUCKET}/{prefix}"
    for session in sessions(ws):
        request = next(i for i in store.session(session).body_ids() if i.endswith(".request"))
        body = _run(ws, "body", session, request, "--config", str(third), root=bucket)
        assert body.returncode == 0 and b"\xc2\xabwithheld:system:" in body.stdout, body.stderr


def _highest(ws: Workspace, session: str) -> int:
    return open_store(ws.root).numbered(session)[0]
