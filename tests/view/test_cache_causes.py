"""What broke the cache, per the contract of what breaks it: an upgrade, effort on the models
that keep their cache or not, fast mode, deferred and denied tools, an unreadable request, the
provider's own verdict; and every cause ``asz synth`` injects, found by the real ``asz cache``
with the exact shortfall its ground truth records."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.handmade import TOOLS, HandMade, history
from support.landing import land_synth
from support.synth_causes import INJECTED

from asz.bodykeys import read_keys
from asz.store import MAIN_STREAM
from asz.synth import SynthOptions
from asz.view.cache import cache_report
from asz.view.causes import PRECEDENCE, Between, compare, keeps_cache_on_effort
from asz.view.shapes import Interner, Shape, shape_of

STILL = Between(gap_seconds=10.0, compacted=False)
MCP = {"name": "mcp__github__list_issues", "description": "List issues.", "input_schema": {}}
DEFERRED = {**MCP, "defer_loading": True}


def billing(version: str = "2.1.260.a1b", cch: str = "00001", prev: str = "req_1") -> str:
    return (
        f"x-anthropic-billing-header: cc_version={version}; cc_entrypoint=cli; cch={cch}; "
        f"cc_prev_req={prev}; cc_prompt_id=p1;"
    )


def request(turns: int = 1, **fields: Any) -> dict[str, Any]:
    """A main-chain request after ``turns`` tool calls; ``fields`` replace its members, and
    ``version`` the version of its billing block."""
    version = fields.pop("version", "2.1.260.a1b")
    body: dict[str, Any] = {
        "model": "claude-opus-4-6",
        "messages": history(turns),
        "system": [
            {"type": "text", "text": billing(version, cch=f"{turns:05d}", prev=f"req_{turns}")},
            {
                "type": "text",
                "text": "You are Claude Code.",
                "cache_control": {"type": "ephemeral"},
            },
        ],
        "tools": [*TOOLS, DEFERRED],
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": "high"},
    }
    return {**body, **fields}


def shapes(*requests: dict[str, Any]) -> list[Shape]:
    intern = Interner()
    return [shape_of(body, intern) for body in requests]


def causes(before: dict[str, Any], after: dict[str, Any], between: Between = STILL) -> list[Any]:
    """``compare`` of two consecutive requests of a chain."""
    previous, current = shapes(before, after)
    return compare(previous, current, between)


# -- each cause, from two request bodies ----------------------------------------------------


def test_the_order_of_the_causes() -> None:
    assert PRECEDENCE == (
        "model",
        "upgrade",
        "tools",
        "system",
        "fast_mode",
        "betas",
        "effort",
        "compaction",
        "messages",
        "ttl",
        "kept",
    )


def test_an_upgrade_is_the_version_in_the_billing_block_not_its_suffix() -> None:
    upgraded = request(2, version="2.1.262.f3c")
    assert causes(request(1), upgraded) == [("upgrade", "Claude Code 2.1.260 -> 2.1.262")]
    # The suffix digests the first message (it changes at a compaction), even when all digits.
    assert causes(request(1), request(2, version="2.1.260.9d0"))[0][0] == "kept"
    assert causes(request(1, version="2.1.260.123"), request(2, version="2.1.262.456")) == [
        ("upgrade", "Claude Code 2.1.260 -> 2.1.262")
    ]
    # An upgrade explains what changes with it.
    system = [*upgraded["system"], {"type": "text", "text": "A new system prompt."}]
    found = causes(request(1), {**upgraded, "system": system})
    assert [cause for cause, _ in found] == ["upgrade", "system"]
    # cch, cc_prev_req and cc_prompt_id change on every call: the version alone is read.
    assert shapes(request(1))[0].version == "2.1.260"


@pytest.mark.parametrize(
    ("model", "keeps"),
    [
        ("claude-opus-5-5", True),
        ("claude-sonnet-5-5", True),
        ("claude-haiku-5-5", True),
        ("claude-fable-5-1", True),
        ("claude-sonnet-5-5-20270115", True),
        ("claude-opus-4-6", False),
        ("claude-opus-5", False),
        ("claude-opus-5-5-fast", False),
        ("claude-opus-5-5-2027", False),
        ("us.anthropic.claude-opus-5-5", False),
        (None, False),
    ],
)
def test_an_effort_change_breaks_the_cache_except_on_the_models_that_keep_it(
    model: str | None, keeps: bool
) -> None:
    assert keeps_cache_on_effort(model) is keeps
    before = request(1, model=model)
    lower = request(2, model=model, output_config={"effort": "low"})
    effort = 'effort "high" -> "low"'
    if keeps:
        said = f"the history only grew; {effort} keeps the cache on {model}"
        assert causes(before, lower) == [("kept", said)]
    else:
        assert causes(before, lower) == [("effort", effort)]


def test_effort_on_a_model_that_keeps_its_cache_is_said_beside_the_cause() -> None:
    model = "claude-opus-5-5"
    before = request(1, model=model)
    thinking = request(2, model=model, thinking={"type": "enabled", "budget_tokens": 1024})
    assert causes(before, thinking) == [
        (
            "kept",
            'the history only grew; thinking {"type":"adaptive"} -> '
            '{"budget_tokens":1024,"type":"enabled"} keeps the cache on claude-opus-5-5',
        )
    ]
    both = request(2, model=model, output_config={"effort": "max"}, tools=TOOLS[:2])
    assert causes(before, both) == [
        (
            "tools",
            "removed Read; deferred tools removed mcp__github__list_issues, which keeps "
            'the cache; effort "high" -> "max" keeps the cache on claude-opus-5-5',
        )
    ]
    # Onto another model the cache is another one: the effort change is one more cause.
    switched = request(2, model=model, output_config={"effort": "low"})
    assert causes(request(1), switched) == [
        ("model", "claude-opus-4-6 -> claude-opus-5-5"),
        ("effort", 'effort "high" -> "low"'),
    ]


def test_fast_mode_is_a_cause_of_its_own() -> None:
    fast = request(2, speed="fast")
    assert causes(request(1), fast) == [("fast_mode", 'speed "standard" -> "fast"')]
    assert causes(fast, request(3)) == [("fast_mode", 'speed "fast" -> "standard"')]
    # "standard" is the API's default: sending it changes nothing.
    assert causes(request(1), request(2, speed="standard"))[0][0] == "kept"
    # Fast mode adds its beta: it names the cause, the betas follow.
    with_beta = request(2, speed="fast", betas=["fast-mode-2026-02-01"])
    assert [cause for cause, _ in causes(request(1), with_beta)] == ["fast_mode", "betas"]


def test_deferred_tools_stay_out_of_the_prefix_until_loaded() -> None:
    loaded = request(2, tools=[*TOOLS, MCP])
    assert causes(request(1), loaded) == [
        ("tools", "loaded mcp__github__list_issues (was deferred)")
    ]
    assert causes(loaded, request(3)) == [
        ("tools", "deferred mcp__github__list_issues (was loaded)")
    ]
    other = {"name": "mcp__sentry__get_issue", "input_schema": {}, "defer_loading": True}
    more = request(2, tools=[*TOOLS, DEFERRED, other])
    assert causes(request(1), more) == [
        (
            "kept",
            "the history only grew; deferred tools added mcp__sentry__get_issue, which keeps "
            "the cache",
        )
    ]
    changed = {**DEFERRED, "description": "List the open issues."}
    assert causes(more, request(3, tools=[*TOOLS, changed])) == [
        (
            "kept",
            "the history only grew; deferred tools removed mcp__sentry__get_issue; changed "
            "mcp__github__list_issues, which keeps the cache",
        )
    ]
    # Their order is no part of the prefix either.
    assert causes(more, request(3, tools=[*TOOLS, other, DEFERRED]))[0][0] == "kept"


def test_a_loaded_tool_added_or_denied_is_a_tools_change() -> None:
    linear = {"name": "mcp__linear__create_issue", "input_schema": {}}
    added = request(2, tools=[*TOOLS, DEFERRED, linear])
    assert causes(request(1), added) == [("tools", "added mcp__linear__create_issue")]
    assert causes(added, request(3)) == [("tools", "removed mcp__linear__create_issue")]
    denied = request(2, tools=[TOOLS[0], TOOLS[2], DEFERRED])
    assert causes(request(1), denied) == [("tools", "removed Bash")]


def test_every_cause_at_once_comes_in_precedence_order() -> None:
    everything = request(
        2,
        model="claude-opus-5-5",
        version="2.1.262.f3c",
        tools=TOOLS[:2],
        speed="fast",
        betas=["fast-mode-2026-02-01"],
        output_config={"effort": "low"},
        messages=history(2, rewrite=1),
    )
    everything["system"] = [*everything["system"], {"type": "text", "text": "More."}]
    found = causes(request(1), everything, Between(gap_seconds=7200.0, compacted=False))
    assert [cause for cause, _ in found] == [
        "model",
        "upgrade",
        "tools",
        "system",
        "fast_mode",
        "betas",
        "effort",
        "messages",
        "ttl",
    ]
    assert [cause for cause, _ in found] == [c for c in PRECEDENCE if c in dict(found)]


# -- an unreadable request, and the provider's verdict --------------------------------------


def usage(read: int, written: int) -> dict[str, int]:
    return {
        "input_tokens": 4,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": 9,
    }


def test_an_unreadable_request_says_why_and_usage_still_finds_the_break(
    tmp_path: Path, run_asz: Any
) -> None:
    """Request 2 landed whole (not UTF-8), request 3 did not land, request 5 is not JSON:
    the requests cannot say what broke the cache, the usage invariant still says how much."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    reads = [(0, 1000), (0, 1100), (1100, 200), (300, 1500), (1800, 100)]
    for n, (read, written) in enumerate(reads, start=1):
        made.call(MAIN_STREAM, f"msg_{n}", f"req_{n}")
        record = made.request("p1", f"req_{n - 1}" if n > 1 else None, history(n - 1))
        if n == 2:
            good = made.bodies.pop()
            bad = good.body.replace(b"please fix the tests", b"please fix the \xff tests")
            made.bodies.append(
                replace(good, body=bad, keys=read_keys("request", record[: -len(".request")], bad))
            )
        elif n == 3:
            made.bodies.pop()
        elif n == 5:
            whole = made.bodies.pop()
            made.bodies.append(
                replace(whole, body=whole.body[:-2], keys=read_keys("request", "", b""))
            )
        made.response(f"req_{n}", f"msg_{n}", usage=usage(read, written))
    store = made.land()
    done = run_asz("cache", "--root", str(store.location), made.session, "--json")
    report = orjson.loads(done.stdout)
    rows = report["rows"]
    by_message = {row["message_id"]: row for row in rows}
    assert [row["message_id"] for row in rows] == [
        "msg_1",
        "msg_2",
        "msg_3",
        "msg_4",
        "msg_5",
        None,
    ]
    # The bodies cannot say what broke, usage can say where: msg_2 read nothing.
    second = by_message["msg_2"]
    assert (second["cause"], second["cause_from"]) == ("prefix", "usage")
    assert second["evidence"] == {"bodies": "unreadable", "usage": "prefix"}
    assert second["detail"] == (
        "read nothing of the 1000 tokens expected (bodies: unreadable, the body is not valid UTF-8)"
    )
    assert by_message["msg_3"]["request_id"] is None and by_message["msg_3"]["cause"] is None
    fourth = by_message["msg_4"]
    assert (fourth["cause"], fourth["detail"]) == (
        "unknown",
        "no readable request is joined to the call of req_3",
    )
    unjoined = rows[-1]
    assert (unjoined["cause"], unjoined["detail"]) == ("unreadable", "the body is not valid JSON")
    # From usage alone: msg_2 read nothing of msg_1's 1,000 tokens, msg_4 read 300 of 1,300.
    assert [row["rewritten_tokens"] for row in rows] == [None, 1000, 0, 1000, 0, None]
    assert (report["totals"]["breaks"], report["totals"]["rewritten_tokens"]) == (2, 2000)
    # Bodies that landed whole are what Claude Code wrote: their rows say why, no damage.
    assert done.returncode == 0 and report["problems"] == []


def test_the_totals_count_the_provider_reasons_and_those_that_agree(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    steps: list[tuple[dict[str, Any], Any]] = [
        ({}, None),
        ({"model": "claude-sonnet-4-6"}, "model_changed"),  # a break both see
        ({"model": "claude-sonnet-4-6"}, {"type": "messages_changed"}),  # we see it kept
        ({"model": "claude-sonnet-4-6", "tools": TOOLS[:2]}, "previous_message_not_found"),
        ({"model": "claude-sonnet-4-6", "tools": TOOLS[:1]}, {"type": "tools_changed"}),
    ]
    for n, (fields, reason) in enumerate(steps, start=1):
        made.call(MAIN_STREAM, f"msg_{n}", f"req_{n}")
        made.request("p1", f"req_{n - 1}" if n > 1 else None, history(n - 1), **fields)
        diagnostics = {"diagnostics": {"cache_miss_reason": reason}} if reason else {}
        made.response(f"req_{n}", f"msg_{n}", usage=usage(0, 100), **diagnostics)
    report = cache_report(made.land().session(made.session))
    assert [row["cause"] for row in report["rows"]] == ["first", "model", "kept", "tools", "tools"]
    assert (report["totals"]["reported"], report["totals"]["agreed"]) == (4, 2)


# -- every cause asz synth injects, through the real collector and `asz cache` --------------


@pytest.mark.parametrize("seed", [4, 11])
def test_asz_cache_finds_every_injected_cause_and_its_exact_shortfall(
    tmp_path: Path, run_asz: Any, seed: int
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=seed, subagents=2))
    breaks = {brk["message_id"]: brk for brk in expected["cache_breaks"]}
    kept = {change["message_id"]: change for change in expected["cache_kept_changes"]}
    for session in expected["sessions"]:
        mine = [b for b in breaks.values() if b["session"] == session["id"]]
        assert sorted(b["injected"] for b in mine) == sorted([*INJECTED, "model"])
        assert [c["injected"] for c in kept.values() if c["session"] == session["id"]] == ["effort"]
        done = run_asz("cache", "--root", str(store.location), session["id"], "--json")
        assert done.returncode == 0 and done.stderr == b"", done.stderr
        report = orjson.loads(done.stdout)
        rows = {row["message_id"]: row for row in report["rows"] if row["message_id"]}
        for brk in mine:
            row = rows[brk["message_id"]]
            cause, words = INJECTED[brk["injected"]]
            assert row["request_id"] == brk["request"], brk
            assert (row["cause"], row["also"]) == (cause, []), (brk, row)
            assert words in row["detail"], (brk, row)
            assert row["rewritten_tokens"] == brk["rewritten_tokens"] > 0, (brk, row)
        for change in (c for c in kept.values() if c["session"] == session["id"]):
            row = rows[change["message_id"]]
            assert (row["cause"], row["rewritten_tokens"]) == ("kept", 0)
            assert 'effort "medium" -> "low" keeps the cache on claude-opus-5-5' in row["detail"]
        # No call re-wrote anything the ground truth does not name.
        rewrote = {m for m, row in rows.items() if row["rewritten_tokens"]}
        assert rewrote == {b["message_id"] for b in mine}
        totals = report["totals"]
        assert totals["breaks"] == len(mine)
        assert totals["rewritten_tokens"] == sum(b["rewritten_tokens"] for b in mine)
        # A kept call read exactly what the call before it left: expected_read holds to the token.
        for row in rows.values():
            if row["rewritten_tokens"] == 0:
                assert row["cache_read_input_tokens"] == row["expected_read"], row
