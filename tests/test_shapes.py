"""Request shapes read incrementally (only what a request adds to the one before) equal the
shapes of the same requests parsed whole, whatever the spelling."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asz.view import shapes
from asz.view.shapes import ShapeReader, shape_of

texts = st.text(alphabet=st.sampled_from('ab "\\\n\té\u2028{}[],:'), max_size=12)
markers = st.one_of(
    st.none(),
    st.just({"type": "ephemeral"}),
    st.just({"type": "ephemeral", "ttl": "1h"}),
)


@st.composite
def blocks(draw: st.DrawFn) -> dict:
    block: dict = {"type": "text", "text": draw(texts)}
    marker = draw(markers)
    if marker is not None:
        block["cache_control"] = marker
    return block


messages = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["user", "assistant"]),
        "content": st.one_of(texts, st.lists(blocks(), min_size=1, max_size=3)),
    }
)
requests_fronts = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["claude-a", "claude-b"]),
        "system": st.lists(blocks(), max_size=2),
        "tools": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(["Read", "Bash"]), "d": texts}),
            max_size=2,
        ),
    }
)
# What happens between two requests of a chain: more messages, an earlier one rewritten, a
# new list (a compaction), or other settings.
steps = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.lists(messages, min_size=1, max_size=3)),
        st.tuples(st.just("rewrite"), messages),
        st.tuples(st.just("compact"), st.lists(messages, min_size=1, max_size=2)),
        st.tuples(st.just("front"), requests_fronts),
    ),
    min_size=1,
    max_size=6,
)


def spell(request: dict, style: int) -> bytes:
    if style == 0:
        return orjson.dumps(request)
    if style == 1:
        return json.dumps(request, indent=1, ensure_ascii=False).encode()
    # messages last, other separators
    moved = {k: v for k, v in request.items() if k != "messages"} | {
        "messages": request["messages"]
    }
    return json.dumps(moved, separators=(" ,", " : ")).encode()


@settings(max_examples=200, deadline=None)
@given(
    front=requests_fronts,
    first=st.lists(messages, min_size=1, max_size=3),
    steps=steps,
    style=st.integers(0, 2),
)
def test_incremental_shapes_equal_whole_ones(front, first, steps, style) -> None:
    reader = ShapeReader()
    reader._whole = lambda body: pytest.fail("a request object with messages was read whole")
    history = list(first)
    chain = [{**front, "messages": list(history)}]
    for kind, value in steps:
        if kind == "grow":
            history = history + value
        elif kind == "rewrite":
            history = (
                [value, *history[1:]] if len(history) < 2 else [*history[:-2], value, history[-1]]
            )
        elif kind == "compact":
            history = list(value)
        else:
            front = value
        chain.append({**front, "messages": list(history)})
    previous = None
    for n, request in enumerate(chain):
        body = spell(request, style)
        fast = reader.shape(f"r{n}", body, previous)
        assert fast == shape_of(orjson.loads(body), reader.intern)
        previous = f"r{n}"


def test_a_grown_request_is_scanned_only_past_what_it_repeats(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    rest: list[int] = []
    real = shapes.scan_rest

    def scan_rest(body: bytes, base: object, mark: int, *args: object, **kwargs: object) -> object:
        rest.append(mark)
        return real(body, base, mark, *args, **kwargs)

    monkeypatch.setattr(shapes, "scan_rest", scan_rest)
    reader = ShapeReader()
    said = [{"role": "user", "content": f"message {n} " + "x" * 2000} for n in range(6)]
    first = orjson.dumps({"model": "m", "messages": said[:3], "tools": [{"name": "Read"}]})
    second = orjson.dumps({"model": "m", "messages": said, "tools": [{"name": "Read"}]})
    reader.shape("a", first, None)
    shape = reader.shape("b", second, "a")
    assert shape == shape_of(orjson.loads(second), reader.intern)
    assert rest == [first.index(b'{"role":"user","content":"message 2')]


def test_what_is_not_a_request_object_has_no_shape() -> None:
    reader = ShapeReader()
    assert reader.shape("a", b"[1, 2]", None) is None
    assert reader.shape("b", b'{"messages": [', None) is None
    base = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}] * 3})
    assert reader.shape("c", base, None) is not None
    assert reader.shape("d", base[:-10], "c") is None  # the front repeats, the rest is torn


def test_a_request_without_a_messages_array_is_read_whole() -> None:
    reader = ShapeReader()
    for n, body in enumerate([b'{"model":"m"}', b'{"model":"m","messages":{"a":1}}']):
        shape = reader.shape(str(n), body, None)
        assert shape == shape_of(orjson.loads(body), reader.intern)
        assert shape is not None and len(shape.messages) == 0
