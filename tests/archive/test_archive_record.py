"""The push record: a journal folded into a snapshot as it grows, read back the same whether it
was folded or not, stopped between its two writes or not, and rebuilt from the bucket when the
snapshot it rests on does not hold."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from support.archive_roots import Machine, bucket_prefix, landed_keys
from support.s3server import BUCKET, S3Server, proxied

from asz.archive.record import PushRecord
from asz.crashpoints import ENV, EXIT_CODE, PUSH_POINTS
from asz.store import PUSH_RECORD_FILE, PUSH_SNAPSHOT_FILE, STATE_DIR
from asz.synth import SynthOptions

ARCHIVE, ENDPOINT = "s3://team/p", "http://127.0.0.1:9"
PATHS = [f"s/{name}" for name in ("a", "b", "extent-00000003")]
"""Few paths, so that the entries of a random history often meet on one."""

operations = st.lists(
    st.one_of(
        st.tuples(st.just("sending"), st.sampled_from(PATHS)),
        st.tuples(st.just("pushed"), st.sampled_from(PATHS), st.sampled_from(["", "f" * 24])),
        st.tuples(st.just("claim"), st.sampled_from(["s", "t"])),
        st.tuples(st.just("extended"), st.sampled_from(PATHS)),
        st.tuples(st.just("unextended"), st.sampled_from(PATHS)),
        st.tuples(st.just("forget"), st.lists(st.sampled_from(PATHS), unique=True, max_size=2)),
        st.tuples(st.just("compact"), st.booleans()),
    ),
    max_size=30,
)


def _state(record: PushRecord) -> tuple[object, ...]:
    return (
        record.rebuilt,
        record.marker,
        record.done,
        record.policy,
        record.tried,
        record.claimed,
        record.extents,
    )


def _apply(record: PushRecord, operation: tuple[object, ...]) -> None:
    name, *args = operation
    if name == "pushed":
        path, policy = args
        record.pushed(str(path), len(str(path)), str(policy))
    elif name != "compact":
        getattr(record, str(name))(*args)


@settings(max_examples=400, deadline=None)
@given(operations)
# An extent taken back after a fold is tried again, as it is when nothing was folded.
@example(
    [("sending", PATHS[2]), ("extended", PATHS[2]), ("compact", False), ("unextended", PATHS[2])]
)
def test_a_folded_record_reads_as_the_journal_alone_even_when_stopped_between_its_writes(
    steps: list[tuple[object, ...]],
) -> None:
    """Two roots take the same entries; one is folded at the marked steps, sometimes left as a
    stop between its two writes leaves it (the new snapshot beside the old journal). Each
    load of it must say what the load of the journal never folded says."""
    with tempfile.TemporaryDirectory() as folded_dir, tempfile.TemporaryDirectory() as plain_dir:
        folded = PushRecord.for_root(Path(folded_dir), ARCHIVE, ENDPOINT)
        plain = PushRecord.for_root(Path(plain_dir), ARCHIVE, ENDPOINT)
        folded.start("_archive/roots/m.json")
        plain.start("_archive/roots/m.json")
        journal = folded.path
        for step in steps:
            if step[0] == "compact":
                before = journal.read_bytes()
                folded.compact()
                if step[1]:  # stopped after the snapshot, before the journal was cut
                    journal.write_bytes(before)
                folded = PushRecord.for_root(Path(folded_dir), ARCHIVE, ENDPOINT)
            else:
                _apply(folded, step)
                _apply(plain, step)
            read = PushRecord.for_root(Path(folded_dir), ARCHIVE, ENDPOINT)
            assert _state(read) == _state(PushRecord.for_root(Path(plain_dir), ARCHIVE, ENDPOINT))


def _folded(root: Path) -> PushRecord:
    record = PushRecord.for_root(root, ARCHIVE, ENDPOINT)
    record.start("_archive/roots/m.json")
    for path in PATHS:
        record.sending(path)
        record.pushed(path, 7)
    record.claim("s")
    assert record.compact()
    return record


def test_a_record_is_folded_only_once_its_journal_outgrows_the_snapshot(tmp_path: Path) -> None:
    record = _folded(tmp_path)
    journal, snapshot = record.path, record.path.with_name(PUSH_SNAPSHOT_FILE)
    assert len(journal.read_bytes().splitlines()) == 1
    assert snapshot.stat().st_mode & 0o777 == 0o600
    assert not record.compact(), "an empty journal is not folded"
    fresh = PushRecord.for_root(tmp_path / "fresh", ARCHIVE, ENDPOINT)
    fresh.start("_archive/roots/m.json")
    assert not fresh.compact(), "nor is a journal just started"
    record.sending("s/d")
    assert not record.compact(), "a journal smaller than the snapshot is not folded"
    assert len(journal.read_bytes().splitlines()) == 2
    read = PushRecord.for_root(tmp_path, ARCHIVE, ENDPOINT)
    assert not read.rebuilt and set(read.done) == set(PATHS) and read.tried == {"s/d"}


@pytest.mark.parametrize(
    "damage",
    ["missing", "cut", "scribbled", "another marker", "another archive"],
)
def test_a_record_whose_snapshot_does_not_hold_is_rebuilt(tmp_path: Path, damage: str) -> None:
    _folded(tmp_path)
    snapshot = tmp_path / STATE_DIR / PUSH_SNAPSHOT_FILE
    data = snapshot.read_bytes()
    if damage == "missing":
        snapshot.unlink()
    elif damage == "cut":
        snapshot.write_bytes(data[:-9])
    elif damage == "scribbled":
        snapshot.write_bytes(data.replace(b"s/a", b"s/z"))
    elif damage == "another marker":
        other = PushRecord.for_root(tmp_path / "other", ARCHIVE, ENDPOINT)
        other.start("_archive/roots/n.json")
        other.pushed("s/a", 7)
        assert other.compact()
        shutil.copy(other.path.with_name(PUSH_SNAPSHOT_FILE), snapshot)
    else:
        other = _folded(tmp_path / "other")
        journal = tmp_path / STATE_DIR / PUSH_RECORD_FILE
        shutil.copy(other.path.with_name(PUSH_SNAPSHOT_FILE), snapshot)
        journal.write_bytes(journal.read_bytes().replace(ARCHIVE.encode(), b"s3://team/q"))
        assert PushRecord.for_root(tmp_path, "s3://team/q", ENDPOINT).rebuilt
        return
    assert PushRecord.for_root(tmp_path, ARCHIVE, ENDPOINT).rebuilt


def test_a_journal_written_before_snapshots_reads_whole(tmp_path: Path) -> None:
    journal = tmp_path / STATE_DIR / PUSH_RECORD_FILE
    journal.parent.mkdir()
    head = {"format": "asz.archive-pushed/2", "archive": ARCHIVE, "endpoint": ENDPOINT}
    lines = [{**head, "marker": "_archive/roots/m.json"}, {"try": ["s/a"]}, {"done": "s/a", "n": 3}]
    journal.write_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    read = PushRecord.for_root(tmp_path, ARCHIVE, ENDPOINT)
    assert not read.rebuilt and read.done == {"s/a": 3} and read.tried == set()


@pytest.mark.slow
@pytest.mark.parametrize("point", PUSH_POINTS)
def test_pushes_fold_the_record_and_a_stop_between_its_writes_sends_nothing_again(
    s3: S3Server, tmp_path: Path, point: str
) -> None:
    machine = Machine(tmp_path / "m")
    machine.land(SynthOptions(sessions=2, turns=3, index=True))
    prefix = bucket_prefix(tmp_path)
    journal = machine.root / STATE_DIR / PUSH_RECORD_FILE
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        killed = machine.asz_env(
            {**machine.env(), ENV: point},
            *("push", "--root", str(machine.root), "--config", str(config), "--json"),
        )
        assert killed.returncode == EXIT_CODE, killed.stderr
        assert len(journal.read_bytes().splitlines()) > 1, "stopped before the journal was cut"
        sent = proxy.sent()

        done = machine.push(config, "--json")
        assert done.returncode == 0, done.stderr
        said = json.loads(done.stdout)
        assert said["complete"] and not said["rebuilt"] and said["files"] == 0, said
        assert proxy.sent() == sent, "nothing went twice"
        assert len(journal.read_bytes().splitlines()) == 1, "folded by the push that ended"
        record = PushRecord.for_root(machine.root, f"s3://{BUCKET}/{prefix}", proxy.endpoint)
        assert not record.rebuilt
        assert {f"{prefix}/{path}" for path in record.done} == set(
            landed_keys(machine.store(), prefix)
        )

        machine.say(machine.store().sessions()[0], "one more prompt")
        more = json.loads(machine.push(config, "--json").stdout)
        assert more["complete"] and more["files"] > 0 and not more["rebuilt"], more
        (machine.root / STATE_DIR / PUSH_SNAPSHOT_FILE).write_bytes(b"{}\n")
        again = json.loads(machine.push(config, "--json").stdout)
        assert again["rebuilt"] and again["files"] == 0 and again["conflicts"] == [], again
        assert again["already_there"] == len(landed_keys(machine.store(), prefix))


def test_paths_a_prune_removed_leave_the_record_whether_folded_or_not(tmp_path: Path) -> None:
    record = _folded(tmp_path)
    record.extended(PATHS[2])
    many = [f"s/old-{i}" for i in range(20)]
    for path in many:
        record.pushed(path, 9)
    record.forget([PATHS[0], PATHS[2], *many])
    for folded in (False, True):
        read = PushRecord.for_root(tmp_path, ARCHIVE, ENDPOINT)
        assert read.done.keys() == {PATHS[1]} and read.policy.keys() == {PATHS[1]}
        assert read.extents == set() and read.tried == set() and read.claimed == {"s"}
        assert read.compact() != folded  # the journal outgrew the snapshot; then it is folded
