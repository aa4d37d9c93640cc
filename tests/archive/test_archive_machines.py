"""Many machines, one archive: each pushes its own sessions into one prefix, each reads the
union back, and a session two roots hold is reported by name, never merged."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.archive_roots import Machine, is_extent, is_pushed_file, landed_keys, pushed_files
from support.s3server import BUCKET, S3Server, proxied

from asz.synth import SynthOptions


def _two(tmp_path: Path) -> tuple[Machine, Machine]:
    first, second = Machine(tmp_path / "one"), Machine(tmp_path / "two")
    first.land(SynthOptions(seed=1, sessions=2))
    second.land(SynthOptions(seed=2, sessions=1))
    assert not set(first.store().sessions()) & set(second.store().sessions())
    return first, second


@pytest.mark.slow
def test_two_roots_push_into_one_prefix_and_both_read_the_union(
    s3: S3Server, tmp_path: Path
) -> None:
    first, second = _two(tmp_path)
    prefix = "machines-union"
    configs = [machine.configure(s3.endpoint, prefix) for machine in (first, second)]
    for machine, config in zip((first, second), configs, strict=True):
        done = machine.push(config, "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["held_elsewhere"] == []
    union = sorted(first.store().sessions() + second.store().sessions())
    for machine, config in zip((first, second), configs, strict=True):
        listed = json.loads(machine.read(config, prefix, "sessions", "--json").stdout)
        assert sorted(session["id"] for session in listed) == union
        verified = machine.read(config, prefix, "verify", "--json")
        assert verified.returncode == 0, verified.stderr
        assert json.loads(verified.stdout)["sessions"] == 3
    # Another machine's session, read from the bucket, is what its own root says.
    theirs = second.store().sessions()[0]
    local = second.read_local("view", theirs, "--json")
    remote = first.read(configs[0], prefix, "view", theirs, "--json")
    assert remote.returncode == 0 and remote.stdout == local.stdout


@pytest.mark.slow
def test_a_session_two_roots_hold_is_reported_and_never_merged(
    s3: S3Server, tmp_path: Path
) -> None:
    first = Machine(tmp_path / "one")
    first.land(SynthOptions(seed=3, sessions=2))
    # A second machine sharing the home directory: the same Claude Code files, its own root.
    second = Machine(tmp_path / "two")
    shutil.copytree(first.claude, second.claude)
    second.land()
    prefix = "machines-shared"
    assert first.push(first.configure(s3.endpoint, prefix)).returncode == 0
    before = s3.objects(prefix + "/")
    with proxied(s3) as proxy:
        config = second.configure(proxy.endpoint, prefix)
        done = second.push(config, "--json")
        assert done.returncode == 1
        counts = json.loads(done.stdout)
        assert sorted(counts["held_elsewhere"]) == sorted(second.store().sessions())
        assert counts["files"] == 0 and counts["waiting_files"] == len(
            landed_keys(second.store(), prefix)
        )
        assert "held by another root" in done.stderr.decode()
        assert proxy.sent() == {}  # nothing of it was sent
        # Every push says so again while it stays.
        assert json.loads(second.push(config, "--json").stdout)["held_elsewhere"]
    # Nothing of it went; the second root's record has its own marker, which says nothing.
    assert {k: v for k, v in s3.objects(prefix + "/").items() if "/roots/" not in k} == {
        k: v for k, v in before.items() if "/roots/" not in k
    }
    verified = first.read(first.configure(s3.endpoint, prefix), prefix, "verify")
    assert verified.returncode == 0, verified.stderr


def test_a_root_moved_to_another_machine_carries_on_without_sending_again(
    s3: S3Server, tmp_path: Path
) -> None:
    first = Machine(tmp_path / "one")
    first.land(SynthOptions(seed=4, sessions=1))
    prefix = "machines-moved"
    assert first.push(first.configure(s3.endpoint, prefix)).returncode == 0
    moved = Machine(tmp_path / "new-laptop")
    shutil.copytree(first.root, moved.root, ignore=shutil.ignore_patterns("_state"))
    with proxied(s3) as proxy:
        done = moved.push(moved.configure(proxy.endpoint, prefix), "--json")
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        assert counts["files"] == 0 and counts["held_elsewhere"] == []
        assert counts["already_there"] == len(landed_keys(first.store(), prefix))
        assert proxy.sent() == {}


@pytest.mark.slow
def test_a_diverged_copy_stops_its_session_at_the_conflict(s3: S3Server, tmp_path: Path) -> None:
    """A root copied to another machine (its record too), then each lands other lines: the
    copy's first file of its own meets the original's there, and nothing after it goes, so
    the session in the bucket never continues one root's files with the other's."""
    first = Machine(tmp_path / "one")
    first.land(SynthOptions(seed=6, sessions=1))
    prefix = "machines-diverged"
    assert first.push(first.configure(s3.endpoint, prefix)).returncode == 0
    copy = Machine(tmp_path / "two")
    shutil.copytree(first.base, copy.base)
    (session,) = first.store().sessions()
    first.say(session, "on the first machine")
    copy.say(session, "on the copy")
    copy.say(session, "and again on the copy")
    before = len(first.store().session(session).landed())
    assert first.push(first.configure(s3.endpoint, prefix)).returncode == 0
    with proxied(s3) as proxy:
        done = copy.push(copy.configure(proxy.endpoint, prefix), "--json")
        assert done.returncode == 1
        counts = json.loads(done.stdout)
        names = copy.store().session(session).landed()
        assert counts["conflicts"] == [f"{prefix}/{names[before - 1].path}"], counts
        assert counts["files"] == 0 and counts["waiting_files"] == 2
        sent = [key for key in proxy.sent() if is_pushed_file(key)]
        assert sent == [], sent  # its next file was never sent
        (extent,) = [key for key in proxy.sent() if is_extent(key)]
        assert extent.endswith(f"/extent-{names[-1].seq:08d}")
    held = s3.objects(f"{prefix}/{session}/")
    # The first root's files and extent, and no other: the copy took its own extent back,
    # so a reader does not wait for files it will never send.
    assert sorted(pushed_files(held)) == sorted(
        f"{prefix}/{name.path}" for name in first.store().session(session).landed()
    )
    assert max(key for key in held if is_extent(key)) == f"{prefix}/{session}/extent-{before:08d}"
    verified = first.read(first.configure(s3.endpoint, prefix), prefix, "verify")
    assert verified.returncode == 0, verified.stderr


@pytest.mark.slow
def test_a_reader_says_a_session_holds_files_from_two_roots(s3: S3Server, tmp_path: Path) -> None:
    """What a race between two diverged copies, or a push before they were stopped at the
    conflict, leaves: one root's files continued by the other's. Every reader says so of the
    files it cannot trust and exits 1; nothing rebuilds a transcript that neither root had."""
    first = Machine(tmp_path / "one")
    first.land(SynthOptions(seed=8, sessions=1))
    copy = Machine(tmp_path / "two")
    shutil.copytree(first.base, copy.base)
    (session,) = first.store().sessions()
    # Lines of one length: the windows join, byte for byte, whichever root wrote them.
    first.say(session, "written on machine one")
    copy.say(session, "written on machine two")
    copy.say(session, "and more on machine two")
    ours, theirs = "machines-mixed", "machines-mixed-copy"
    config = first.configure(s3.endpoint, ours)
    assert first.push(config).returncode == 0
    assert copy.push(copy.configure(s3.endpoint, theirs)).returncode == 0
    last = copy.store().session(session).landed()[-1].path
    client = s3.client()
    source = {"Bucket": BUCKET, "Key": f"{theirs}/{last}"}
    client.copy_object(Bucket=BUCKET, Key=f"{ours}/{last}", CopySource=source)
    verified = first.read(config, ours, "verify")
    assert verified.returncode == 1
    said = verified.stderr.decode()
    assert "holds files from two roots" in said and last in said, said
    back = first.read(config, ours, "restore", session, "--to", str(tmp_path / "back"))
    assert back.returncode == 1 and b"two roots" in back.stderr
    # The copy's file pushed beside another one of the same number: said of both.
    number = last.rsplit("-", 1)[1]
    beside = f"{ours}/{session}/transcripts/s-0000000000000000/transcript-{number}"
    client.copy_object(Bucket=BUCKET, Key=beside, CopySource=source)
    again = first.read(config, ours, "verify")
    assert again.returncode == 1 and "are both number" in again.stderr.decode()
