"""The listings people read: every time in UTC and labelled so, whatever the machine's zone;
and on a terminal 80, 100 or 120 columns wide, one line a session. Every test runs the real
``asz`` on a synthetic capture with one more session written by hand, whose project lies deep
under a long path and whose calls span three model families."""

from __future__ import annotations

import json
import os
import re
import subprocess
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from rich.cells import cell_len
from support.cli import asz_executable
from support.terminal import on_a_terminal

from asz.commands.listing import path_shortened
from asz.synth import SynthOptions, synthesize

ZONE = "IST-5:30"
"""A zone far from UTC, in POSIX form so that it needs no time zone database."""
DEEP = "/home/someone/work/clients/northwind-traders/src/harborview"
HAND = "0d6a3c1e-5b7f-4c2a-9e8d-1f2a3b4c5d6e"
MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-haiku-4-5-20251001")


def line(n: int, when: str, **extra: Any) -> bytes:
    record = {"type": "user", "sessionId": HAND, "cwd": DEEP, "timestamp": when, "uuid": f"u{n}"}
    return orjson.dumps({**record, **extra}) + b"\n"


def hand_session(claude: Path) -> None:
    """A session in ``DEEP`` with a call on each model of ``MODELS``, late in a UTC day."""
    lines = []
    for n, model in enumerate(MODELS):
        when = f"2026-09-18T22:{10 + n:02d}:00.000Z"
        message = {"id": f"msg_hand_{n}", "model": model, "content": []}
        lines.append(line(2 * n, when))
        lines.append(line(2 * n + 1, when, type="assistant", message=message, requestId=f"r{n}"))
    path = claude / "projects" / "-home-someone-harborview" / f"{HAND}.jsonl"
    path.parent.mkdir(parents=True)
    path.write_bytes(b"".join(lines))


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], Path]:
    """(the environment to run ``asz`` in, the root) of the capture, collected once."""
    base = tmp_path_factory.mktemp("tables")
    claude, root, home = base / "claude", base / "root", base / "home"
    home.mkdir()
    synthesize(claude, SynthOptions())
    hand_session(claude)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CONFIG_DIR": str(claude),
        "TZ": ZONE,
    }
    done = asz(env, "collect", "--once", "--root", str(root))
    assert done.returncode == 0, done.stderr
    return env, root


def asz(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*asz_executable(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def summaries(env: dict[str, str], root: Path) -> list[dict[str, Any]]:
    done = asz(env, "sessions", "--json", "--root", str(root))
    assert done.returncode == 0, done.stderr
    listed: list[dict[str, Any]] = json.loads(done.stdout)
    return listed


def utc_minute(moment: str) -> str:
    return datetime.fromisoformat(moment).astimezone(UTC).strftime("%Y-%m-%d %H:%M")


# -- one zone, labelled ----------------------------------------------------------------------


@pytest.mark.parametrize("command", [["sessions"], ["cache"]])
def test_listed_times_are_utc_and_say_so_in_another_zone(
    landed: tuple[dict[str, str], Path], command: list[str]
) -> None:
    env, root = landed
    done = asz(env, *command, "--root", str(root))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.split("\n\n")[0].splitlines()
    assert "FIRST (UTC)" in header and "LAST (UTC)" in header, header
    for summary in summaries(env, root):
        (row,) = [row for row in rows if row.startswith(summary["id"][:8])]
        first, last = utc_minute(summary["first_activity"]), utc_minute(summary["last_activity"])
        assert f"  {first}  {last}  " in row, row


def test_since_reads_a_time_without_a_zone_as_utc(landed: tuple[dict[str, str], Path]) -> None:
    """The hand session's last call is at 22:12 UTC, 03:42 the next day in ``ZONE``: a time
    copied from a listing picks by what the listing showed."""
    env, root = landed
    picked = asz(env, "sessions", "--json", "--root", str(root), "--since", "2026-09-18T22:00")
    assert [summary["id"] for summary in json.loads(picked.stdout)] == [HAND]
    day = asz(env, "sessions", "--json", "--root", str(root), "--since", "2026-09-19")
    assert day.returncode == 2 and json.loads(day.stdout) == []


def test_the_view_and_the_day_totals_are_in_utc_too(landed: tuple[dict[str, str], Path]) -> None:
    env, root = landed
    view = asz(env, "view", "--root", str(root), HAND)
    assert "to 22:12:00 UTC" in view.stdout and "calls (times in UTC)" in view.stdout
    days = asz(env, "cache", "--root", str(root), "--by", "day")
    assert "by day (UTC)" in days.stdout
    assert [line.split()[0] for line in days.stdout.splitlines()[2:-3]] == ["2026-09-18"]


@pytest.mark.slow
def test_local_moves_every_time_to_this_machines_zone_and_says_so(
    landed: tuple[dict[str, str], Path],
) -> None:
    """``--local``: the listings, the view, the per-day totals and ``--since`` in ``ZONE``,
    where the hand session's calls fall on the next day."""
    env, root = landed
    offset = timezone(timedelta(hours=5, minutes=30))
    done = asz(env, "sessions", "--root", str(root), "--local")
    header, *rows = done.stdout.splitlines()
    assert "FIRST (local)" in header and "LAST (local)" in header and "UTC" not in header
    for summary in summaries(env, root):
        (row,) = [row for row in rows if row.startswith(summary["id"][:8])]
        first, last = (
            datetime.fromisoformat(summary[key]).astimezone(offset).strftime("%Y-%m-%d %H:%M")
            for key in ("first_activity", "last_activity")
        )
        assert f"  {first}  {last}  " in row, row
    since = ("sessions", "--json", "--root", str(root), "--since", "2026-09-19T03:00")
    assert [s["id"] for s in json.loads(asz(env, *since, "--local").stdout)] == [HAND]
    assert asz(env, *since).returncode == 2, "03:00 UTC is after every session"
    days = asz(env, "cache", "--json", "--by", "day", "--root", str(root), "--local")
    newest = json.loads(days.stdout)[0]
    assert (newest["day"], newest["calls"]) == ("2026-09-19", len(MODELS))
    assert "by day (local)" in asz(env, "cache", "--root", str(root), "--local").stdout
    view = asz(env, "view", "--root", str(root), HAND, "--local").stdout
    assert "2026-09-19 03:40:00 to 03:42:00 local" in view
    assert "calls (times in local time)" in view


# -- one line a session, at the widths terminals have ----------------------------------------


def terminal_lines(env: dict[str, str], columns: int, *args: str) -> list[str]:
    """What a terminal ``columns`` wide shows of ``asz args``, its escapes left out."""
    code, shown, _err = on_a_terminal([*args], env, "stdout", columns=columns)
    assert code == 0, shown
    return [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in shown.splitlines()]


def session_rows(lines: list[str], ids: list[str]) -> list[str]:
    """The lines of the first table (up to its blank line) after its header, each checked to
    start with a session's prefix: a line that does not is a session's second line."""
    table = lines[: lines.index("")] if "" in lines else lines
    rows = table[1:]
    assert all(row.split()[0] in {i[: len(row.split()[0])] for i in ids} for row in rows), rows
    return rows


@pytest.mark.parametrize("columns", [80, 100, 120])
@pytest.mark.parametrize("command", [["sessions"], ["cache"]])
def test_on_a_terminal_each_session_is_one_line_that_fits(
    landed: tuple[dict[str, str], Path], columns: int, command: list[str]
) -> None:
    env, root = landed
    listed = summaries(env, root)
    ids = [summary["id"] for summary in listed]
    lines = terminal_lines(env, columns, *command, "--root", str(root))
    assert all(len(line.rstrip()) <= columns for line in lines), lines
    rows = session_rows(lines, ids)
    assert len(rows) == len(ids), rows
    header = lines[0]
    assert "LAST (UTC)" in header and "PROJECT" in header
    for summary in listed:
        (row,) = [row for row in rows if summary["id"].startswith(row.split()[0])]
        project = row.split()[1]
        # Shortened from the left by whole names: the end of the path, which tells it apart.
        assert project == summary["cwd"] or (
            project.startswith("…/") and summary["cwd"].endswith(project[1:])
        ), row
    if "MODELS" in header:
        (hand,) = [row for row in rows if HAND.startswith(row.split()[0])]
        assert (
            "haiku, opus, sonnet" in hand
            or ", ".join(
                name.removeprefix("claude-").removesuffix("-20251001") for name in sorted(MODELS)
            )
            in hand
        ), hand


@pytest.mark.parametrize("columns", [80, 100, 120])
def test_on_a_terminal_a_sessions_report_fits(
    landed: tuple[dict[str, str], Path], columns: int
) -> None:
    env, root = landed
    busiest = max(summaries(env, root), key=lambda summary: summary["calls"])
    lines = terminal_lines(env, columns, "cache", "--root", str(root), busiest["id"])
    assert all(len(line.rstrip()) <= columns for line in lines), lines
    header = lines[0].split()
    assert {"request", "cause", "read", "rewritten", "detail"} <= set(header), header


def test_off_a_terminal_the_project_and_models_are_whole(
    landed: tuple[dict[str, str], Path],
) -> None:
    env, root = landed
    done = asz(env, "sessions", "--root", str(root))
    (hand,) = [row for row in done.stdout.splitlines() if HAND.startswith(row.split()[0])]
    assert f"  {DEEP}  " in hand
    assert "haiku-4-5, opus-4-6, sonnet-4-6" in hand


@given(
    names=st.lists(st.text(alphabet="abcé界-_. ", min_size=1, max_size=12), max_size=8),
    width=st.integers(min_value=0, max_value=80),
)
def test_a_path_is_shortened_from_the_left_by_whole_names(names: list[str], width: int) -> None:
    path = "/" + "/".join(names)
    shown = path_shortened(path, width)
    if cell_len(path) <= width:
        assert shown == path
        return
    assert shown.startswith("…/") and path.endswith(shown[1:])
    kept = shown[2:].split("/")
    assert kept == path.split("/")[-len(kept) :]
    # As many names as fit: one more would not, and the last is there however wide.
    more = "…/" + "/".join(path.split("/")[-len(kept) - 1 :])
    assert cell_len(shown) <= width or len(kept) == 1
    assert cell_len(more) > width or len(kept) + 1 == len(path.split("/"))
