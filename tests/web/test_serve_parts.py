"""The web view's parts that need no server: a request taken apart, the difference of two
requests, the side-by-side rows, the Host rule, pages and the list's choices."""

from __future__ import annotations

import anyio
import orjson
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st
from structlog.testing import capture_logs

from asz.web.access import AccessError, access_for, split_host
from asz.web.compare import difference
from asz.web.contained import Contained
from asz.web.diff import CONTEXT, side_by_side
from asz.web.formats import visible
from asz.web.pagination import BadQuery, page_of
from asz.web.request import request_parts, segments

BILLING = "x-anthropic-billing-header: cc_version=2.1.260.abc; cch=1; cc_prompt_id=p;"


def request(**changes: object) -> dict:
    body: dict = {
        "model": "claude-opus-4-6",
        "max_tokens": 32000,
        "tools": [
            {"name": "Read", "description": "reads", "input_schema": {}},
            {"name": "mcp__x__y", "description": "later", "defer_loading": True},
        ],
        "system": [
            {"type": "text", "text": BILLING},
            {
                "type": "text",
                "text": "You are Claude Code.\nBe careful.\n" * 20,
                "cache_control": {"type": "ephemeral", "ttl": "1h"},
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "<system-reminder>\nremember\n</system-reminder>"},
                    {"type": "text", "text": "fix it", "cache_control": {"type": "ephemeral"}},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "toolu_1", "name": "Read", "input": {"path": "a"}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "text of a"},
                ],
            },
        ],
    }
    body.update(changes)
    return body


def test_a_request_is_taken_apart_in_the_order_the_provider_reads_it() -> None:
    parts = request_parts(request(), 5000)
    assert [tool.name for tool in parts.tools] == ["Read", "mcp__x__y"]
    assert [tool.deferred for tool in parts.tools] == [False, True]
    assert parts.system[1].marker is not None and parts.system[1].marker.ttl == "1h"
    first = parts.messages[0].blocks
    assert [seg.reminder for seg in first[0].segments] == [True]
    assert first[1].marker is not None and first[1].marker.ttl == "5m"
    assert parts.markers == 2
    assert parts.messages[1].blocks[0].label == "Read (toolu_1)"
    assert parts.messages[2].blocks[0].inner[0].segments[0].text == "text of a"
    assert [name for name, _ in parts.fields] == ["model", "max_tokens"]
    assert sum(weight.size for weight in parts.weights) == 5000


def test_reminders_are_set_apart_from_the_text_around_them() -> None:
    cut = segments("before <system-reminder>a</system-reminder> after <system-reminder>b")
    assert [(s.text, s.reminder) for s in cut] == [
        ("before ", False),
        ("<system-reminder>a</system-reminder>", True),
        (" after ", False),
        ("<system-reminder>b", True),
    ]


def test_the_difference_names_each_changed_part_and_nothing_that_is_no_change() -> None:
    old = request()
    same = request(
        system=[{"type": "text", "text": BILLING.replace("cch=1", "cch=2")}, old["system"][1]],
    )
    same["messages"] = [*old["messages"], {"role": "assistant", "content": "done"}]
    found = difference(old, same)
    assert found.changes == [] and found.notes == ["the history grew by 1 messages"]

    tools = [*old["tools"], {"name": "mcp__linear__create_issue", "input_schema": {}}]
    tools[1] = {**tools[1], "defer_loading": False}
    changed = request(model="claude-opus-5-5", tools=tools)
    changed["system"] = [old["system"][0], {"type": "text", "text": "Be bold.\n" * 20}]
    changed["messages"] = [old["messages"][0], {"role": "assistant", "content": "other"}]
    found = difference(old, changed)
    named = {(c.part, c.name, c.what) for c in found.changes}
    assert named == {
        ("field", "model", "changed"),
        ("tool", "mcp__linear__create_issue", "added"),
        ("tool", "mcp__x__y", "loaded (was deferred)"),
        ("system block", "system[1]", "changed"),
        ("message", "messages[1] (assistant)", "rewritten"),
    }
    added = next(c for c in found.changes if c.name == "mcp__linear__create_issue")
    assert all(row.kind == "added" and row.left == "" for row in added.rows)
    assert found.notes == ["1 messages dropped"]
    restarted = difference(old, request(messages=[{"role": "user", "content": "summary"}]))
    assert restarted.notes == ["a new list of 1 messages (was 3)"]


def test_side_by_side_folds_long_runs_of_equal_lines() -> None:
    old = "\n".join(f"line {n}" for n in range(100))
    new = old.replace("line 50", "line fifty")
    rows = side_by_side(old, new)
    kinds = [row.kind for row in rows]
    assert kinds == ["folded", *["same"] * CONTEXT, "changed", *["same"] * CONTEXT, "folded"]
    changed = rows[CONTEXT + 1]
    assert (changed.left, changed.right, changed.left_number) == ("line 50", "line fifty", 51)


@given(
    st.lists(st.text(alphabet="abc", max_size=3), max_size=12),
    st.lists(st.text(alphabet="abc", max_size=3), max_size=12),
)
def test_side_by_side_shows_every_changed_line_once(old: list[str], new: list[str]) -> None:
    rows = side_by_side("\n".join(old), "\n".join(new))
    left = [r.left for r in rows if r.left_number is not None and r.kind != "same"]
    right = [r.right for r in rows if r.right_number is not None and r.kind != "same"]
    numbered = [r.left_number for r in rows if r.left_number is not None]
    assert numbered == sorted(set(numbered))
    assert len(left) + sum(r.kind == "same" for r in rows) <= len("\n".join(old).splitlines())
    assert len(right) + sum(r.kind == "same" for r in rows) <= len("\n".join(new).splitlines())


@pytest.mark.parametrize(
    ("header", "allowed"),
    [
        ("127.0.0.1:9478", True),
        ("localhost:9478", True),
        ("[::1]:9478", True),
        ("192.168.1.5:9478", True),
        ("example.org:9478", False),
        ("localhost.example.org:9478", False),
        ("localhost", False),
        ("localhost:80", False),
        ("localhost:9478:1", False),
        ("[::1:9478", False),
        ("", False),
    ],
)
def test_host_names_this_server_or_an_ip_address_with_its_port(header: str, allowed: bool) -> None:
    assert access_for("127.0.0.1", 9478, None).host_allowed(header) is allowed


def test_a_name_given_is_answered_and_a_listen_beyond_loopback_needs_a_token() -> None:
    assert access_for("127.0.0.1", 80, None, ("box.lan",)).host_allowed("BOX.lan")
    assert split_host("[::1]:8080") == ("::1", 8080)
    with pytest.raises(AccessError):
        access_for("0.0.0.0", 9478, None)
    assert access_for("0.0.0.0", 9478, "t" * 16).token == "t" * 16


def test_a_page_number_is_one_of_the_pages() -> None:
    assert (page_of(1000, 200, "3").start, page_of(1000, 200, "3").end) == (400, 600)
    assert page_of(0, 200, None).count == 1 and page_of(1000, 200, None).number == 1
    for wrong in ("99", "-1", "0", "9" * 40, "abc", "\u0663", " 2"):
        with pytest.raises(BadQuery, match="is not a page of this list, which has pages 1 to 5"):
            page_of(1000, 200, wrong)


@pytest.mark.parametrize("fails_after_start", [False, True])
def test_a_failing_page_answers_500_and_logs_no_message(fails_after_start: bool) -> None:
    secret = "a prompt the user typed"

    async def failing(scope: dict, receive: object, send: object) -> None:
        if fails_after_start:
            await send({"type": "http.response.start", "status": 200, "headers": []})
        raise ValueError(f"could not read {secret}")

    sent: list[dict] = []

    async def send(message: dict) -> None:
        sent.append(message)

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {"type": "http", "method": "GET", "path": "/sessions/x", "headers": []}
    with capture_logs() as logged:
        app = Contained(failing, structlog.get_logger())  # type: ignore[arg-type]
        anyio.run(app, scope, receive, send)
    assert logged == [
        {"event": "page_failed", "log_level": "error", "path": "/sessions/x", "error": "ValueError"}
    ]
    assert secret not in repr(logged) + repr(sent)
    starts = [m for m in sent if m["type"] == "http.response.start"]
    assert [m["status"] for m in starts] == [200] if fails_after_start else [500]
    if not fails_after_start:
        headers = dict(starts[0]["headers"])
        assert headers[b"content-type"].startswith(b"text/html")
        assert b"default-src 'none'" in headers[b"content-security-policy"]
        page = b"".join(m.get("body", b"") for m in sent)
        assert b"asz could not make this page, see its log" in page


@given(st.text())
def test_every_hiding_character_becomes_a_marker_and_nothing_else_changes(text: str) -> None:
    import re

    shown = visible(text)
    assert re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", shown) is None
    back = re.sub("⟨U\\+([0-9A-F]{4,6})⟩", lambda m: chr(int(m.group(1), 16)), shown)
    assert back == re.sub("⟨U\\+([0-9A-F]{4,6})⟩", lambda m: chr(int(m.group(1), 16)), text)


def test_a_long_request_shows_its_first_and_last_messages_and_counts_them_all() -> None:
    from asz.web.request import FIRST_MESSAGES, MAX_MESSAGES

    messages = request()["messages"] * 60
    parts = request_parts(request(messages=messages), 0)
    shown = [message.index for message in parts.messages]
    assert len(shown) == MAX_MESSAGES and parts.message_count == len(messages)
    assert shown[:FIRST_MESSAGES] == list(range(FIRST_MESSAGES))
    assert shown[-1] == len(messages) - 1 and shown == sorted(shown)
    assert parts.markers == 1 + 60  # the system block's, and one a first message carries
    weighed = sum(w.size for w in parts.weights if w.name.endswith("messages"))
    assert weighed == sum(len(orjson.dumps(message)) for message in messages)
