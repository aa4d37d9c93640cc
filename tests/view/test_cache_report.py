"""The cache report: one cause per request, what is not a change, totals and the table."""

from __future__ import annotations

import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.handmade import TOOLS, HandMade, history, user_message
from support.landing import land_claude, land_synth
from support.terminal import on_a_terminal

from asz.commands.problems import SHOWN
from asz.store import BODY_KIND, MAIN_STREAM, Store
from asz.synth import SynthOptions, synthesize
from asz.view.cache import cache_report
from asz.view.cache_text import COLUMNS, report_cells, report_summary
from asz.view.shapes import normalised_message

Step = dict[str, Any]


def run(made: HandMade, steps: list[Step]) -> list[dict[str, Any]]:
    """One main-stream call per step under one prompt, each request naming the one before;
    a step gives ``messages``, ``advance`` (seconds before the call), ``compact_before`` and
    request fields. Returns the report's rows by call order."""
    made.prompt(MAIN_STREAM, "p1")
    prev = None
    for n, step in enumerate(steps, start=1):
        step = dict(step)
        if step.pop("compact_before", False):
            made.compaction(MAIN_STREAM, "The summary.")
        made.call(MAIN_STREAM, f"msg_{n}", f"req_{n}", advance=step.pop("advance", 2.0))
        made.request("p1", prev, step.pop("messages", history(n - 1)), **step)
        made.response(
            f"req_{n}",
            f"msg_{n}",
            usage={
                "input_tokens": 10,
                "cache_read_input_tokens": 1000 * n,
                "cache_creation_input_tokens": 100,
                "output_tokens": 5,
            },
        )
        prev = f"req_{n}"
    report = cache_report(made.land().session(made.session))
    assert report["problems"] == []
    return report["rows"]


def causes(rows: list[dict[str, Any]]) -> list[str]:
    return [row["cause"] for row in rows]


def test_a_growing_history_is_kept_across_both_spellings_and_a_moved_marker(
    tmp_path: Path,
) -> None:
    rows = run(HandMade(tmp_path), [{}, {}, {}, {}])
    assert causes(rows) == ["first", "kept", "kept", "kept"]
    assert rows[1]["detail"] == "the history only grew"
    assert [row["message_id"] for row in rows] == ["msg_1", "msg_2", "msg_3", "msg_4"]
    assert rows[1]["previous"] == rows[0]["request_id"]


def test_the_two_spellings_are_one_message_and_a_marker_moves_freely() -> None:
    plain = {"role": "user", "content": "hello"}
    newest = {
        "role": "user",
        "content": [
            {"type": "text", "text": "hello", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
    }
    assert normalised_message(plain) == normalised_message(newest)
    two = [
        {"type": "tool_result", "tool_use_id": "t", "content": "x"},
        {"type": "text", "text": "y"},
    ]
    marked = [two[0], {**two[1], "cache_control": {"type": "ephemeral"}}]
    assert normalised_message({"role": "user", "content": two}) == normalised_message(
        {"role": "user", "content": marked}
    )
    assert normalised_message(plain) != normalised_message({"role": "user", "content": "hellO"})


@given(st.text(), st.text(), st.sampled_from([None, "5m", "1h"]))
def test_spelling_never_hides_a_change_of_text(a: str, b: str, ttl: str | None) -> None:
    marker = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    listed = {"role": "user", "content": [{"type": "text", "text": a, "cache_control": marker}]}
    assert normalised_message(listed) == normalised_message({"role": "user", "content": a})
    same = normalised_message(listed) == normalised_message({"role": "user", "content": b})
    assert same == (a == b)


@pytest.mark.parametrize(
    ("change", "cause", "detail"),
    [
        ({"model": "claude-sonnet-4-6"}, "model", "claude-opus-4-6 -> claude-sonnet-4-6"),
        ({"tools": TOOLS[:2]}, "tools", "removed Read"),
        ({"tools": [*TOOLS, {"name": "Write", "input_schema": {}}]}, "tools", "added Write"),
        (
            {"tools": [TOOLS[0], {**TOOLS[1], "description": "shorter"}, TOOLS[2]]},
            "tools",
            "changed Bash",
        ),
        ({"tools": [TOOLS[1], TOOLS[0], TOOLS[2]]}, "tools", "reordered"),
        ({"betas": ["context-1m-2025-08-07"]}, "betas", 'null -> ["context-1m-2025-08-07"]'),
        ({"output_config": {"effort": "low"}}, "effort", 'effort "high" -> "low"'),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            "effort",
            'thinking {"type":"adaptive"} -> {"budget_tokens":1024,"type":"enabled"}',
        ),
        ({"messages": history(2, rewrite=1)}, "messages", "message 1 (assistant) rewritten"),
        ({"messages": history(2, rewrite=0)}, "messages", "message 0 (user) rewritten"),
        ({"messages": history(0)}, "messages", "messages 1-2 dropped"),
    ],
)
def test_each_cause_is_found_at_its_request(
    tmp_path: Path, change: Step, cause: str, detail: str
) -> None:
    rows = run(HandMade(tmp_path), [{}, {}, change, {}])
    assert causes(rows)[:3] == ["first", "kept", cause]
    assert rows[2]["detail"] == detail
    assert rows[2]["also"] == []


def test_a_changed_system_block_is_named_by_its_place(tmp_path: Path) -> None:
    rows = run(
        HandMade(tmp_path),
        [
            {},
            {
                "system": [
                    {
                        "type": "text",
                        "text": "x-anthropic-billing-header: cch=99999; "
                        "cc_prev_req=req_1; cc_prompt_id=p1;",
                    },
                    {"type": "text", "text": "You are Claude Code."},
                    {"type": "text", "text": "Another system prompt."},
                ]
            },
        ],
    )
    assert causes(rows) == ["first", "system"]
    assert rows[1]["detail"] == "system block 2 changed"


def test_a_compaction_is_a_new_list_not_a_rewrite(tmp_path: Path) -> None:
    summary = [user_message("The summary."), user_message("go on")]
    rows = run(
        HandMade(tmp_path),
        [
            {},
            {},
            {"messages": summary, "compact_before": True},
            {"messages": [*summary, *history(1)[1:]]},
        ],
    )
    assert causes(rows) == ["first", "kept", "compaction", "kept"]
    assert rows[2]["detail"] == "a new list of 2 messages (was 3)"


def test_time_past_the_marker_lifetime_breaks_the_cache(tmp_path: Path) -> None:
    rows = run(
        HandMade(tmp_path),
        [
            {"ttl": None},
            {"ttl": None, "advance": 301},  # past the 5 minutes of the previous marker
            {"ttl": "1h", "advance": 200},
            {"ttl": "1h", "advance": 1800},  # within the hour the previous marker asked for
            {"ttl": "1h", "advance": 3700},
        ],
    )
    assert causes(rows) == ["first", "ttl", "kept", "kept", "ttl"]
    assert rows[1]["detail"] == "5m01s passed the 5m00s lifetime"
    assert rows[4]["detail"] == "1h01m passed the 1h00m lifetime"


def test_precedence_names_one_cause_and_keeps_the_others(tmp_path: Path) -> None:
    rows = run(
        HandMade(tmp_path),
        [
            {},
            {},
            {
                "model": "claude-sonnet-4-6",
                "tools": TOOLS[:1],
                "advance": 4000,
                "messages": history(2, rewrite=1),
            },
        ],
    )
    assert rows[2]["cause"] == "model"
    assert rows[2]["also"] == ["tools", "messages", "ttl"]


def test_a_request_whose_previous_is_not_landed_is_unknown(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    made.request("p1", "req_0")
    made.response("req_1", "msg_1")
    rows = cache_report(made.land().session(made.session))["rows"]
    # The call's own pair is (no previous request, p1), so the request joins no call: a row
    # for the call, with nothing to compare, then one for the request.
    assert causes(rows) == [None, "unknown"]
    assert [row["message_id"] for row in rows] == ["msg_1", None]
    assert rows[0]["request_id"] is None and rows[0]["detail"] is None
    assert rows[1]["detail"] == "no readable request is joined to the call of req_0"


def test_totals_and_the_reported_miss_reason(tmp_path: Path) -> None:
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    made.call(MAIN_STREAM, "msg_1", "req_1")
    made.request("p1")
    made.response(
        "req_1",
        "msg_1",
        usage={"input_tokens": 4, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 96},
    )
    made.call(MAIN_STREAM, "msg_2", "req_2")
    made.request("p1", "req_1", history(1), model="claude-sonnet-4-6")
    made.response(
        "req_2",
        "msg_2",
        usage={
            "input_tokens": 10,
            "cache_read_input_tokens": 0,
            "cache_creation_input_tokens": 190,
        },
        diagnostics={"cache_miss_reason": "model_changed"},
    )
    made.call(MAIN_STREAM, "msg_3", "req_3")
    made.request("p1", "req_2", history(2), model="claude-sonnet-4-6")
    made.response(
        "req_3",
        "msg_3",
        usage={
            "input_tokens": 10,
            "cache_read_input_tokens": 290,
            "cache_creation_input_tokens": 0,
            "cache_miss_reason": None,
        },
    )
    report = cache_report(made.land().session(made.session))
    rows, totals = report["rows"], report["totals"]
    assert causes(rows) == ["first", "model", "kept"]
    assert [row["reported_miss_reason"] for row in rows] == [None, "model_changed", None]
    assert (totals["input_tokens"], totals["cache_read_input_tokens"]) == (24, 290)
    assert totals["cache_creation_input_tokens"] == 286
    assert totals["hit_ratio"] == round(290 / (290 + 286 + 24), 4)
    assert totals["by_cause"] == {
        "first": {"requests": 1, "cache_creation_input_tokens": 96},
        "model": {"requests": 1, "cache_creation_input_tokens": 190},
        "kept": {"requests": 1, "cache_creation_input_tokens": 0},
    }

    cells = report_cells(report)
    assert [dict(zip(COLUMNS, row, strict=True))["cause"] for row in cells] == [
        "first",
        "model",
        "kept",
    ]
    assert "[reported: model_changed]" in cells[1][-1]
    summary = report_summary(report)
    assert summary[1].startswith("hit ratio 48.3%: 290 tokens read from the cache")
    assert any(line.split()[:2] == ["model", "1"] for line in summary[2:])


def test_every_injected_break_of_a_synthetic_capture_is_found(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=11, subagents=2))
    rows = {}
    for session in expected["sessions"]:
        report = cache_report(store.session(session["id"]))
        assert report["problems"] == []
        rows.update({row["request_id"]: row for row in report["rows"]})
    breaks = expected["cache_breaks"]
    assert {brk["cause"] for brk in breaks} == {
        "model",
        "upgrade",
        "tools",
        "system",
        "fast_mode",
        "effort",
        "ttl",
    }
    for brk in breaks:
        assert rows[brk["request"]]["cause"] == brk["cause"], brk
    broken = {brk["request"] for brk in breaks}
    calls = [b for b in expected["bodies"] if b["role"] == "request" and b["kind"] == "call"]
    assert Counter(rows[b["id"]]["cause"] for b in calls if b["id"] not in broken).keys() <= {
        "first",
        "kept",
        "compaction",
    }
    for body in calls:
        assert rows[body["id"]]["cause"] == body["cache_cause"], body["id"]
    assert all(rows[b["id"]]["input_tokens"] is not None for b in calls)


# -- what `asz cache` says when it has little or nothing to say -------------------------------


def cache_cli(run_asz: Any, store: Store, session: str, *flags: str) -> Any:
    return run_asz("cache", "--root", str(store.location), session, *flags)


@pytest.mark.slow
def test_asz_cache_on_a_damaged_root_says_the_problems_and_exits_1(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=3, sessions=1))
    session = expected["sessions"][0]["id"]
    clean = cache_cli(run_asz, store, session)
    assert clean.returncode == 0 and clean.stderr == b"", clean.stderr
    landed = store.session(session).landed(BODY_KIND)
    damaged = [Path(store.location) / name.path for name in landed]
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:-9])
    for flags in ((), ("--json",)):
        done = cache_cli(run_asz, store, session, *flags)
        assert done.returncode == 1
        said = done.stderr.decode().splitlines()
        assert [line.split(": ")[2] for line in said] == [str(path) for path in damaged]
        assert all(line.startswith("asz: problem: ") for line in said)
    assert done.stdout.startswith(b"{")
    report = orjson.loads(done.stdout)
    # The transcripts still read: a row per call, none with a request.
    assert report["rows"] and len(report["problems"]) == len(damaged)
    assert all(row["request_id"] is None and row["message_id"] for row in report["rows"])
    # No body compares: a break is named from the lines or usage, never the bodies.
    assert all(row["cause_from"] in (None, "api", "transcript", "usage") for row in report["rows"])
    assert all(row["cause"] is None for row in report["rows"] if not row["rewritten_tokens"])
    assert (
        report["empty_because"]
        == "no request body of this session could be read (see the problems)"
    )
    human = cache_cli(run_asz, store, session).stdout.decode()
    assert human.splitlines()[-1] == report["empty_because"]


def test_many_problems_are_shown_up_to_a_count(tmp_path: Path, run_asz: Any) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=3, sessions=1))
    config = tmp_path / "asz.toml"
    config.write_text("[adapters.claude_code_local]\nmax_delta_bytes = 4096\n")
    root = tmp_path / "root"
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    done = run_asz("collect", "--once", "--root", str(root), "--config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    session = expected["sessions"][0]["id"]
    windows = sorted((root / session / "transcripts").rglob("transcript-*.asz"))
    assert len(windows) > SHOWN + 1
    for path in windows:
        path.write_bytes(path.read_bytes()[:-9])
    done = run_asz("cache", "--root", str(root), session, "--config", str(config))
    said = done.stderr.decode().splitlines()
    assert done.returncode == 1 and len(said) == SHOWN + 1
    assert all(line.startswith("asz: problem: ") for line in said[:SHOWN])
    assert said[-1] == (
        f"asz: {len(windows) - SHOWN} more problems not shown, {len(windows)} in all; "
        "--json lists them all"
    )


def test_a_session_without_requests_says_none_landed(tmp_path: Path, run_asz: Any) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=3, sessions=1))
    shutil.rmtree(claude / "asz")
    store = land_claude(tmp_path, run_asz, claude)
    session = expected["sessions"][0]["id"]
    done = cache_cli(run_asz, store, session, "--json")
    assert done.returncode == 0 and done.stderr == b""
    report = orjson.loads(done.stdout)
    assert report["rows"] and report["problems"] == []
    assert all(row["request_id"] is None and row["message_id"] for row in report["rows"])
    assert report["empty_because"] == "no request bodies landed for this session"
    done = cache_cli(run_asz, store, session)
    assert done.stdout.decode().splitlines()[-1] == "no request bodies landed for this session"


@pytest.mark.slow
def test_requests_that_cannot_be_joined_say_the_transcripts_carry_no_prompt_ids(
    tmp_path: Path, run_asz: Any
) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=3, sessions=1))
    for path in (claude / "projects").rglob("*.jsonl"):
        path.write_bytes(re.sub(rb',"promptId":"[^"]*"', b"", path.read_bytes()))
    store = land_claude(tmp_path, run_asz, claude)
    session = expected["sessions"][0]["id"]
    done = cache_cli(run_asz, store, session, "--json")
    assert done.returncode == 0 and done.stderr == b""
    report = orjson.loads(done.stdout)
    requested = [row for row in report["rows"] if row["request_id"]]
    assert requested and not any(row["message_id"] for row in requested)
    because = "none of the session's requests could be joined to a call: "
    assert report["empty_because"] == because + "the transcripts carry no prompt ids (promptId)"
    lines = cache_cli(run_asz, store, session).stdout.decode().splitlines()
    assert lines[-1] == report["empty_because"]
    # With them, the same capture joins and the report has nothing to excuse.
    assert (
        cache_report(
            land_synth(tmp_path / "whole", run_asz, SynthOptions(seed=3, sessions=1))[0].session(
                session
            )
        )["empty_because"]
        is None
    )


@pytest.mark.slow
def test_asz_cache_shows_each_request_by_a_prefix_asz_body_takes(
    tmp_path: Path, run_asz: Any
) -> None:
    """The table never cuts an id so that it cannot be pasted: each request is shown by the
    shortest prefix that names it in its session, and ``asz body`` gives that body back."""
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=4))
    session = expected["sessions"][0]["id"]
    table = cache_cli(run_asz, store, session)
    assert table.returncode == 0, table.stderr
    lines = table.stdout.decode().splitlines()
    rows = [line.split() for line in lines[1:] if line.split() and line.split()[0].isdigit()]
    report = cache_report(store.session(session))
    assert len(rows) == len(report["rows"])
    shown = [cells[1] for cells in rows if cells[1] != "-"]
    requests = [row["request_id"] for row in report["rows"] if row["request_id"]]
    assert len(shown) == len(requests) and "…" not in table.stdout.decode()
    for prefix, request in zip(shown, requests, strict=True):
        assert request.startswith(prefix) and len(prefix) >= 8
    for prefix, request in list(zip(shown, requests, strict=True))[:3]:
        body = run_asz("body", "--root", str(store.location), session, prefix)
        assert body.returncode == 0 and body.stdout == store.session(session).body(request)


def test_on_a_terminal_the_cache_table_fits_its_width(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=4))
    session = expected["sessions"][0]["id"]
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for columns in (100, 140):
        args = ["cache", "--root", str(store.location), session]
        code, shown, _err = on_a_terminal(args, env, "stdout", columns=columns)
        assert code == 0
        text = re.sub(r"\x1b\[[0-9;]*m", "", shown)
        assert max(len(line) for line in text.splitlines()) <= columns, columns
        assert "mcp__linear__create_issue" in text.replace("\n", "")
