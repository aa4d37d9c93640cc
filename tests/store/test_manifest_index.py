"""The manifest index is derived state: landing leaves one, readers take the manifests of every
file it lists at the stamp it had, read every other file from itself, and write it again."""

from __future__ import annotations

import errno
import os
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.counting import counting
from support.landing import land_synth

from asz.bodykeys import BodyKeys
from asz.store import BODY_KIND, LocalBackend, Session, Store, open_store
from asz.store._bodies import BodyLander, IncomingBody
from asz.store._layout import MANIFESTS_FILE
from asz.store._manifest_index import MANIFESTS, decode_index
from asz.store._root import Root
from asz.synth import SynthOptions
from asz.web.readonly import ReadOnlyBackend

SESSION = "0b6d3c52-4a8e-4f51-9a34-3b9c4f0de1a7"


def plain(session: Session) -> dict[str, str]:
    """Every manifest of the session, as a value to compare."""
    return {key: repr(value) for key, value in session.manifests().items()}


def manifests_of(root: Path, session: str) -> tuple[dict[str, str], list[str]]:
    """Every manifest as a plain value, and the problems met reading them, from a fresh store."""
    landed = open_store(root).session(session)
    return plain(landed), [str(problem) for problem in landed.problems]


def blank_body_files(root: Path, session: str) -> None:
    """Same names and sizes, other bytes: rewritten files, which a reader reads again."""
    for name in open_store(root).session(session).landed(BODY_KIND):
        path = root / name.path
        path.write_bytes(b"\0" * path.stat().st_size)


def kept_index(root: Path, session: str) -> dict[str, Any]:
    """What the index holds, by file name: ``[stamp, records, problems]``."""
    kept = MANIFESTS.read(open_store(root).session(session))
    assert kept is not None
    return dict(kept.value)


def keep_index(root: Path, session: str, files: dict[str, Any]) -> None:
    """Writes an index whole, as a reader would: what it holds is then the test's."""
    MANIFESTS.write(open_store(root).session(session), "any", files)


def landed(tmp_path: Path, run_asz: Any) -> tuple[Path, str]:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=11, sessions=1, turns=4))
    return Path(store.location), expected["sessions"][0]["id"]


def landed_without_index(tmp_path: Path, run_asz: Any) -> tuple[Path, str, dict[str, str], Path]:
    """A landed session's root, id and manifests, with its index removed, and where it was."""
    root, session = landed(tmp_path, run_asz)
    before, problems = manifests_of(root, session)
    assert before and not problems
    index = root / session / MANIFESTS_FILE
    index.unlink()
    return root, session, before, index


def test_landing_leaves_an_index_that_gives_what_the_files_give(
    tmp_path: Path, run_asz: Any
) -> None:
    root, session = landed(tmp_path, run_asz)
    index = root / session / MANIFESTS_FILE
    assert index.is_file() and index.stat().st_mode & 0o777 == 0o600
    from_index = manifests_of(root, session)
    index.unlink()
    from_files = manifests_of(root, session)
    assert from_index == from_files and from_files[0] and not from_files[1]
    assert index.is_file(), "a reader that read the files keeps the index again"
    assert manifests_of(root, session) == from_files


def test_a_reader_takes_the_index_without_reading_the_files_it_lists(
    tmp_path: Path, run_asz: Any
) -> None:
    root, session = landed(tmp_path, run_asz)
    before = manifests_of(root, session)
    backend = counting(LocalBackend)(root)
    assert plain(open_store(backend).session(session)) == before[0]
    assert backend.body_reads == 0


def test_files_rewritten_at_the_same_size_are_read_again(tmp_path: Path, run_asz: Any) -> None:
    root, session = landed(tmp_path, run_asz)
    blank_body_files(root, session)
    _manifests, problems = manifests_of(root, session)
    assert problems, "the index did not hide the damage"
    assert run_asz("verify", "--root", str(root)).returncode == 1


def test_a_file_of_another_stamp_or_missing_from_the_index_is_read_from_itself(
    tmp_path: Path, run_asz: Any
) -> None:
    root, session = landed(tmp_path, run_asz)
    before = manifests_of(root, session)
    files = kept_index(root, session)
    name = sorted(files)[0]
    stamp = files[name][0]
    del files[name]
    keep_index(root, session, files)
    assert manifests_of(root, session) == before
    assert kept_index(root, session)[name][0] == stamp
    files[name] = ["another stamp", [], []]  # the entry does not hold
    keep_index(root, session, files)
    assert manifests_of(root, session) == before
    assert kept_index(root, session)[name][0] == stamp


def test_an_unusable_index_is_passed_over(tmp_path: Path, run_asz: Any) -> None:
    root, session = landed(tmp_path, run_asz)
    before = manifests_of(root, session)
    index = root / session / MANIFESTS_FILE
    whole = index.read_bytes()
    files = kept_index(root, session)
    name = sorted(files)[0]
    files[name][1][0][1]["size"] = "many"
    keep_index(root, session, files)
    broken_row = index.read_bytes()
    head, body = whole.split(b"\n", 1)
    flipped = head + b"\n" + body.replace(b'"prompt', b'"prumpt', 1)
    assert flipped != whole
    header = orjson.loads(head)
    for damaged in (
        b"{not json",
        b"[]",
        whole[:-9],
        flipped,
        orjson.dumps({**header, "schema": 99}) + b"\n" + body,
        orjson.dumps({**header, "session": SESSION}) + b"\n" + body,
        broken_row,
    ):
        index.write_bytes(damaged)
        assert manifests_of(root, session) == before


def test_a_file_that_does_not_read_is_said_each_time_and_never_indexed(
    tmp_path: Path, run_asz: Any
) -> None:
    root, session = landed(tmp_path, run_asz)
    index = root / session / MANIFESTS_FILE
    index.unlink()
    damaged = root / open_store(root).session(session).landed(BODY_KIND)[0].path
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    for _ in range(2):
        _manifests, problems = manifests_of(root, session)
        assert len(problems) == 1 and damaged.name in problems[0]
    assert not index.exists() or damaged.name not in kept_index(root, session)


class UnwritableBackend(LocalBackend):
    """A root on a read-only mount: every write of derived state fails as it would there."""

    def replace_derived(self, path: str, data: bytes) -> None:
        raise PermissionError(errno.EROFS, "read-only file system", path)


def test_a_root_that_cannot_be_written_is_read_all_the_same(tmp_path: Path, run_asz: Any) -> None:
    root, session, before, index = landed_without_index(tmp_path, run_asz)
    unwritable = open_store(UnwritableBackend(root)).session(session)
    assert plain(unwritable) == before
    assert not unwritable.problems and not index.exists()


def test_the_web_server_keeps_the_index_it_makes_in_memory_never_in_the_root(
    tmp_path: Path, run_asz: Any
) -> None:
    root, session, before, index = landed_without_index(tmp_path, run_asz)
    backend = counting(ReadOnlyBackend)(root)
    store = Store(backend)
    assert plain(store.session(session)) == before
    assert not index.exists()
    reads = backend.body_reads
    again = store.session(session)
    assert plain(again) == before and backend.body_reads == reads
    assert not again.problems and not index.exists()
    blank_body_files(root, session)
    # An index the collector writes later is newer than the one kept, and is the one read.
    index.write_bytes(b"{not json")
    later = time.time_ns() + 10**9  # file times tick coarser than the clock
    os.utime(index, ns=(later, later))
    newer = store.session(session)
    newer.manifests()
    assert newer.problems, "the unusable index on disk was read, and the files behind it"


@pytest.mark.slow
@given(
    st.recursive(
        st.none() | st.integers(-(2**63), 2**63 - 1) | st.text(),
        lambda inner: st.lists(inner) | st.dictionaries(st.text(), inner),
    )
)
def test_any_json_decodes_to_an_index_or_to_none(value: object) -> None:
    files = decode_index(value)
    for entry in files.values():
        assert isinstance(entry.stamp, str)
        assert all(isinstance(meta, dict) for _row, meta in entry.records)


def test_responses_naming_pieces_landed_in_other_files_are_rebuilt_alone(tmp_path: Path) -> None:
    root = tmp_path / "root"
    Root(root).ensure()
    long = {name: name * 3000 for name in "abc"}
    bodies = {
        "1.request": {"messages": [{"role": "user", "content": long["a"]}]},
        "req_1.response": {"id": "msg_1", "content": [{"type": "text", "text": long["a"]}]},
        "2.request": {"messages": [{"role": "user", "content": [long["b"], long["c"]]}]},
        "req_2.response": {"id": "msg_2", "content": [long["c"], long["a"], long["b"]]},
    }
    incoming = [
        IncomingBody(
            record_id=record_id,
            role=record_id.rsplit(".", 1)[1],
            src=f"{record_id}.json",
            body=orjson.dumps(body),
            keys=BodyKeys(session=SESSION),
            mtime_ns=n,
        )
        for n, (record_id, body) in enumerate(bodies.items())
    ]
    outcome = BodyLander(open_store(root)).land(SESSION, incoming, max_delta_bytes=1)
    assert not outcome.tally.errors
    session = open_store(root).session(SESSION)
    names = session.landed(BODY_KIND)
    segs = {
        str(record.meta["id"]): [seg[0] for seg in record.meta["segs"]]
        for _name, landed_file in session.files(names)
        for record in landed_file.records
    }
    assert len(names) == len(bodies), "one body per landed file"
    assert segs["req_1.response"].count("ref") == 1 and segs["req_2.response"].count("ref") == 3
    session.manifests()
    indexed = {
        meta["id"]: meta.get("refs", [])
        for _stamp, records, _problems in kept_index(root, SESSION).values()
        for _row, meta in records
    }
    assert [len(indexed[f"req_{n}.response"]) for n in (1, 2)] == [1, 3]
    assert indexed["2.request"] == [], "only a response's pieces are indexed"
    # The later response first: its pieces are in files before it, one of them before the
    # earlier response, which then finds its piece already read.
    for record_id in ("req_2.response", "req_1.response", "2.request"):
        assert session.body(record_id) == orjson.dumps(bodies[record_id])
    assert not session.problems
