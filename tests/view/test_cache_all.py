"""``asz cache`` with no SESSION: every landed session ranked by cache waste, with totals per
project and per UTC day, run as the real ``asz`` on real landed roots.

The figures of sessions written by hand are checked against waste worked out here from their
usage and the shipped price; those of synthetic captures and the real samples against each
session's own report (``asz cache SESSION --json``), which the ranking must never contradict.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.landing import land_claude, land_synth
from support.terminal import on_a_terminal

from asz.store import BODY_KIND, Store
from asz.synth import SynthOptions

pytestmark = pytest.mark.slow
"""Each test lands several captures with the real collector and ranks them: over 5 s apiece."""

PRICED = "claude-opus-4-6"
UNPRICED = "claude-unknown-9"
WASTE_PER_TOKEN = (6.25 - 0.50) / 1_000_000
"""What a re-written token of claude-opus-4-6 wastes: a 5-minute write less a cache read,
in US dollars (asz/view/prices.toml)."""
SUMMED = (
    "calls",
    "breaks",
    "rewritten_tokens",
    "input_tokens",
    "cache_read_input_tokens",
    "cache_creation_input_tokens",
)


def sid(digit: str) -> str:
    return f"{digit * 8}-2222-4333-8444-555555555555"


W1, W2, W3, W4, W5 = (sid(digit) for digit in "12345")
Call = tuple[str, int, int]
"""(time, cache read, cache write) of one main-stream call, 10 tokens of input, 5 of output."""
HAND: dict[str, tuple[str, str, list[Call]]] = {
    # (cwd, model, calls)
    W1: (
        "/work/alpha",
        PRICED,
        [
            ("2026-03-01T10:00:00.000Z", 0, 10_000),
            ("2026-03-01T10:01:00.000Z", 10_000, 500),
            ("2026-03-01T10:02:00.000Z", 0, 11_000),  # re-wrote 10,500
        ],
    ),
    W2: (  # past midnight UTC: two calls on each day
        "/work/beta",
        PRICED,
        [
            ("2026-03-01T23:50:00.000Z", 0, 20_000),
            ("2026-03-01T23:55:00.000Z", 0, 21_000),  # re-wrote 20,000
            ("2026-03-02T00:05:00.000Z", 21_000, 100),
            ("2026-03-02T00:10:00.000Z", 0, 30_000),  # re-wrote 21,100
        ],
    ),
    W3: (
        "/work/alpha",
        UNPRICED,
        [
            ("2026-03-02T15:00:00.000Z", 0, 20_000),
            ("2026-03-02T15:01:00.000Z", 0, 25_000),  # re-wrote 20,000, at no known price
        ],
    ),
    W4: (
        "/work/gamma",
        UNPRICED,
        [
            ("2026-03-03T09:00:00.000Z", 0, 1_000),
            ("2026-03-03T09:01:00.000Z", 0, 6_000),  # re-wrote 1,000, at no known price
        ],
    ),
    W5: (
        "/work/alpha",
        PRICED,
        [
            ("2026-03-03T11:00:00.000Z", 0, 1_000),
            ("2026-03-03T11:01:00.000Z", 1_000, 100),  # kept: nothing wasted
        ],
    ),
}
REWRITTEN = {W1: 10_500, W2: 41_100, W3: 20_000, W4: 1_000, W5: 0}
WASTE = {
    W1: round(10_500 * WASTE_PER_TOKEN, 6),
    W2: round(41_100 * WASTE_PER_TOKEN, 6),
    W3: None,
    W4: None,
    W5: 0.0,
}
RANKED = [W2, W1, W5, W3, W4]
"""Most waste first; then unknown waste, most re-written tokens first."""


def write_hand_sessions(claude: Path) -> None:
    """The sessions of ``HAND`` as Claude Code writes them: a prompt, then each call's
    assistant line with its usage (no bodies, so the usage is the transcript's)."""
    (claude / "asz" / "provider-bodies").mkdir(parents=True)
    for session, (cwd, model, calls) in HAND.items():
        base = {"sessionId": session, "cwd": cwd}
        lines = [{**base, "type": "user", "uuid": f"{session}-u", "timestamp": calls[0][0]}]
        for n, (when, read, written) in enumerate(calls, start=1):
            usage = {
                "input_tokens": 10,
                "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written,
                "output_tokens": 5,
            }
            message = {"id": f"msg_{session[:4]}_{n}", "model": model, "usage": usage}
            lines.append(
                {
                    **base,
                    "type": "assistant",
                    "uuid": f"{session}-{n}",
                    "timestamp": when,
                    "requestId": f"req_{session[:4]}_{n}",
                    "message": message,
                }
            )
        path = claude / "projects" / cwd.replace("/", "-") / f"{session}.jsonl"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))


@pytest.fixture
def hand(tmp_path: Path, run_asz: Any) -> Store:
    claude = tmp_path / "claude"
    write_hand_sessions(claude)
    return land_claude(tmp_path, run_asz, claude)


def cache_json(run_asz: Any, store: Store, *args: str) -> Any:
    done = run_asz("cache", "--root", str(store.location), "--json", *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    return orjson.loads(done.stdout)


def check_against_reports(run_asz: Any, store: Store) -> list[dict[str, Any]]:
    """The ranking of every session of ``store``: each session as its own report says, in
    order of waste, and the per-cause, per-project and per-day totals summing to the
    sessions."""
    ranked = cache_json(run_asz, store)
    assert sorted(entry["session"] for entry in ranked) == store.sessions()
    for entry in ranked:
        report = cache_json(run_asz, store, entry["session"])
        totals = report["totals"]
        for key in ("waste_usd", "cost_usd", "rewritten_tokens", "breaks", "hit_ratio"):
            assert entry[key] == totals[key], (entry["session"], key)
        assert entry["unpriced_models"] == totals["unpriced_models"]
        assert entry["calls"] == sum(row["message_id"] is not None for row in report["rows"])
        assert entry["problems"] == []
    known = [entry for entry in ranked if entry["waste_usd"] is not None]
    assert ranked[: len(known)] == known
    assert [e["waste_usd"] for e in known] == sorted((e["waste_usd"] for e in known), reverse=True)
    unknown = [entry["rewritten_tokens"] for entry in ranked[len(known) :]]
    assert unknown == sorted(unknown, reverse=True)
    for by in ("cause", "project", "day"):
        check_totals(ranked, cache_json(run_asz, store, "--by", by), by)
    return ranked


def check_totals(ranked: list[dict[str, Any]], groups: list[dict[str, Any]], by: str) -> None:
    """Every count of the groups sums to the sessions', and the dollars to within rounding."""
    for key in SUMMED:
        assert sum(group[key] for group in groups) == sum(entry[key] for entry in ranked), key
    for key in ("cost_usd", "waste_usd"):
        total = sum(group[key] or 0 for group in groups)
        assert total == pytest.approx(sum(entry[key] or 0 for entry in ranked), abs=1e-5), key
    assert len({group[by] for group in groups}) == len(groups)
    if by == "project":
        assert sum(group["sessions"] for group in groups) == len(ranked)


# -- sessions written by hand: figures worked out here ---------------------------------------


def test_sessions_are_ranked_by_waste_then_by_what_they_re_wrote(hand: Store, run_asz: Any) -> None:
    ranked = check_against_reports(run_asz, hand)
    assert [entry["session"] for entry in ranked] == RANKED
    for entry in ranked:
        session = entry["session"]
        cwd, model, calls = HAND[session]
        assert entry["waste_usd"] == WASTE[session], session
        assert entry["rewritten_tokens"] == REWRITTEN[session]
        assert (entry["project"], entry["calls"]) == (cwd, len(calls))
        assert (entry["first"], entry["last"]) == (calls[0][0], calls[-1][0])
        assert entry["unpriced_models"] == ([UNPRICED] if model == UNPRICED else [])
        assert (entry["cost_usd"] is None) == (model == UNPRICED)
    first = ranked[0]
    assert list(first)[:2] == ["session", "project"]
    assert {"first", "last", "breaks", "hit_ratio"} <= first.keys()


def test_totals_per_project_and_per_utc_day_of_each_call(hand: Store, run_asz: Any) -> None:
    projects = {group["project"]: group for group in cache_json(run_asz, hand, "--by", "project")}
    assert list(projects) == ["/work/beta", "/work/alpha", "/work/gamma"]
    alpha = projects["/work/alpha"]
    assert (alpha["sessions"], alpha["calls"], alpha["rewritten_tokens"]) == (3, 7, 30_500)
    assert alpha["waste_usd"] == WASTE[W1] and alpha["unpriced_calls"] == 2
    assert projects["/work/gamma"]["waste_usd"] is None

    days = cache_json(run_asz, hand, "--by", "day")
    assert [day["day"] for day in days] == ["2026-03-03", "2026-03-02", "2026-03-01"]
    by_day = {day["day"]: day for day in days}
    # W2 ran past midnight UTC: its calls count on the day of each, not on the day it began.
    first, second = by_day["2026-03-01"], by_day["2026-03-02"]
    assert (first["sessions"], first["calls"], first["rewritten_tokens"]) == (2, 5, 30_500)
    assert first["waste_usd"] == round((10_500 + 20_000) * WASTE_PER_TOKEN, 6)
    assert (second["sessions"], second["calls"], second["rewritten_tokens"]) == (2, 4, 41_100)
    assert second["waste_usd"] == round(21_100 * WASTE_PER_TOKEN, 6)
    assert by_day["2026-03-03"]["waste_usd"] == 0
    check_totals(cache_json(run_asz, hand), days, "day")


def test_project_and_since_pick_sessions_as_asz_sessions_does(hand: Store, run_asz: Any) -> None:
    def picked(*args: str) -> list[str]:
        return [entry["session"] for entry in cache_json(run_asz, hand, *args)]

    def listed(*args: str) -> set[str]:
        done = run_asz("sessions", "--root", str(hand.location), "--json", *args)
        return {summary["id"] for summary in orjson.loads(done.stdout)}

    for args in (
        ("--project", "alpha"),
        ("--project", "/work/[bg]*"),
        ("--since", "2026-03-02T12:00Z"),
        ("--project", "alpha", "--since", "2026-03-02T00:00Z"),
    ):
        assert set(picked(*args)) == listed(*args), args
    assert picked("--project", "alpha") == [W1, W5, W3]
    assert picked("--project", "/work/[bg]*") == [W2, W4]
    assert picked("--since", "2026-03-02T12:00Z") == [W5, W3, W4]
    days = cache_json(run_asz, hand, "--by", "day", "--project", "beta")
    assert [(day["day"], day["calls"]) for day in days] == [("2026-03-02", 2), ("2026-03-01", 2)]

    none = run_asz("cache", "--root", str(hand.location), "--project", "nowhere")
    assert none.returncode == 2 and none.stdout == b""
    assert b"no landed session matches" in none.stderr
    for by in ((), ("--by", "cause"), ("--by", "project"), ("--by", "day")):
        listed = run_asz(
            "cache", "--root", str(hand.location), "--json", "--since", "3000-01-01", *by
        )
        assert listed.returncode == 2 and orjson.loads(listed.stdout) == [], by
    bad = run_asz("cache", "--root", str(hand.location), "--since", "yesterday")
    assert bad.returncode == 2 and b"yesterday" in bad.stderr
    mixed = run_asz("cache", "--root", str(hand.location), W1[:8], "--by", "day")
    assert mixed.returncode == 2 and mixed.stdout == b""


def test_off_a_terminal_the_ranking_is_plain_tables_whose_ids_paste(
    hand: Store, run_asz: Any
) -> None:
    done = run_asz("cache", "--root", str(hand.location))
    assert done.returncode == 0 and done.stderr == b""
    text = done.stdout.decode()
    assert "\x1b" not in text and all(line == line.rstrip() for line in text.splitlines())
    sessions, causes, projects, days, total = text.split("\n\n")
    assert causes.splitlines()[0] == "by cause, most waste first"
    header, *rows = sessions.splitlines()
    assert header.split() == [
        "SESSION", "PROJECT", "FIRST", "(UTC)", "LAST", "(UTC)", "CALLS", "BREAKS", "REWRITTEN",
        "HIT", "COST", "$", "WASTE", "$",
    ]  # fmt: skip
    assert len(rows) == len(RANKED)
    for row, session in zip(rows, RANKED, strict=True):
        shown = row.split()[0]
        assert session.startswith(shown) and len(shown) >= 8
        report = cache_json(run_asz, hand, shown)
        assert report["session"] == session
        waste = WASTE[session]
        assert row.split()[-1] == ("-" if waste is None else "0" if waste == 0 else f"{waste:.4f}")
        assert row.split()[-4] == f"{REWRITTEN[session]:,}"
    assert projects.splitlines()[0] == "by project"
    assert [line.split()[0] for line in projects.splitlines()[2:]] == [
        "/work/beta", "/work/alpha", "/work/gamma",
    ]  # fmt: skip
    assert days.splitlines()[0] == "by day (UTC)"
    assert [line.split()[0] for line in days.splitlines()[2:]] == [
        "2026-03-03", "2026-03-02", "2026-03-01",
    ]  # fmt: skip
    priced = [call for cwd, model, calls in HAND.values() if model == PRICED for call in calls]
    read = sum(call[1] for call in priced)
    written = sum(call[2] for _cwd, _model, calls in HAND.values() for call in calls)
    cost = len(priced) * (10 * 5.0 + 5 * 25.0) + read * 0.50 + sum(c[2] for c in priced) * 6.25
    assert total.splitlines() == [
        f"5 sessions, 13 calls, hit ratio {read / (read + written + 150):.1%}",
        f"from usage: 5 breaks re-wrote 72,600 tokens; cost ${cost / 1e6:.4f}, of which "
        f"${51_600 * WASTE_PER_TOKEN:.4f} wasted on breaks; no price for {UNPRICED} (tokens only)",
    ]
    by_day = run_asz("cache", "--root", str(hand.location), "--by", "day").stdout.decode()
    assert by_day.startswith("by day (UTC)\n") and "by project" not in by_day
    assert by_day.endswith(total)


def test_on_a_terminal_every_table_fits_its_width(
    hand: Store, tmp_path: Path, run_asz: Any
) -> None:
    """The tables, and the sentences of the sum after them, wrapped between words."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    plain = run_asz("cache", "--root", str(hand.location))
    money = plain.stdout.decode().splitlines()[-1].split()  # one line off a terminal
    assert money[0] == "from"
    for columns in (60, 100, 160):
        args = ["cache", "--root", str(hand.location)]
        code, shown, _err = on_a_terminal(args, env, "stdout", columns=columns)
        assert code == 0
        text = [ansi_free(line) for line in shown.replace("\r", "").splitlines()]
        assert max(len(line) for line in text) <= columns, columns
        total = next(n for n, line in enumerate(text) if line.startswith("5 sessions, 13 calls"))
        tables = [line for line in text[:total] if line]
        assert sum(line.split()[0] in {s[:8] for s in RANKED} for line in tables) == len(RANKED)
        assert "WASTE $" in tables[0] and "REWRITTEN" in tables[0]
        assert tables[0].split()[0] == "SESSION"
        assert ("FIRST" in tables[0]) == (columns > 100)
        assert " ".join(text[total + 1 :]).split() == money


def ansi_free(line: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line)


def test_an_empty_root_says_nothing_landed_and_a_missing_one_is_exit_2(
    tmp_path: Path, run_asz: Any
) -> None:
    (tmp_path / "empty").mkdir()
    done = run_asz("cache", "--root", str(tmp_path / "empty"))
    assert done.returncode == 0 and done.stdout == b""
    assert b"no sessions have landed" in done.stderr
    for by in ((), ("--by", "cause"), ("--by", "project"), ("--by", "day")):
        listed = run_asz("cache", "--root", str(tmp_path / "empty"), "--json", *by)
        assert listed.returncode == 0 and orjson.loads(listed.stdout) == []
    missing = run_asz("cache", "--root", str(tmp_path / "typo"))
    assert missing.returncode == 2 and b"typo" in missing.stderr and missing.stdout == b""


# -- synthetic captures and the real samples: as their own reports say -----------------------


def test_synthetic_sessions_rank_as_their_own_reports_say(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=4, sessions=3, subagents=1))
    ranked = check_against_reports(run_asz, store)
    assert len(ranked) == len(expected["sessions"]) == 3
    assert sum(entry["waste_usd"] or 0 for entry in ranked) > 0


def test_a_damaged_session_is_a_problem_and_the_others_are_still_ranked(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=3, sessions=3))
    clean = cache_json(run_asz, store)
    damaged_session = expected["sessions"][0]["id"]
    damaged = [
        Path(store.location) / n.path for n in store.session(damaged_session).landed(BODY_KIND)
    ]
    assert damaged
    for path in damaged:
        path.write_bytes(path.read_bytes()[:-9])
    done = run_asz("cache", "--root", str(store.location), "--json")
    assert done.returncode == 1
    said = done.stderr.decode().splitlines()
    assert said and all(line.startswith("asz: problem: ") for line in said)
    assert {str(path) for path in damaged} <= {line.split(": ")[2] for line in said}
    ranked = {entry["session"]: entry for entry in orjson.loads(done.stdout)}
    assert ranked.keys() == {entry["session"] for entry in clean}
    assert ranked[damaged_session]["problems"]
    for entry in clean:
        if entry["session"] != damaged_session:
            assert ranked[entry["session"]] == entry
    human = run_asz("cache", "--root", str(store.location))
    assert human.returncode == 1 and human.stdout.count(b"\n") > len(clean)


def test_the_real_samples_rank_as_their_own_reports_say(
    tmp_path: Path, samples: Path, run_asz: Any
) -> None:
    claude = tmp_path / "claude"
    for layout in ("v2.1.39-subagents-dir", "v2.0.74-flat-agent-files"):
        shutil.copytree(samples / "transcripts" / layout, claude / "projects", dirs_exist_ok=True)
    store = land_claude(tmp_path, run_asz, claude)
    ranked = check_against_reports(run_asz, store)
    assert len(ranked) > 2
    assert any(entry["waste_usd"] for entry in ranked)
