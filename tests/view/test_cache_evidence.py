"""Causes without bodies: every break the usage invariant finds is named from whatever
evidence there is (the API's verdict, the transcript lines, usage), each marked with its
source, through the real ``asz cache``; and what the real transcripts and a synthetic capture
with its bodies removed name."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.handmade import HandMade
from support.landing import land_claude, land_sample
from support.synth_causes import INJECTED

from asz.store import MAIN_STREAM
from asz.synth import SynthOptions, synthesize
from asz.view.causes import FIRST, PRECEDENCE, UNKNOWN, UNREADABLE
from asz.view.evidence import Named, Seen, api_cause, seen_on_line, strongest, transcript_causes
from asz.view.families import CACHE_CAUSES
from asz.view.spend import NO_REQUEST

SAMPLE_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"


def _usage(read: int, written: int, *, hour: bool = False, speed: str | None = None) -> dict:
    split = {"ephemeral_5m_input_tokens": 0 if hour else written}
    split["ephemeral_1h_input_tokens"] = written if hour else 0
    usage: dict[str, Any] = {
        "input_tokens": 2,
        "output_tokens": 5,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "cache_creation": split,
    }
    if speed:
        usage["speed"] = speed
    return usage


def _call(
    made: HandMade,
    message_id: str,
    usage: dict,
    *,
    advance: float = 5.0,
    model: str = "claude-opus-4-6",
    envelope: dict | None = None,
    verdict: dict | None = None,
) -> None:
    message: dict[str, Any] = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [{"type": "text", "text": "done"}],
        "stop_reason": "end_turn",
        "usage": usage,
    }
    if verdict is not None:
        message["diagnostics"] = {"cache_miss_reason": verdict}
    made.line(MAIN_STREAM, {"type": "assistant", "message": message, **(envelope or {})}, advance)


def test_each_break_of_a_transcript_is_named_from_its_lines_the_api_or_usage(
    tmp_path: Path, run_asz: Any
) -> None:
    """No body landed: the lifetime, a model switch, an upgrade, an effort change and fast
    mode come from the lines; the API's verdict names a change the lines cannot see (and an
    inconclusive verdict names nothing); usage says where the rest began."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    high = {"effort": "high"}
    steps = [
        # message id, usage, seconds since the previous line, model, envelope, verdict
        ("m1", _usage(1000, 500, hour=True), 5, "claude-opus-4-6", high, None),
        ("m2", _usage(1500, 100, hour=True), 5, "claude-opus-4-6", high, None),
        # 2 h idle: past the 1 h lifetime of m2's writes; the prefix was still warm.
        ("m3", _usage(1000, 700), 7200, "claude-opus-4-6", high, None),
        ("m4", _usage(0, 1800), 5, "claude-sonnet-4-6", high, None),
        ("m5", _usage(0, 1900), 5, "claude-sonnet-4-6", {"version": "2.1.262", **high}, None),
        (
            "m6",
            _usage(0, 2000),
            5,
            "claude-sonnet-4-6",
            {"version": "2.1.262"} | {"effort": "high", "perTurnEffort": "low"},
            None,
        ),
        # The API names a tools change; the lines see nothing.
        (
            "m7",
            _usage(600, 1500),
            5,
            "claude-sonnet-4-6",
            {"version": "2.1.262", "effort": "low"},
            {"type": "tools_changed", "cache_missed_input_tokens": 1500},
        ),
        # The API could not compare: usage says the change began at message 0.
        (
            "m8",
            _usage(1000, 1200),
            5,
            "claude-sonnet-4-6",
            {"version": "2.1.262", "effort": "low"},
            {"type": "previous_message_not_found"},
        ),
        (
            "m9",
            _usage(1500, 900),
            5,
            "claude-sonnet-4-6",
            {"version": "2.1.262", "effort": "low"},
            None,
        ),
    ]
    for message_id, usage, advance, model, envelope, verdict in steps:
        _call(
            made,
            message_id,
            usage,
            advance=advance,
            model=model,
            envelope=envelope,
            verdict=verdict,
        )
    store = made.land()
    done = run_asz("cache", "--root", str(store.location), made.session, "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    rows = {row["message_id"]: row for row in report["rows"]}
    named = {
        m: (row["cause"], row["cause_from"]) for m, row in rows.items() if row["rewritten_tokens"]
    }
    assert named == {
        "m3": ("ttl", "transcript"),
        "m4": ("model", "transcript"),
        "m5": ("upgrade", "transcript"),
        "m6": ("effort", "transcript"),
        "m7": ("tools", "api"),
        "m8": ("messages", "usage"),
        "m9": ("messages", "usage"),
    }
    assert rows["m3"]["detail"] == "2h00m passed the 1h00m lifetime"
    assert rows["m3"]["evidence"] == {"transcript": "ttl", "usage": "messages"}
    assert rows["m6"]["detail"] == 'effort "high" -> "low"'
    assert rows["m7"]["detail"] == "the API: tools_changed, 1500 tokens missed"
    assert rows["m7"]["evidence"] == {"api": "tools", "usage": "prefix"}
    assert rows["m8"]["detail"] == "read only the 1000-token tools and system: from message 0"
    assert rows["m8"]["reported_miss_reason"] == "previous_message_not_found"
    assert rows["m1"]["cause"] is None and rows["m2"]["cause"] is None
    totals = report["totals"]
    assert totals["breaks_by_evidence"] == {
        "bodies": 0,
        "api": 1,
        "transcript": 4,
        "usage": 2,
        "none": 0,
    }
    assert totals["api_agreement"] == {"tools": {"compared": 1, "agreed": 1}}
    assert totals["by_cause"]["messages"]["requests"] == 2
    text = run_asz("cache", "--root", str(store.location), made.session)
    said = text.stdout.decode()
    assert text.returncode == 0 and "ttl" in said and "upgrade" in said
    assert "breaks named: 7 of 7 (api 1, transcript 4, usage 2)\n" in said
    assert "the API's verdict agrees with the other evidence in 1 of 1\n" in said


def test_the_real_transcripts_name_their_breaks(
    tmp_path: Path, samples: Path, run_asz: Any
) -> None:
    """Claude Code 2.1.39, no bodies: the break after four idle hours is the lifetime of its
    5 min writes passing; the one that read only the tools and system began at message 0."""
    store = land_sample(tmp_path, run_asz, samples / "transcripts" / "v2.1.39-subagents-dir")
    done = run_asz("cache", "--root", str(store.location), SAMPLE_SESSION, "--json")
    report = orjson.loads(done.stdout)
    breaks = [row for row in report["rows"] if row["rewritten_tokens"]]
    assert [(row["cause"], row["cause_from"], row["detail"]) for row in breaks] == [
        ("ttl", "transcript", "4h11m passed the 5m00s lifetime"),
        ("ttl", "transcript", "19m01s passed the 5m00s lifetime"),
        ("messages", "usage", "read only the 21478-token tools and system: from message 0"),
    ]
    assert report["totals"]["breaks_by_evidence"]["none"] == 0


@pytest.mark.slow
@pytest.mark.parametrize("seed", [4, 11])
def test_a_synthetic_capture_without_bodies_names_every_injected_cause(
    tmp_path: Path, run_asz: Any, seed: int
) -> None:
    """The synth writes the API's verdict and the turn's effort on its lines, as recent Claude
    Code does: with every body removed before collecting, each injected break is named as
    injected, by the API or the lines, and the API agrees with the lines where both speak."""
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=seed, subagents=2))
    for body in expected["bodies"]:
        (claude / body["file"]).unlink()
    store = land_claude(tmp_path, run_asz, claude)
    for session in expected["sessions"]:
        done = run_asz("cache", "--root", str(store.location), session["id"], "--json")
        assert done.returncode == 0, done.stderr
        report = orjson.loads(done.stdout)
        rows = {row["message_id"]: row for row in report["rows"]}
        mine = [b for b in expected["cache_breaks"] if b["session"] == session["id"]]
        for brk in mine:
            row = rows[brk["message_id"]]
            assert row["request_id"] is None, row
            assert row["cause"] == INJECTED[brk["injected"]][0], (brk, row)
            assert row["cause_from"] in ("api", "transcript"), row
            assert row["rewritten_tokens"] == brk["rewritten_tokens"], (brk, row)
        totals = report["totals"]
        assert totals["breaks_by_evidence"]["none"] == 0
        assert sum(totals["breaks_by_evidence"].values()) == len(mine)
        agreement = totals["api_agreement"].values()
        assert agreement and all(e["agreed"] == e["compared"] for e in agreement)


def test_an_inconclusive_verdict_names_nothing() -> None:
    assert api_cause("previous_message_not_found") is None
    assert api_cause({"type": "unavailable"}) is None
    assert api_cause({"type": "system_changed", "cache_missed_input_tokens": 9}) == Named(
        "api", "system", "the API: system_changed, 9 tokens missed"
    )


def test_an_upgrade_on_the_lines_explains_the_system_change_the_api_names() -> None:
    named = [
        Named("api", "system", "the API: system_changed"),
        *transcript_causes(
            Seen(model="a", version="2.1.1"),
            Seen(model="a", version="2.1.2"),
            gap_seconds=1.0,
            ttl=300.0,
        ),
    ]
    assert strongest(named) == Named("transcript", "upgrade", "Claude Code 2.1.1 -> 2.1.2")


def test_effort_on_a_model_that_keeps_its_cache_is_no_cause() -> None:
    found = transcript_causes(
        Seen(model="claude-opus-5-5", effort='"high"'),
        Seen(model="claude-opus-5-5", effort='"low"'),
        gap_seconds=1.0,
        ttl=None,
    )
    assert found == []


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner),
    max_leaves=8,
)


@given(
    envelope=st.dictionaries(st.sampled_from(["version", "effort", "perTurnEffort", "x"]), _JSON),
    diagnostics=_JSON,
)
def test_any_line_gives_facts_of_the_right_types(envelope: dict, diagnostics: object) -> None:
    """Whatever the line carries, its facts are None or a string (a count for ``missed``)."""
    said = seen_on_line(envelope, {"diagnostics": diagnostics})
    assert set(said) == {"version", "effort", "verdict", "missed"}
    assert all(said[k] is None or isinstance(said[k], str) for k in ("version", "effort"))
    assert said["verdict"] is None or isinstance(said["verdict"], str)
    assert said["missed"] is None or isinstance(said["missed"], int)
    Seen(**said)


def test_every_cause_the_report_names_is_a_label_of_the_counters() -> None:
    """Causes from usage (``prefix``) are counted under their name, not as ``other``."""
    named = {*PRECEDENCE, "prefix", FIRST, UNKNOWN, UNREADABLE, NO_REQUEST}
    assert named <= set(CACHE_CAUSES)
