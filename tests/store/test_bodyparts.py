"""A session's bodies read as spans of their landed parts: any span equals the same bytes of
the body, and a walk gives every landed body once, in landing order, holding only the latest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.landing import land_synth

from asz.bodykeys import read_keys
from asz.store import BODY_KIND
from asz.store import _bodyparts as bodyparts
from asz.store._bodyparts import KEPT_REQUESTS
from asz.store._codec import SessionBodies
from asz.store._held import HeldBodies
from asz.synth import SynthOptions

words = st.text(alphabet=st.sampled_from('ab "\\\n{}é'), max_size=40)
turns = st.lists(
    st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant"]), "content": words.map(lambda t: t * 90)}
    ),
    min_size=1,
    max_size=4,
)


@settings(max_examples=60, deadline=None)
@given(first=turns, later=st.lists(turns, min_size=1, max_size=5), cuts=st.data())
def test_any_span_of_a_held_body_is_those_bytes_of_the_body(first, later, cuts) -> None:
    codec, parts = SessionBodies(), HeldBodies(rebuild_checked=False)
    history = list(first)
    bodies = {}
    for n, added in enumerate([[], *later]):
        history = history + added
        body = orjson.dumps({"model": "m", "messages": history, "tools": [{"name": "Read"}]})
        record_id = f"{n:08d}-0000-4000-8000-000000000000.request"
        keys = read_keys("request", record_id, body)
        parts.add(codec.take(record_id, "request", record_id + ".json", body, keys))
        bodies[record_id] = body
    for record_id, body in bodies.items():
        start = cuts.draw(st.integers(0, len(body)))
        end = cuts.draw(st.integers(start, len(body) + 10))
        assert parts.span(record_id, start, end) == body[start:end]
        assert parts.size(record_id) == len(body)
    with pytest.raises(Exception, match="spans"):
        parts.rebuild(next(iter(bodies)))


def landed_order(session: Any) -> list[str]:
    return [
        str(record.meta["id"])
        for _name, landed in session.files(session.landed(BODY_KIND))
        for record in landed.records
    ]


@pytest.fixture
def long_session(tmp_path: Path, run_asz: Any) -> Any:
    options = SynthOptions(seed=3, sessions=1, turns=60, tool_calls=2, subagents=1)
    store, expected = land_synth(tmp_path, run_asz, options)
    return store.session(expected["sessions"][0]["id"])


def test_a_walk_gives_every_landed_body_once_in_landing_order(long_session: Any) -> None:
    parts = long_session.body_parts()
    given = []
    for record_id, role in parts.walk():
        assert parts.holds(record_id)
        assert role == long_session.manifest(record_id).role
        given.append(record_id)
    assert given == landed_order(long_session)
    requests = [r for r in given if r.endswith(".request")]
    assert len(requests) > 2 * KEPT_REQUESTS
    # What no later record copies is let go: the walk does not hold the whole session.
    assert not all(parts.holds(record_id) for record_id in requests[:KEPT_REQUESTS])
    assert long_session.problems == []


def test_a_record_copying_a_body_let_go_makes_the_walk_hold_everything(
    long_session: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Keeping only the latest request and no tips, the walk lets go of bodies later requests
    # copy (a subagent's requests come between two of the main chain's): it must start again
    # and still give every body once.
    monkeypatch.setattr(HeldBodies, "tips", lambda self: [])
    monkeypatch.setattr(bodyparts, "KEPT_REQUESTS", 1)
    parts = long_session.body_parts()
    given = [record_id for record_id, _role in parts.walk()]
    assert sorted(given) == sorted(landed_order(long_session))
    assert len(given) == len(set(given))
    assert all(parts.holds(record_id) for record_id in given)
    assert long_session.problems == []
