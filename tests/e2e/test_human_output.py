"""What people read: counts in words, logs in words on a terminal and JSON elsewhere, a conflict
said once with what to do, and a demo that cleans up after itself. Every test runs the real
``asz``; the terminal ones give it a real pseudo-terminal."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.claude_dir import Claude, request_body
from support.cli import asz_executable
from support.notify import Datagrams, notify_socket
from support.paths import REPO
from support.service import FAST, A, child_env, running_service
from support.terminal import on_a_terminal

from asz.synth import SynthOptions, synthesize
from asz.words import size

PASS_KEYS = {
    "sessions", "landed", "records", "bodies_landed", "bodies_waiting", "bodies_unreadable",
    "bodies_excluded", "transcript_lines_landed", "transcripts_unattributed",
    "sessions_excluded", "source_bytes", "landed_bytes", "conflicts", "conflict_sources",
    "errors", "seconds", "complete",
}  # fmt: skip
"""The keys of a pass's ``--json`` object before its human line changed: they stay."""


def synthetic(tmp_path: Path) -> tuple[Path, dict[str, Any], dict[str, str]]:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions())
    return claude, expected, {"CLAUDE_CONFIG_DIR": str(claude)}


# -- counts in words (item 7) -------------------------------------------------------------


@pytest.mark.slow
def test_a_pass_says_what_landed_in_words_and_a_quiet_one_says_so_in_one_line(
    tmp_path: Path, run_asz: Any
) -> None:
    claude, expected, env = synthetic(tmp_path)
    root, twin = str(tmp_path / "root"), str(tmp_path / "twin")
    first = run_asz("collect", "--once", "--root", root, env=env)
    assert first.returncode == 0, first.stderr
    counts = orjson.loads(run_asz("collect", "--once", "--json", "--root", twin, env=env).stdout)
    assert set(counts) >= PASS_KEYS
    report = orjson.loads(run_asz("verify", "--root", root, "--json").stdout)
    sessions = len(expected["sessions"])
    waiting = expected["totals"]["unclaimable_responses"]

    [line] = first.stdout.decode().splitlines()
    assert line.startswith(
        f"landed {report['bodies']} bodies and {report['transcript_lines']} transcript lines "
        f"of {sessions} sessions: {size(counts['source_bytes'])} read, "
        f"{size(counts['landed_bytes'])} stored in {report['files']} landed files; "
        f"{waiting} bodies waiting for their session, as a few always are (see "
        f"docs/operations.md#waiting-bodies) ("
    ), line
    assert "=" not in line

    transcripts = sum(path.is_file() for path in (claude / "projects").rglob("*"))
    again = run_asz("collect", "--once", "--root", root, env=env)
    assert again.returncode == 0, again.stderr
    [quiet] = again.stdout.decode().splitlines()
    assert quiet.startswith(
        f"nothing new: {transcripts} transcript files of {sessions} sessions already landed; "
        f"{waiting} bodies waiting for their session, as a few always are (see "
        f"docs/operations.md#waiting-bodies) ("
    ), quiet
    quiet_json = run_asz("collect", "--once", "--json", "--root", twin, env=env)
    assert set(orjson.loads(quiet_json.stdout)) >= PASS_KEYS


def test_the_place_a_pass_line_points_waiting_bodies_at_says_why_they_wait() -> None:
    """The pass line sends a person to a section of the docs: it must be there, and speak of
    the bodies that always wait."""
    operations = (REPO / "docs" / "operations.md").read_text()
    heading = "\n## Waiting bodies\n"
    assert heading in operations
    section = operations.split(heading, 1)[1].split("\n## ", 1)[0]
    assert "normal" in section and "title" in section and "compaction" in section


def test_a_pass_over_nothing_says_that_nothing_landed_yet(tmp_path: Path, run_asz: Any) -> None:
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    result = run_asz("collect", "--once", "--root", str(tmp_path / "root"), env=env)
    assert result.stdout.decode().startswith("nothing new: nothing landed yet (")


def test_the_service_logs_and_reports_a_pass_in_the_same_words(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    claude.body("r1.request.json", request_body(A, "one"))
    with (
        notify_socket() as (receiver, path),
        running_service(
            tmp_path, claude.path, tmp_path / "root", *FAST, env={"NOTIFY_SOCKET": path}
        ) as svc,
    ):
        datagrams = Datagrams(receiver)
        landed = svc.wait_for_log("pass")
        said = "landed 1 body and 1 transcript line of 1 session: "
        assert landed["message"].startswith(f"first scan: {said}"), landed
        assert set(landed) >= PASS_KEYS
        datagrams.wait_for(lambda got: any(b"READY=1" in m for m in got), "READY=1")
        [ready] = [m for m in datagrams.received if b"READY=1" in m]
        assert f"STATUS=last pass (first scan): {said}".encode() in ready, ready
        assert svc.stop() == 0


# -- one message per event, in words on a terminal (item 5) -------------------------------


@pytest.mark.slow
def test_a_conflict_is_said_once_with_what_to_do(tmp_path: Path, run_asz: Any) -> None:
    claude, _expected, env = synthetic(tmp_path)
    root = str(tmp_path / "root")
    assert run_asz("collect", "--once", "--root", root, env=env).returncode == 0
    transcript = sorted((claude / "projects").rglob("*.jsonl"))[0]
    source = transcript.relative_to(claude / "projects").as_posix()
    original = transcript.read_bytes()
    transcript.write_bytes(original[:100])
    for _ in range(2):
        result = run_asz("collect", "--once", "--root", root, env=env)
        assert result.returncode == 1
        said = result.stderr.decode()
        assert said.count(source) == 1, said
        assert said.startswith("asz: 1 conflict: ")
        assert "move the file away" in said and "asz restore" in said
        assert "1 conflict" in result.stdout.decode()
    transcript.write_bytes(original)
    assert run_asz("collect", "--once", "--root", root, env=env).returncode == 0


def _ledger_to_rebuild(tmp_path: Path, run_asz: Any) -> tuple[list[str], dict[str, str]]:
    """A landed root whose provider ledger no longer reads, so the next pass logs a warning
    that it rebuilt it; the arguments of that pass, and its environment."""
    _claude, _expected, env = synthetic(tmp_path)
    root = tmp_path / "root"
    assert run_asz("collect", "--once", "--root", str(root), env=env).returncode == 0
    (root / "_state" / "provider-ledger.sqlite").write_bytes(b"not a database")
    return ["collect", "--once", "--root", str(root)], env


@pytest.mark.parametrize("flag", [[], ["--log-format", "json"]])
def test_off_a_terminal_the_log_is_json(tmp_path: Path, run_asz: Any, flag: list[str]) -> None:
    args, env = _ledger_to_rebuild(tmp_path, run_asz)
    result = run_asz(*args, *flag, env=env)
    [line] = [orjson.loads(line) for line in result.stderr.splitlines()]
    assert (line["event"], line["level"]) == ("provider ledger rebuilt", "warning")
    assert result.stdout.decode().startswith("nothing new: ")


def test_the_log_is_in_words_when_asked(tmp_path: Path, run_asz: Any) -> None:
    args, env = _ledger_to_rebuild(tmp_path, run_asz)
    result = run_asz(*args, "--log-format", "console", env=env)
    [line] = result.stderr.decode().splitlines()
    assert "provider ledger rebuilt" in line and "[warning" in line
    assert "\x1b" not in line, "no colours off a terminal"
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(line)


def test_on_a_terminal_the_log_is_in_words(tmp_path: Path, run_asz: Any) -> None:
    args, env = _ledger_to_rebuild(tmp_path, run_asz)
    code, shown, out = on_a_terminal(args, {**os.environ, **env}, "stderr")
    assert code == 0
    assert "provider ledger rebuilt" in shown and "{" not in shown
    assert out.decode().startswith("nothing new: ")


def test_the_service_logs_in_words_on_a_terminal(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    env = child_env(tmp_path, claude.path)
    args = ["collect", "--root", str(tmp_path / "root"), *FAST]
    code, shown, _err = on_a_terminal(args, env, "stdout", until=b"first scan: landed")
    assert code == 0
    assert "first scan: landed 1 transcript line of 1 session: " in shown
    assert not any(line.startswith("{") for line in shown.splitlines()), shown


def test_the_service_logs_in_words_when_asked(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    log = tmp_path / "log"
    args = ["collect", "--root", str(tmp_path / "root"), *FAST, "--log-format", "console"]
    with log.open("wb") as out:
        process = subprocess.Popen(
            [*asz_executable(), *args], env=child_env(tmp_path, claude.path), stdout=out
        )
        deadline = time.monotonic() + 30
        while b"first scan: landed" not in log.read_bytes() and time.monotonic() < deadline:
            time.sleep(0.05)
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=30) == 0
    lines = log.read_text().splitlines()
    assert any("first scan: landed 1 transcript line of 1 session" in line for line in lines)
    assert not any(line.startswith("{") for line in lines), lines


# -- the demo (item 11) -------------------------------------------------------------------


def test_the_demo_removes_what_it_made(tmp_path: Path, run_asz: Any) -> None:
    temp = tmp_path / "tmp"
    temp.mkdir()
    result = run_asz("demo", env={"TMPDIR": str(temp)})
    assert result.returncode == 0, result.stderr
    assert list(temp.iterdir()) == []
    out = result.stdout.decode()
    assert "removed " in out and "asz demo --root DIR" in out
    assert "next " not in out, "no command to read a root that is gone"


def test_the_demo_lands_in_the_root_it_is_given_and_keeps_only_that(
    tmp_path: Path, run_asz: Any
) -> None:
    temp, root = tmp_path / "tmp", tmp_path / "root"
    temp.mkdir()
    result = run_asz("demo", "--root", str(root), env={"TMPDIR": str(temp)})
    assert result.returncode == 0, result.stderr
    assert list(temp.iterdir()) == []
    report = orjson.loads(run_asz("verify", "--root", str(root), "--json").stdout)
    assert report["sessions"] == 2 and report["problems"] == []
    out = result.stdout.decode()
    assert (
        f"verified     {report['bodies']} bodies and {report['transcript_lines']} transcript "
        f"lines in {report['files']} landed files: all rebuild"
    ) in out
    assert f"collected    landed {report['bodies']} bodies and " in out
    assert f"next         asz view --root {root} " in out

    again = run_asz("demo", "--root", str(root), env={"TMPDIR": str(temp)})
    assert again.returncode == 2
    assert b"is not empty" in again.stderr and again.stdout == b""
    assert list(temp.iterdir()) == []


def test_the_demo_keeps_everything_when_asked(tmp_path: Path, run_asz: Any) -> None:
    keep = tmp_path / "kept"
    result = run_asz("demo", "--keep", str(keep))
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in keep.iterdir()) == ["claude", "root"]
    assert "removed" not in result.stdout.decode()
    shutil.rmtree(keep / "claude")
    assert run_asz("demo", "--keep", str(keep)).returncode == 2
