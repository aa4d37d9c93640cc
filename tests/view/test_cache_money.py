"""What each cause cost, in the words of ``asz cache``: a session's summary counts a cause's
calls (a side request, joined to no call, is on a line of its own) and carries its dollars,
and the ranking of every session shows the causes by what they wasted beside it. Checked
against the ground truth ``asz synth`` writes, through the real ``asz``."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest
from support.cli import asz_runner
from support.landing import land_synth

from asz.store import Store
from asz.synth import SynthOptions
from asz.view.cache_text import dollars

SIDE_KINDS = {"title", "compaction"}
"""The kinds of request ``asz synth`` writes that no call records: a side request."""


@pytest.fixture(scope="module")
def synth(tmp_path_factory: pytest.TempPathFactory) -> tuple[Store, dict[str, Any]]:
    """A capture of two sessions, landed once for the module's tests, which only read it."""
    base = tmp_path_factory.mktemp("money")
    return land_synth(base, asz_runner(base / "home"), SynthOptions(seed=4, sessions=2))


def cause_lines(text: str) -> dict[str, list[str]]:
    """The lines of a session's summary after its ``cause`` header, by their first word."""
    lines = text.splitlines()
    start = next(n for n, line in enumerate(lines) if line.split()[:2] == ["cause", "calls"])
    return {line.split()[0]: line.split() for line in lines[start + 1 :] if line.startswith("  ")}


def report_json(run_asz: Any, store: Store, *args: str) -> Any:
    done = run_asz("cache", "--root", str(store.location), *args, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_sessions_causes_count_its_calls_and_side_requests_apart(
    synth: tuple[Store, dict[str, Any]], run_asz: Any
) -> None:
    store, expected = synth
    for session in expected["sessions"]:
        sid = session["id"]
        requests = [b for b in expected["bodies"] if b["session"] == sid and b["role"] == "request"]
        truth = Counter(b["cache_cause"] for b in requests if b["kind"] == "call")
        side = sum(b["kind"] in SIDE_KINDS for b in requests)
        assert truth["model"] and side, "the capture has model changes and side requests"

        done = run_asz("cache", "--root", str(store.location), sid)
        assert done.returncode == 0, done.stderr
        lines = cause_lines(done.stdout.decode())
        for cause, calls in truth.items():
            assert lines[cause][1] == str(calls), (cause, lines[cause])
        no_call = lines.pop("no")
        assert no_call[:4] == ["no", "call", str(side), "requests"], no_call
        assert set(lines) - set(truth) <= {"no_request"}, lines


@pytest.mark.slow
def test_every_cause_line_carries_the_dollars_its_calls_wasted(
    synth: tuple[Store, dict[str, Any]], run_asz: Any
) -> None:
    store, expected = synth
    for session in expected["sessions"]:
        report = report_json(run_asz, store, session["id"])
        calls = [row for row in report["rows"] if row["message_id"] is not None]
        done = run_asz("cache", "--root", str(store.location), session["id"])
        lines = cause_lines(done.stdout.decode())
        wasted: dict[str, float | None] = {}
        for row in calls:
            cause = row["cause"] or "no_request"
            if row["waste_usd"] is not None:
                wasted[cause] = (wasted.get(cause) or 0) + row["waste_usd"]
            else:
                wasted.setdefault(cause, None)
        for cause, waste in wasted.items():
            shown = lines[cause][-1]
            assert shown == dollars(None if waste is None else round(waste, 6)), (cause, shown)
        dollars_in_lines = [float(lines[c][-1]) for c in wasted if lines[c][-1] != "-"]
        assert round(sum(dollars_in_lines), 2) == round(report["totals"]["waste_usd"], 2)
        # Most waste first, the unknown last.
        known = [float(lines[c][-1]) for c in lines if c != "no" and lines[c][-1] != "-"]
        assert known == sorted(known, reverse=True)


def test_the_ranking_shows_the_causes_by_what_they_wasted(
    synth: tuple[Store, dict[str, Any]], run_asz: Any
) -> None:
    store, expected = synth
    reports = [report_json(run_asz, store, s["id"]) for s in expected["sessions"]]
    rows = [row for report in reports for row in report["rows"] if row["message_id"]]
    causes = report_json(run_asz, store, "--by", "cause")
    by_cause = {entry["cause"]: entry for entry in causes}
    requests = [b for b in expected["bodies"] if b["role"] == "request"]
    truth = Counter(b["cache_cause"] for b in requests if b["kind"] == "call")
    for cause, calls in truth.items():
        assert by_cause[cause]["calls"] == calls, cause
        waste = [row["waste_usd"] for row in rows if row["cause"] == cause]
        known = [value for value in waste if value is not None]
        assert by_cause[cause]["waste_usd"] == (round(sum(known), 6) if known else None), cause
    wastes = [entry["waste_usd"] for entry in causes if entry["waste_usd"] is not None]
    assert wastes == sorted(wastes, reverse=True) and wastes[0] > 0

    done = run_asz("cache", "--root", str(store.location))
    assert done.returncode == 0, done.stderr
    sessions, beside, *_rest = done.stdout.decode().split("\n\n")
    title, header, *table = beside.splitlines()
    assert title == "by cause, most waste first" and header.split()[0] == "CAUSE"
    assert [line.split()[0] for line in table] == [entry["cause"] for entry in causes]
    assert [line.split()[-1] for line in table] == [dollars(e["waste_usd"]) for e in causes]
    assert len(sessions.splitlines()) == 1 + len(expected["sessions"])


def test_the_report_json_keeps_its_fields(
    synth: tuple[Store, dict[str, Any]], run_asz: Any
) -> None:
    """The summary's words changed; what ``--json`` gives did not: ``by_cause`` still counts
    every landed request under its cause, side requests too."""
    store, expected = synth
    sid = expected["sessions"][0]["id"]
    report = report_json(run_asz, store, sid)
    counted = Counter(row["cause"] for row in report["rows"] if row["cause"] is not None)
    assert {cause: entry["requests"] for cause, entry in report["totals"]["by_cause"].items()} == (
        dict(counted)
    )
    assert set(report["totals"]) >= {
        "requests", "with_usage", "hit_ratio", "by_cause", "rewritten_tokens", "breaks",
        "cost_usd", "waste_usd", "unpriced_models", "reported", "agreed", "by_family",
    }  # fmt: skip
