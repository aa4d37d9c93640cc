"""Request shapes read from landed records (only what a request adds past the front it copies)
equal the shapes of the same requests parsed whole, whatever the spelling."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asz.bodykeys import read_keys
from asz.store._codec import SessionBodies
from asz.store._held import HeldBodies
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
# The billing block changes on every call (cch, cc_prev_req) and with an upgrade (cc_version).
billing = st.builds(
    lambda version, cch: {
        "type": "text",
        "text": f"x-anthropic-billing-header: cc_version=2.1.{version}.a1b; cch={cch};",
    },
    st.integers(1, 2),
    st.text(alphabet="0123456789abcdef", min_size=5, max_size=5),
)
requests_fronts = st.fixed_dictionaries(
    {
        "model": st.sampled_from(["claude-a", "claude-b"]),
        "system": st.tuples(st.lists(billing, max_size=1), st.lists(blocks(), max_size=2)).map(
            lambda parts: parts[0] + parts[1]
        ),
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


LONG = "the first message is long enough for the codec to copy it: " + "x" * 5000


class Landed:
    """Requests cut by the codec as the collector cuts them, held as a reader holds them."""

    def __init__(self) -> None:
        self.codec = SessionBodies()
        self.parts = HeldBodies(rebuild_checked=False)
        self.reader = ShapeReader(self.parts)

    def shape(self, record_id: str, body: bytes) -> object:
        keys = read_keys("request", record_id, body)
        self.parts.add(self.codec.take(record_id, "request", record_id + ".json", body, keys))
        return self.reader.shape(record_id)


@pytest.mark.slow
@settings(max_examples=200, deadline=None)
@given(
    front=requests_fronts,
    first=st.lists(messages, min_size=1, max_size=3),
    steps=steps,
    style=st.integers(0, 2),
)
def test_shapes_read_from_records_equal_whole_ones(front, first, steps, style) -> None:
    landed = Landed()
    history = [{"role": "user", "content": LONG}, *first]
    chain = [{**front, "messages": list(history)}]
    for kind, value in steps:
        if kind == "grow":
            history = history + value
        elif kind == "rewrite":
            history = (
                [history[0], value, *history[2:]]
                if len(history) < 3
                else [
                    *history[:-2],
                    value,
                    history[-1],
                ]
            )
        elif kind == "compact":
            history = [{"role": "user", "content": LONG + "compacted"}, *value]
        else:
            front = value
        chain.append({**front, "messages": list(history)})
    for n, request in enumerate(chain):
        body = spell(with_cch(request, n), style)
        fast = landed.shape(f"{n:08d}-0000-4000-8000-000000000000.request", body)
        assert fast == shape_of(orjson.loads(body), landed.reader.intern)


def with_cch(request: dict, n: int) -> dict:
    """The request with a billing block of its own call, as each call's is."""
    system = [
        {**block, "text": block["text"].replace("cch=", f"cch={n:05d}", 1)}
        if block["text"].startswith("x-anthropic-billing-header:")
        else block
        for block in request["system"]
    ]
    return {**request, "system": system}


def test_a_grown_request_is_read_only_past_what_it_repeats() -> None:
    landed = Landed()
    spans: list[tuple[str, int, int]] = []
    real = landed.parts.span
    landed.parts.span = lambda r, a, b: spans.append((r, a, b)) or real(r, a, b)  # type: ignore[method-assign]
    said = [{"role": "user", "content": f"message {n} " + "x" * 3000} for n in range(6)]
    first = orjson.dumps({"model": "m", "messages": said[:3], "tools": [{"name": "Read"}]})
    second = orjson.dumps({"model": "m", "messages": said, "tools": [{"name": "Read"}]})
    landed.shape("a", first)
    spans.clear()
    shape = landed.shape("b", second)
    assert shape == shape_of(orjson.loads(second), landed.reader.intern)
    mark = first.index(b'{"role":"user","content":"message 2')
    assert spans and all(start >= mark for _, start, _ in spans)
    assert landed.parts.copy_of("b") is not None


def test_what_is_not_a_request_object_has_no_shape() -> None:
    landed = Landed()
    assert landed.shape("a", b"[1, 2]") is None
    assert landed.shape("b", b'{"messages": [') is None
    base = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": LONG}] * 3})
    assert landed.shape("c", base) is not None


def test_a_request_without_a_messages_array_is_read_whole() -> None:
    landed = Landed()
    for n, body in enumerate([b'{"model":"m"}', b'{"model":"m","messages":{"a":1}}']):
        shape = landed.shape(str(n), body)
        assert shape == shape_of(orjson.loads(body), landed.reader.intern)
        assert shape is not None and len(shape.messages) == 0
