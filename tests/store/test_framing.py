"""The landed-file framing: exact payloads back, and every kind of damage named, never a crash."""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from asz.atomic import (
    SYNCFS_MIN_PATHS,
    AlreadyExists,
    DirSyncs,
    private_dir,
    publish_new,
    remove_stale_temps,
    replace_derived,
)
from asz.store import BODY_KIND, open_store
from asz.store._backend import LocalBackend
from asz.store._framing import MAX_CONTENT_BYTES, LandedFileError, decode_file, encode_file
from asz.store._writer import Batch

HEADER = {"kind": "provider_body", "session": "11111111-2222-4333-8444-555555555555", "seq": 1}


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_payloads_come_back_exactly(tmp_path: Path, compression: str) -> None:
    records = [({"id": "a"}, b"\x00\xff\n\r raw bytes\n"), ({"id": "b"}, b""), ({}, b"{" * 10_000)]
    data = encode_file(HEADER, records, compression)
    assert data.startswith(b"\x28\xb5\x2f\xfd") == (compression == "zstd")
    path = tmp_path / "f.asz"
    publish_new(path, data)
    landed = decode_file(path, LocalBackend(tmp_path).read("f.asz", MAX_CONTENT_BYTES))
    assert landed.header["seq"] == 1
    assert [(r.meta, r.payload) for r in landed.records] == records
    assert [r.row for r in landed.records] == [1, 2, 3]


def test_a_file_framed_at_a_repack_level_leaves_no_working_memory_behind() -> None:
    """A level-19 compressor holds about 90 MiB for as long as it lives; a service that
    repacked once must not keep that for the rest of its life."""
    script = """
import os, sys
from asz.store._framing import encode_file
def rss_mib():
    return int(open("/proc/self/statm").read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20
records = [({"id": str(i)}, os.urandom(1000) * 50) for i in range(320)]
before = rss_mib()
encode_file({"kind": "provider_body"}, records, "zstd", 19)
encode_file({"kind": "provider_body"}, records, "zstd", 6)
print(rss_mib() - before)
"""
    if not Path("/proc/self/statm").exists():
        pytest.skip("reads resident memory from /proc")
    grown = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout
    assert int(grown) < 40, f"{grown} MiB still held after framing"


def test_closing_line_counts_and_digests_everything_before_it() -> None:
    content = encode_file(HEADER, [({"x": 1}, b"abc")], "none")
    body, closing = content[: content.rindex(b'{"end"')], content[content.rindex(b'{"end"') :]
    assert b'"records":1' in closing
    assert hashlib.sha256(body).hexdigest().encode() in closing


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_every_flipped_byte_is_caught(compression: str) -> None:
    data = encode_file(HEADER, [({"id": "a"}, b"payload " * 50), ({"id": "b"}, b"x")], compression)
    for index in range(0, len(data), max(1, len(data) // 97)):
        damaged = bytearray(data)
        damaged[index] ^= 0x20
        with pytest.raises(LandedFileError):
            decode_file(Path("f"), bytes(damaged))


@pytest.mark.parametrize("compression", ["zstd", "none"])
def test_truncation_and_appended_bytes_are_caught(compression: str) -> None:
    data = encode_file(HEADER, [({"id": "a"}, b"payload " * 50)], compression)
    for cut in (1, 10, len(data) // 2, len(data) - 1):
        with pytest.raises(LandedFileError):
            decode_file(Path("f"), data[:cut])
    with pytest.raises(LandedFileError):
        decode_file(Path("f"), data + b"\n")


def test_a_payload_longer_than_the_file_is_refused_without_allocating() -> None:
    forged = (
        b'{"format":"asz.landed/1","kind":"k","seq":1}\n{"r":1,"n":4611686018427387904,"m":{}}\n'
    )
    with pytest.raises(LandedFileError, match="row 1"):
        decode_file(Path("f"), forged)


def test_a_decompression_bomb_is_stopped_at_the_cap() -> None:
    bomb = zstandard.ZstdCompressor().compress(b"\0" * (8 << 20))
    with pytest.raises(LandedFileError, match="decompresses past"):
        decode_file(Path("f"), bomb, max_bytes=1 << 20)


def _declaring(size: int, frame: bytes) -> bytes:
    """``frame`` with the content size its header declares set to ``size`` (a 4-byte field)."""
    header = zstandard.frame_header_size(frame)
    assert frame[4] >> 6 == 2, "the frame declares its size in four bytes"
    return frame[: header - 4] + size.to_bytes(4, "little") + frame[header:]


def test_a_frame_that_declares_less_than_it_holds_is_refused_without_writing_past_it() -> None:
    frame = zstandard.ZstdCompressor(write_checksum=True).compress(b"\0" * (8 << 20))
    lying = _declaring(1 << 10, frame)
    assert zstandard.frame_content_size(lying) == 1 << 10
    with pytest.raises(LandedFileError, match="does not decompress"):
        decode_file(Path("f"), lying, max_bytes=1 << 20)


def test_the_error_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / HEADER["session"] / "provider_body" / "provider_body-00000001.asz"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"not a landed file")
    session = open_store(tmp_path).session(str(HEADER["session"]))
    [name] = session.landed(BODY_KIND)
    with pytest.raises(LandedFileError) as caught:
        session.read(name)
    assert str(path) in str(caught.value)
    assert list(session.files([name])) == []
    assert [problem.file for problem in session.problems] == [str(path)]


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=2000))
def test_random_bytes_are_an_error_never_a_crash(data: bytes) -> None:
    with contextlib.suppress(LandedFileError):
        decode_file(Path("f"), data)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.dictionaries(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1), max_size=3),
            st.binary(),
        ),
        max_size=6,
    ),
    st.sampled_from(["zstd", "none"]),
)
def test_any_records_round_trip(records, compression) -> None:
    landed = decode_file(Path("f"), encode_file(HEADER, records, compression))
    assert [(r.meta, r.payload) for r in landed.records] == records


def test_published_files_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "a" / "b" / "f.asz"
        publish_new(path, b"data")
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE((tmp_path / "a").stat().st_mode) == 0o700


def test_publishing_never_replaces_and_leaves_no_temporary(tmp_path: Path) -> None:
    path = tmp_path / "f.asz"
    publish_new(path, b"first")
    with pytest.raises(AlreadyExists):
        publish_new(path, b"second")
    assert path.read_bytes() == b"first"
    assert sorted(os.listdir(tmp_path)) == ["f.asz"]


def test_a_failed_check_publishes_nothing(tmp_path: Path) -> None:
    def refuse(temp: Path) -> None:
        assert temp.read_bytes() == b"data"
        raise RuntimeError("read back differs")

    with pytest.raises(RuntimeError):
        publish_new(tmp_path / "f.asz", b"data", check=refuse)
    assert os.listdir(tmp_path) == []


def test_stale_temporaries_are_removed(tmp_path: Path) -> None:
    private_dir(tmp_path / "d")
    (tmp_path / "d" / ".tmp-abc").write_bytes(b"half")
    (tmp_path / "d" / "keep.asz").write_bytes(b"whole")
    assert remove_stale_temps(tmp_path / "d") == 1
    assert os.listdir(tmp_path / "d") == ["keep.asz"]


def test_a_derived_replace_is_whole_private_and_leaves_no_temporary(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        path = tmp_path / "state" / "cursor.json"
        replace_derived(path, b"old")
        replace_derived(path, b"new")
    finally:
        os.umask(old)
    assert path.read_bytes() == b"new"
    assert os.listdir(path.parent) == ["cursor.json"]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700


def test_deferred_syncs_name_each_directory_once_with_the_parents_of_new_ones(
    tmp_path: Path,
) -> None:
    private_dir(tmp_path / "root")
    syncs = DirSyncs()
    stream = tmp_path / "root" / "session" / "transcripts" / "s-1"
    publish_new(stream / "transcript-00000001.asz", b"one", syncs=syncs)
    publish_new(stream / "transcript-00000002.asz", b"two", syncs=syncs)
    publish_new(tmp_path / "root" / "session" / "seq-file", b"three", syncs=syncs)

    assert syncs.take() == [
        tmp_path / "root",
        tmp_path / "root" / "session",
        tmp_path / "root" / "session" / "transcripts",
        stream,
    ]
    assert syncs.take() == []
    assert (stream / "transcript-00000002.asz").read_bytes() == b"two"


@pytest.mark.parametrize("count", [3, SYNCFS_MIN_PATHS + 4])
def test_staged_files_appear_together_at_commit_in_order_then_their_actions_run(
    tmp_path: Path, count: int
) -> None:
    """A few files are flushed one by one, many with one filesystem sync: both publish all."""
    staged = Batch(LocalBackend(tmp_path))
    seen: list[str] = []
    paths = [tmp_path / "root" / f"s-{n % 3}" / f"transcript-{n:08d}.asz" for n in range(count)]
    for number, path in enumerate(paths):
        relpath = str(path.relative_to(tmp_path))
        staged.stage(relpath, b"x" * number, published=lambda path=path: seen.append(path.name))
        staged.then(lambda number=number: seen.append(f"action {number}"))
    assert len(staged) == count and staged.size == sum(range(count))
    assert not any(path.exists() for path in paths)

    staged.commit()
    names = [path.name for path in paths]
    assert seen == names + [f"action {n}" for n in range(count)]
    assert [path.read_bytes() for path in paths] == [b"x" * n for n in range(count)]
    assert not [p for p in (tmp_path / "root").rglob(".tmp-*")]
    assert len(staged) == 0 and staged.size == 0
    staged.commit()  # nothing staged: nothing happens
    assert len(seen) == 2 * count


def test_a_failed_commit_stops_publishing_runs_no_action_and_leaves_no_temporary(
    tmp_path: Path,
) -> None:
    taken = tmp_path / "b.asz"
    taken.write_bytes(b"landed before")
    staged = Batch(LocalBackend(tmp_path))
    actions: list[int] = []
    for name in ("a.asz", "b.asz", "c.asz"):
        staged.stage(name, name.encode())
    staged.then(lambda: actions.append(1))
    with pytest.raises(AlreadyExists):
        staged.commit()
    assert (tmp_path / "a.asz").read_bytes() == b"a.asz"
    assert taken.read_bytes() == b"landed before"
    assert not (tmp_path / "c.asz").exists()
    assert actions == []
    assert sorted(os.listdir(tmp_path)) == ["a.asz", "b.asz"]


def test_a_staged_file_failing_its_check_is_not_staged(tmp_path: Path) -> None:
    staged = Batch(LocalBackend(tmp_path))

    def refuse(data: bytes) -> None:
        assert data == b"data"  # what was written, read back
        raise RuntimeError("read back differs")

    with pytest.raises(RuntimeError):
        staged.stage("f.asz", b"data", check=refuse)
    assert len(staged) == 0 and os.listdir(tmp_path) == []
    staged.commit()
    assert os.listdir(tmp_path) == []


def test_many_deferred_directory_syncs_are_flushed_and_forgotten(tmp_path: Path) -> None:
    syncs = DirSyncs()
    staged = Batch(LocalBackend(tmp_path), syncs)
    for number in range(SYNCFS_MIN_PATHS + 2):
        staged.stage(f"d{number}/f.asz", b"data")
    staged.commit()
    assert len(syncs.take()) == SYNCFS_MIN_PATHS + 3  # each new dir, and their parent
    for number in range(SYNCFS_MIN_PATHS + 2):
        staged.stage(f"e{number}/f.asz", b"data")
    staged.commit()
    syncs.flush()
    assert syncs.take() == []
