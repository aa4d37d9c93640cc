"""Breaks found from usage alone, and what calls cost: rows per call of ``asz cache``."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.handmade import HandMade
from support.landing import land_sample

from asz.config import ConfigError, ModelPrice
from asz.config_file import load_config
from asz.store import MAIN_STREAM
from asz.view.calls import Call, Epoch, Stream, Transcript
from asz.view.prices import price_table, shipped_prices
from asz.view.usage import Usage, expectations

SAMPLE_SESSION = "4d5611e5-241a-462a-8d15-5122611a9569"
ROW_KEYS = [
    "request_id",
    "message_id",
    "stream",
    "time",
    "previous",
    "cause",
    "detail",
    "also",
    "cause_from",
    "evidence",
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
    "cache_write_5m_input_tokens",
    "cache_write_1h_input_tokens",
    "output_tokens",
    "stop_reason",
    "reported_miss_reason",
    "expected_read",
    "rewritten_tokens",
    "cost_usd",
    "waste_usd",
]


def usage_truth(projects: Path, session: str) -> dict[str, dict[str, Any]]:
    """Message id -> stream, usage, expected_read and rewritten_tokens, read straight from
    the .jsonl files: a call is a message id (its last usage wins), a stream is a file, and
    a stream's first call and the first after a compact_boundary line are starts."""
    truth: dict[str, dict[str, Any]] = {}
    for path in sorted(projects.rglob("*.jsonl")):
        stream = "main" if path.name == f"{session}.jsonl" else path.stem.removeprefix("agent-")
        order: list[str] = []
        compacted_before: dict[str, bool] = {}
        usage: dict[str, dict[str, Any]] = {}
        boundary = False
        for line in map(orjson.loads, path.read_bytes().splitlines()):
            if line.get("type") == "system" and line.get("subtype") == "compact_boundary":
                boundary = True
            if line.get("type") != "assistant" or line["message"].get("model") == "<synthetic>":
                continue
            message_id = line["message"]["id"]
            if message_id not in usage:
                order.append(message_id)
                compacted_before[message_id] = boundary
                boundary = False
            usage[message_id] = line["message"]["usage"]
        previous = None
        for message_id in order:
            now = usage[message_id]
            entry: dict[str, Any] = {"stream": stream, "usage": now}
            if previous is None or compacted_before[message_id]:
                entry.update(expected_read=None, rewritten_tokens=None)
            else:
                before = usage[previous]
                expected = before["cache_read_input_tokens"] + before["cache_creation_input_tokens"]
                entry.update(
                    expected_read=expected,
                    rewritten_tokens=max(0, expected - now["cache_read_input_tokens"]),
                )
            truth[message_id] = entry
            previous = message_id
    return truth


def test_real_transcripts_give_a_row_per_call_with_the_usage_invariant(
    tmp_path: Path, samples: Path, run_asz: Any
) -> None:
    claude = tmp_path / "claude"
    store = land_sample(tmp_path, run_asz, samples / "transcripts" / "v2.1.39-subagents-dir")
    done = run_asz("cache", "--root", store.location, SAMPLE_SESSION, "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    rows = report["rows"]
    truth = usage_truth(claude / "projects", SAMPLE_SESSION)

    assert all(row["message_id"] for row in rows)
    assert sorted(row["message_id"] for row in rows) == sorted(truth)
    assert len(rows) == len(truth)
    for row in rows:
        assert list(row) == ROW_KEYS
        expected = truth[row["message_id"]]
        usage = expected["usage"]
        assert row["stream"] == expected["stream"]
        assert row["request_id"] is None
        # No bodies: only a break has a cause, named from the lines or usage.
        assert row["cause_from"] in (
            (None,) if not row["rewritten_tokens"] else ("transcript", "usage")
        )
        assert row["input_tokens"] == usage["input_tokens"]
        assert row["cache_read_input_tokens"] == usage["cache_read_input_tokens"]
        assert row["cache_creation_input_tokens"] == usage["cache_creation_input_tokens"]
        assert row["output_tokens"] == usage["output_tokens"]
        split = usage.get("cache_creation") or {}
        assert row["cache_write_1h_input_tokens"] == split.get("ephemeral_1h_input_tokens", 0)
        assert (
            row["cache_write_5m_input_tokens"] + row["cache_write_1h_input_tokens"]
            == usage["cache_creation_input_tokens"]
        )
        assert row["expected_read"] == expected["expected_read"], row["message_id"]
        assert row["rewritten_tokens"] == expected["rewritten_tokens"], row["message_id"]
        assert (row["waste_usd"] is None) == (row["rewritten_tokens"] is None)
        assert row["cost_usd"] is not None

    # The capture holds starts (three streams and a compaction) and real breaks.
    starts = [m for m, entry in truth.items() if entry["expected_read"] is None]
    assert len(starts) == 4
    breaks = {m: e["rewritten_tokens"] for m, e in truth.items() if e["rewritten_tokens"]}
    assert breaks
    totals = report["totals"]
    assert totals["breaks"] == len(breaks)
    assert totals["rewritten_tokens"] == sum(breaks.values())
    assert totals["unpriced_models"] == []
    assert totals["requests"] == 0 and totals["with_usage"] == len(truth)
    assert report["empty_because"] == "no request bodies landed for this session"


def priced_session(tmp_path: Path) -> Any:
    """Four main-stream calls whose responses carry the usage: 5-minute and 1-hour writes,
    a break, a call with no write split, and a model the price table does not name."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    calls = [
        ("claude-opus-4-6", 10, 100, 0, 3000, (1000, 2000)),
        ("claude-opus-4-6", 5, 50, 1000, 2500, (0, 2500)),  # read 1,000 of 3,000
        ("claude-haiku-4-5-20251001", 2, 10, 3500, 200, None),
        ("claude-unknown-9", 1, 1, 3700, 0, None),
    ]
    for n, (model, given, out, read, written, split) in enumerate(calls, start=1):
        made.call(MAIN_STREAM, f"msg_{n}", f"req_{n}", model=model)
        usage: dict[str, Any] = {
            "input_tokens": given,
            "output_tokens": out,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
        }
        if split:
            usage["cache_creation"] = {
                "ephemeral_5m_input_tokens": split[0],
                "ephemeral_1h_input_tokens": split[1],
            }
        made.response(f"req_{n}", f"msg_{n}", usage=usage, model=model)
    return made.land(), made.session


@pytest.mark.slow
def test_the_cost_of_a_small_session_computed_by_hand(tmp_path: Path, run_asz: Any) -> None:
    store, session = priced_session(tmp_path)
    done = run_asz("cache", "--root", str(store.location), session, "--json")
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    rows = report["rows"]
    # Opus 4.6: $5 input, $25 output, $0.50 read, $6.25 5m write, $10 1h write per million.
    first = (10 * 5 + 100 * 25 + 0 * 0.5 + 1000 * 6.25 + 2000 * 10) / 1e6
    second = (5 * 5 + 50 * 25 + 1000 * 0.5 + 0 * 6.25 + 2500 * 10) / 1e6
    # Haiku 4.5 by its dated id: $1, $5, $0.10, and no split, so all 5-minute writes at $1.25.
    third = (2 * 1 + 10 * 5 + 3500 * 0.10 + 200 * 1.25) / 1e6
    assert [row["cost_usd"] for row in rows] == pytest.approx([first, second, third, None])
    assert first == pytest.approx(0.0288) and second == pytest.approx(0.026775)
    assert [row["expected_read"] for row in rows] == [None, 3000, 3500, 3700]
    assert [row["rewritten_tokens"] for row in rows] == [None, 2000, 0, 0]
    # The break's writes were 1-hour ones: 2,000 tokens at $10 instead of $0.50.
    assert [row["waste_usd"] for row in rows] == pytest.approx([None, 0.019, 0.0, None])
    totals = report["totals"]
    assert totals["cost_usd"] == pytest.approx(first + second + third)
    assert totals["waste_usd"] == pytest.approx(0.019)
    assert (totals["breaks"], totals["rewritten_tokens"]) == (1, 2000)
    assert totals["unpriced_models"] == ["claude-unknown-9"]

    human = run_asz("cache", "--root", str(store.location), session).stdout.decode()
    assert "no price for claude-unknown-9 (tokens only)" in human
    assert "1 break re-wrote 2,000 tokens" in human

    # A price in the config file names the model, and wins over the shipped table.
    config = tmp_path / "asz.toml"
    config.write_text(
        '[prices."claude-unknown-9"]\ninput = 1\noutput = 2\ncache_read = 0.5\n'
        "cache_write_5m = 3\ncache_write_1h = 4\n"
        '[prices."claude-opus-4-6"]\ninput = 0\noutput = 0\ncache_read = 0\n'
        "cache_write_5m = 0\ncache_write_1h = 0\n"
    )
    done = run_asz(
        "cache", "--root", str(store.location), session, "--json", "--config", str(config)
    )
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    fourth = (1 * 1 + 1 * 2 + 3700 * 0.5) / 1e6
    costs = [row["cost_usd"] for row in report["rows"]]
    assert costs == pytest.approx([0, 0, third, fourth])
    assert report["totals"]["unpriced_models"] == []


def test_model_ids_match_a_price_by_name_or_dated_name_only() -> None:
    table = shipped_prices()
    assert table.taken == "2026-12-01"
    assert table.source == "https://platform.claude.com/docs/en/about-claude/pricing"
    opus = table.price_of("claude-opus-4-6")
    assert opus == ModelPrice(5, 25, 0.5, 6.25, 10)
    assert table.price_of("claude-opus-4-20250514") == ModelPrice(15, 75, 1.5, 18.75, 30)
    assert table.price_of("claude-haiku-4-5-20251001") == ModelPrice(1, 5, 0.1, 1.25, 2)
    assert table.price_of("claude-3-5-haiku-20241022") == ModelPrice(0.8, 4, 0.08, 1, 1.6)
    # Never guessed: an unknown version of a family, or any other spelling, has no price.
    for model in ("claude-opus-4-9", "claude-opus-4-6-fast", "claude-sonnet", None, ""):
        assert table.price_of(model) is None, model
    mine = price_table((("claude-opus-4-9", ModelPrice(1, 1, 1, 1, 1)),))
    assert mine.price_of("claude-opus-4-9-20270101") == ModelPrice(1, 1, 1, 1, 1)
    assert mine.price_of("claude-opus-4-6") == opus


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ('[prices."m"]\ninput = 1\n', "prices.'m' must give output"),
        (
            '[prices."m"]\ninput = 1\noutput = 1\ncache_read = 1\ncache_write_5m = 1\n'
            'cache_write_1h = "1"\n',
            "prices.'m'.cache_write_1h must be a number >= 0",
        ),
        ('[prices."m"]\ninptu = 1\n', "unknown key prices.'m'.inptu"),
        ("prices = 3\n", "prices must be a table of tables"),
    ],
)
def test_a_price_in_the_config_file_is_whole_or_refused(
    tmp_path: Path, text: str, said: str
) -> None:
    config = tmp_path / "asz.toml"
    config.write_text(text)
    with pytest.raises(ConfigError, match=re.escape(said)):
        load_config(config, env={"HOME": str(tmp_path)})


def test_starts_are_a_streams_first_call_and_calls_after_a_compaction_or_a_gap() -> None:
    transcript = Transcript()
    main = transcript.streams["main"] = Stream("main", gap_position=9)
    side = transcript.streams["side"] = Stream("side")
    for stream, message_id, position, model in [
        (main, "m1", 0, "claude-opus-4-6"),
        (main, "m2", 2, "claude-opus-4-6"),
        (main, "synthetic", 3, "<synthetic>"),
        (main, "m3", 4, "claude-opus-4-6"),  # a compaction at line 3
        (main, "m4", 6, "claude-opus-4-6"),
        (main, "m5", 10, "claude-opus-4-6"),  # lines lost before line 9
        (main, "m6", 12, "claude-opus-4-6"),
        (side, "s1", 0, "claude-haiku-4-5"),
        (side, "s2", 1, "claude-haiku-4-5"),
    ]:
        call = Call(stream.name, message_id, position, model=model)
        call.synthetic = model == "<synthetic>"
        stream.calls.append(call)
    transcript.epochs.append(Epoch("main", 3, None, None, "auto", None))
    usage = {
        name: Usage(1, 1, read, written, None, None)
        for name, read, written in [
            ("m1", 0, 100),
            ("m2", 60, 50),  # read 60 of 100: a break of 40
            ("m3", 0, 70),
            ("m4", 70, 5),
            ("m5", 0, 80),
            ("m6", 90, 1),  # read more than 80: no break
            ("s1", 0, 10),
            ("s2", 0, 10),
        ]
    }
    found = expectations(transcript, usage)
    assert "synthetic" not in found
    assert {name: (e.expected_read, e.rewritten_tokens) for name, e in found.items()} == {
        "m1": (None, None),
        "m2": (100, 40),
        "m3": (None, None),
        "m4": (70, 0),
        "m5": (None, None),
        "m6": (80, 0),
        "s1": (None, None),
        "s2": (10, 10),
    }
