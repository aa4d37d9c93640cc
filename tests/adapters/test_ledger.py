"""The ledger of seen body files: exact round trips, refusal of anything else, rebuilt when lost."""

from __future__ import annotations

import hashlib
import sqlite3
import stat
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asz.adapters.provider_ledger import (
    UNKNOWN_MTIME,
    Ledger,
    LedgerEntry,
    State,
    ledger_path,
    open_ledger,
)
from asz.adapters.provider_ledger import load_ledger as load_store_ledger
from asz.adapters.provider_ledger import rebuild_ledger as rebuild_store_ledger
from asz.bodykeys import KEY_NAMES, BodyKeys, read_keys
from asz.store import BODY_KIND, open_store
from asz.store._bodies import BodyLander, IncomingBody
from asz.store._root import Root

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


def load_ledger(root: Root) -> Ledger:
    return load_store_ledger(open_store(root.path), root)


def rebuild_ledger(root: Root) -> Ledger:
    return rebuild_store_ledger(open_store(root.path), root)


def land(root: Root, session: str, bodies: dict[str, bytes]) -> None:
    items = [incoming(name, body) for name, body in bodies.items()]
    lander = BodyLander(open_store(root.path, compression="none"))
    outcome = lander.land(session, items, 2 * 1024 * 1024)
    assert sorted(outcome.landed) == sorted(item.record_id for item in items)


def entry(name: str, state: State = State.WAITING, **changes) -> LedgerEntry:
    fields = {"size": 10, "mtime_ns": 20, "sha256": "ab" * 32, "session": "", "keys": BodyKeys()}
    fields.update(changes)
    return LedgerEntry(name, state=state, **fields)


def test_the_ledger_stores_every_key_a_body_can_carry() -> None:
    assert tuple(BodyKeys.__dataclass_fields__) == KEY_NAMES


text = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30)
keys_strategy = st.builds(
    BodyKeys, **{key: st.none() | text for key in BodyKeys.__dataclass_fields__}
)
entry_strategy = st.builds(
    LedgerEntry,
    name=st.from_regex(r"[A-Za-z0-9_-]{1,40}\.(request|response)\.json", fullmatch=True),
    size=st.integers(0, 2**40),
    mtime_ns=st.integers(-1, 2**63 - 1),
    sha256=st.text("0123456789abcdef", max_size=64),
    state=st.sampled_from(list(State)),
    session=st.text(st.characters(blacklist_categories=("Cs",)), max_size=40),
    keys=keys_strategy,
)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(st.lists(entry_strategy, max_size=12, unique_by=lambda entry: entry.name))
def test_a_ledger_reads_back_exactly_what_was_written(entries: list[LedgerEntry]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Root(Path(tmp))
        with load_ledger(root) as ledger:
            for item in entries:
                ledger.put(item)
            assert ledger.save() == bool(entries)
        with load_ledger(root) as again:
            assert not again.rebuilt and not again.dirty
            assert list(again) == sorted(entries, key=lambda item: item.name)
            for item in entries:
                assert again.judged_at(item.name, item.size, item.mtime_ns) == (
                    item.state.value,
                    item.session,
                )
            requests = [
                (item.keys.session, item.keys.prev_request, item.mtime_ns)
                for item in sorted(entries, key=lambda item: item.name)
                if item.role == "request"
            ]
            assert list(again.requests()) == requests


@pytest.mark.parametrize(
    "damage",
    [
        b"",
        b"not a database at all",
        b"SQLite format 3\x00" + b"\x00" * 200,
    ],
)
def test_a_ledger_that_does_not_open_is_rebuilt(tmp_path: Path, damage: bytes) -> None:
    root = Root(tmp_path / "root")
    land(root, A, {"r1.request.json": request(A, None, "one")})
    ledger_path(root).parent.mkdir(parents=True, exist_ok=True)
    ledger_path(root).write_bytes(damage)
    with load_ledger(root) as ledger:
        assert ledger.rebuilt and ledger.problems == []
        assert [item.name for item in ledger] == ["r1.request.json"]
    with load_ledger(root) as again:
        assert not again.rebuilt and len(again) == 1


def test_a_database_of_another_format_is_not_taken_for_a_ledger(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    ledger_path(root).parent.mkdir(parents=True)
    db = sqlite3.connect(ledger_path(root))
    with db:
        db.execute("CREATE TABLE ledger_format (format TEXT)")
        db.execute("INSERT INTO ledger_format VALUES ('asz.provider-ledger/0')")
    db.close()
    with pytest.raises(ValueError):
        open_ledger(ledger_path(root))
    with load_ledger(root) as ledger:
        assert ledger.rebuilt and len(ledger) == 0


@pytest.mark.parametrize(
    "row",
    [
        ("a.request.json", "one", 2, "", "waiting", "", None, None, None, None, None, None),
        ("a.request.json", 1, 2, "", "eaten", "", None, None, None, None, None, None),
        ("a.request.json", 1, 2, "", "waiting", b"A", None, None, None, None, None, None),
        ("a.request.json", 1, 2, "", "waiting", "", None, None, None, b"x", None, None),
    ],
)
def test_a_row_that_does_not_hold_is_forgotten_so_its_file_is_read_again(
    tmp_path: Path, row: tuple
) -> None:
    root = Root(tmp_path / "root")
    load_ledger(root).close()
    db = sqlite3.connect(ledger_path(root))
    with db:
        db.execute("INSERT INTO entries VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", row)
    db.close()
    with load_ledger(root) as ledger:
        assert len(ledger) == 1
        assert ledger.get("a.request.json") is None
        assert len(ledger) == 0 and ledger.dirty
        assert ledger.save()
    with load_ledger(root) as again:
        assert len(again) == 0


def test_only_changes_are_written_and_an_unchanged_ledger_is_not(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    with load_ledger(root) as ledger:
        ledger.put(entry("a.request.json", keys=BodyKeys(model="m")))
        ledger.put(entry("b.request.json"))
        assert ledger.save()
    path = ledger_path(root)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    with load_ledger(root) as again:
        again.put(entry("a.request.json", keys=BodyKeys("m")))
        assert not again.dirty and not again.save()
        again.put(entry("a.request.json", mtime_ns=21))
        again.drop("b.request.json")
        again.drop("never.request.json")
        assert again.save()
    with load_ledger(root) as third:
        assert [(item.name, item.mtime_ns) for item in third] == [("a.request.json", 21)]


def test_an_entry_answers_only_for_the_exact_stat_it_was_judged_at(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    with load_ledger(root) as ledger:
        ledger.put(entry("a.request.json", State.LANDED, session=A))
        ledger.put(entry("b.request.json", size=5, mtime_ns=6, keys=BodyKeys(session=B)))
        ledger.put(entry("c.response.json", keys=BodyKeys(request_id="req_c")))
        ledger.save()
    with load_ledger(root) as fresh:
        assert fresh.judged_at("a.request.json", 10, 20) == ("landed", A)
        assert fresh.judged_at("a.request.json", 10, 21) is None
        assert fresh.judged_at("a.request.json", 11, 20) is None
        assert fresh.judged_at("d.request.json", 10, 20) is None
        assert list(fresh.requests()) == [(None, None, 20), (B, None, 6)]


def test_a_lost_ledger_is_rebuilt_from_the_landed_manifests(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    first, second = request(A, None, "one"), request(A, "req_a1", "two")
    answer = orjson.dumps({"id": "msg_a1", "model": "claude-test", "content": []})
    land(root, A, {"r1.request.json": first, "req_a1.response.json": answer})
    land(root, A, {"r2.request.json": second})
    land(root, B, {"b1.request.json": request(B, None, "b")})
    with load_ledger(root) as ledger:
        assert ledger.rebuilt and ledger.problems == []
        assert [item.name for item in ledger] == [
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
        assert response.keys == BodyKeys(
            model="claude-test", message_id="msg_a1", request_id="req_a1"
        )
        assert ledger.get("b1.request.json").session == B
    assert sorted(path.name for path in ledger_path(root).parent.iterdir()) == [
        "provider-ledger.sqlite"
    ]


def test_a_damaged_landed_file_is_named_and_the_other_sessions_still_count(
    tmp_path: Path,
) -> None:
    root = Root(tmp_path / "root")
    land(root, A, {"r1.request.json": request(A, None, "one")})
    land(root, B, {"b1.request.json": request(B, None, "b")})
    (damaged,) = open_store(root.path).session(A).landed(BODY_KIND)
    path = root.path / damaged.path
    path.write_bytes(path.read_bytes()[:100])
    with rebuild_ledger(root) as ledger:
        assert [item.name for item in ledger] == ["b1.request.json"]
        assert len(ledger.problems) == 1 and damaged.name in ledger.problems[0]


def test_facts_marks_are_kept_and_only_changed_ones_written(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    with load_ledger(root) as ledger:
        assert ledger.facts_marks() == {}
        ledger.set_facts_mark(A, "1:2:3", 10)
        assert ledger.dirty and ledger.save()
    with load_ledger(root) as again:
        assert again.facts_marks() == {A: ("1:2:3", 10)}
        again.set_facts_mark(A, "1:2:3", 10)
        assert not again.dirty
        again.set_facts_mark(B, "", 11)
        assert again.save()
    with load_ledger(root) as third:
        assert third.facts_marks() == {A: ("1:2:3", 10), B: ("", 11)}


def test_changes_not_saved_are_forgotten(tmp_path: Path) -> None:
    root = Root(tmp_path / "root")
    with load_ledger(root) as ledger:
        ledger.put(entry("kept.request.json"))
        ledger.save()
    with load_ledger(root) as ledger:
        ledger.put(entry("lost.request.json"))
        ledger.drop("kept.request.json")
        ledger.set_facts_mark(A, "m", 1)
        assert ledger.get("lost.request.json") == entry("lost.request.json")
        assert ledger.get("kept.request.json") is None
    with load_ledger(root) as again:
        assert [item.name for item in again] == ["kept.request.json"]
        assert again.facts_marks() == {}


def test_the_landed_sessions_are_those_of_landed_entries_only(tmp_path: Path) -> None:
    with load_ledger(Root(tmp_path)) as ledger:
        ledger.put(entry("a.request.json", State.LANDED, session=A))
        ledger.put(entry("b.request.json", State.WAITING, session=B))
        ledger.put(entry("c.request.json", State.CHANGED, session=B))
        assert ledger.landed_sessions() == {A}
        ledger.put(entry("b.request.json", State.LANDED, session=B))
        ledger.drop("a.request.json")
        assert ledger.landed_sessions() == {B}


def test_a_ledger_kept_open_is_used_and_saved_from_another_thread(tmp_path: Path) -> None:
    root = Root(tmp_path)
    ledger = load_ledger(root)
    try:
        with ThreadPoolExecutor(1) as pool:
            pool.submit(ledger.put, entry("a.request.json", State.LANDED, session=A)).result()
            assert pool.submit(ledger.save).result() is True
    finally:
        ledger.close()
    with load_ledger(root) as again:
        assert again.judged_at("a.request.json", 10, 20) == ("landed", A)
