"""The ledger of seen body files: exact round trips, refusal of anything else, rebuilt when lost."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from asz.bodykeys import BodyKeys, read_keys
from asz.store.bodies import BodyStore, IncomingBody
from asz.store.ledger import (
    UNKNOWN_MTIME,
    Ledger,
    LedgerEntry,
    State,
    decode_ledger,
    ledger_path,
    load_ledger,
    rebuild_ledger,
)
from asz.store.root import Root

A = "11111111-2222-4333-8444-555555555555"
B = "66666666-7777-4888-8999-aaaaaaaaaaaa"


def request(session: str, prev: str | None, text: str) -> bytes:
    billing = "x-anthropic-billing-header: cc_version=2.1.260; cch=00000;"
    if prev:
        billing += f" cc_prev_req={prev};"
    user_id = orjson.dumps({"device_id": "d", "session_id": session}).decode()
    return orjson.dumps(
        {
            "model": "claude-test",
            "messages": [{"role": "user", "content": text}],
            "system": [{"type": "text", "text": billing}],
            "metadata": {"user_id": user_id},
        }
    )


def incoming(name: str, body: bytes) -> IncomingBody:
    stem, role = name.rsplit(".", 2)[0], name.rsplit(".", 2)[1]
    return IncomingBody(name[:-5], role, name, body, read_keys(role, stem, body), 0)


def land(root: Root, session: str, bodies: dict[str, bytes]) -> None:
    items = [incoming(name, body) for name, body in bodies.items()]
    outcome = BodyStore(root, "none").land(session, items, 2 * 1024 * 1024)
    assert sorted(outcome.landed) == sorted(item.record_id for item in items)


keys_strategy = st.builds(
    BodyKeys,
    model=st.none() | st.text(min_size=1, max_size=20),
    session=st.none() | st.text(min_size=1, max_size=40),
    prompt=st.none() | st.text(min_size=1, max_size=40),
    prev_request=st.none() | st.text(min_size=1, max_size=40),
    message_id=st.none() | st.text(min_size=1, max_size=40),
    request_id=st.none() | st.text(min_size=1, max_size=40),
)
entry_strategy = st.builds(
    LedgerEntry,
    name=st.from_regex(r"[A-Za-z0-9_-]{1,40}\.(request|response)\.json", fullmatch=True),
    size=st.integers(0, 2**40),
    mtime_ns=st.integers(-1, 2**63 - 1),
    sha256=st.text("0123456789abcdef", min_size=0, max_size=64),
    state=st.sampled_from(list(State)),
    session=st.text(max_size=40),
    keys=keys_strategy,
)


@given(st.lists(entry_strategy, max_size=20, unique_by=lambda entry: entry.name))
def test_a_ledger_reads_back_exactly_what_was_written(entries: list[LedgerEntry]) -> None:
    ledger = Ledger()
    for entry in entries:
        ledger.put(entry)
    again = decode_ledger(ledger.encode())
    assert sorted(again, key=lambda e: e.name) == sorted(entries, key=lambda e: e.name)
    assert not again.dirty


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"not json",
        b"[]",
        b'{"format":"asz.provider-ledger/0","entries":[]}',
        b'{"format":"asz.provider-ledger/1"}',
        b'{"format":"asz.provider-ledger/1","entries":[["a.request.json",1,2,"","landed",""]]}',
        b'{"format":"asz.provider-ledger/1","entries":["a.request.json"]}',
        b'{"format":"asz.provider-ledger/1","entries":[[7,1,2,"","landed","",{}]]}',
    ],
)
def test_anything_but_a_ledger_this_version_wrote_is_refused(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_ledger(data)


@pytest.mark.parametrize(
    "row",
    [
        b'["a.request.json","1",2,"","waiting","",{}]',
        b'["a.request.json",1,2,"","eaten","",{}]',
        b'["a.request.json",1,2,"","waiting","",{"colour":"red"}]',
        b'["a.request.json",1,2,"","waiting",[],{}]',
        b'["a.request.json",1,2,"","waiting","",{"session":["x"],"prev_request":{}}]',
    ],
)
def test_a_row_that_does_not_hold_is_forgotten_so_its_file_is_read_again(row: bytes) -> None:
    ledger = decode_ledger(b'{"format":"asz.provider-ledger/1","entries":[' + row + b"]}")
    assert len(ledger) == 1
    assert [request[1:3] for request in ledger.requests()] in ([], [(None, None)])
    assert ledger.get("a.request.json") is None
    assert len(ledger) == 0 and ledger.dirty
    assert b"a.request.json" not in ledger.encode()


def test_putting_an_equal_entry_changes_nothing_and_an_unchanged_ledger_is_not_written(
    tmp_path: Path,
) -> None:
    root = Root(tmp_path / "root")
    root.ensure()
    entry = LedgerEntry("a.request.json", 10, 20, "ab" * 32, State.WAITING, "", BodyKeys(model="m"))
    ledger = Ledger()
    ledger.put(entry)
    assert ledger.save(root)
    path = ledger_path(root)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    os.utime(path, ns=(1, 1))
    again = load_ledger(root)
    again.put(LedgerEntry("a.request.json", 10, 20, "ab" * 32, State.WAITING, "", BodyKeys("m")))
    assert not again.save(root)
    assert path.stat().st_mtime_ns == 1
    again.put(LedgerEntry("a.request.json", 10, 21, "ab" * 32, State.WAITING))
    assert again.save(root)
    assert load_ledger(root).get("a.request.json").mtime_ns == 21
    again.drop("a.request.json")
    again.drop("never.request.json")
    assert again.save(root)
    assert len(load_ledger(root)) == 0


def test_a_lost_ledger_is_rebuilt_from_the_landed_manifests(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    first, second = request(A, None, "one"), request(A, "req_a1", "two")
    answer = orjson.dumps({"id": "msg_a1", "model": "claude-test", "content": []})
    land(root, A, {"r1.request.json": first, "req_a1.response.json": answer})
    land(root, A, {"r2.request.json": second})
    land(root, B, {"b1.request.json": request(B, None, "b")})
    (root.path / "_state" / "stray").mkdir(parents=True)
    ledger = load_ledger(root)
    assert ledger.rebuilt and ledger.dirty and ledger.problems == []
    assert sorted(entry.name for entry in ledger) == [
        "b1.request.json",
        "r1.request.json",
        "r2.request.json",
        "req_a1.response.json",
    ]
    r2 = ledger.get("r2.request.json")
    assert r2.state is State.LANDED and r2.session == A and r2.mtime_ns == UNKNOWN_MTIME
    assert r2.sha256 == hashlib.sha256(second).hexdigest() and r2.size == len(second)
    assert r2.keys == BodyKeys(model="claude-test", session=A, prev_request="req_a1")
    response = ledger.get("req_a1.response.json")
    assert response.keys == BodyKeys(model="claude-test", message_id="msg_a1", request_id="req_a1")
    assert ledger.get("b1.request.json").session == B


def test_a_corrupt_ledger_is_rebuilt(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    land(root, A, {"r1.request.json": request(A, None, "one")})
    ledger_path(root).parent.mkdir(parents=True, exist_ok=True)
    ledger_path(root).write_bytes(b'{"format":"asz.provider-ledger/1","entries":[[1,2')
    ledger = load_ledger(root)
    assert ledger.rebuilt and ledger.problems == []
    assert [entry.name for entry in ledger] == ["r1.request.json"]
    assert ledger.save(root)
    assert not load_ledger(root).rebuilt


def test_a_damaged_landed_file_is_named_and_the_other_sessions_still_count(
    tmp_path: Path,
) -> None:
    root = Root(tmp_path / "root")
    land(root, A, {"r1.request.json": request(A, None, "one")})
    land(root, B, {"b1.request.json": request(B, None, "b")})
    (damaged,) = root.landed(root.bodies_dir(A))
    damaged.path.chmod(0o600)
    damaged.path.write_bytes(damaged.path.read_bytes()[:100])
    ledger = rebuild_ledger(root)
    assert [entry.name for entry in ledger] == ["b1.request.json"]
    assert len(ledger.problems) == 1 and damaged.path.name in ledger.problems[0]


def test_an_entry_answers_only_for_the_exact_stat_it_was_judged_at(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    ledger = Ledger()
    ledger.put(LedgerEntry("a.request.json", 10, 20, "ab" * 32, State.LANDED, A))
    ledger.put(
        LedgerEntry("b.request.json", 5, 6, "cd" * 32, State.WAITING, "", BodyKeys(session=B))
    )
    ledger.save(root)
    for fresh in (ledger, load_ledger(root)):
        assert fresh.judged_at("a.request.json", 10, 20) == ("landed", A)
        assert fresh.judged_at("a.request.json", 10, 21) is None
        assert fresh.judged_at("a.request.json", 11, 20) is None
        assert fresh.judged_at("c.request.json", 10, 20) is None
        assert sorted(fresh.requests()) == [
            ("a.request.json", None, None, 20),
            ("b.request.json", B, None, 6),
        ]
