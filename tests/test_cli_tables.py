"""The listings people read: every time in UTC and labelled so, whatever the machine's zone;
and on a terminal 80, 100 or 120 columns wide, one line a session. Every test runs the real
``asz`` on a synthetic capture with one more session written by hand, whose project lies deep
under a long path and whose calls span three model families."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pytest
from conftest import asz_executable

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
