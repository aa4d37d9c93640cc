"""The command line contract: help for every command, and exit codes 0 / 1 / 2."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.paths import FIXTURE_ROOT, FIXTURE_SESSION

from asz.commands import build_parser, command_names

COMMANDS = command_names()


@pytest.mark.slow
def test_every_command_has_help(run_asz) -> None:
    top = run_asz("--help")
    assert top.returncode == 0
    for name in COMMANDS:
        assert name in top.stdout.decode()
        result = run_asz(name, "--help")
        assert result.returncode == 0, name
        assert b"usage: asz " + name.encode() in result.stdout


@pytest.mark.parametrize(
    "args",
    [
        (),
        ("no-such-command",),
        ("collect", "--no-such-flag"),
        ("body", "only-one-arg"),
        ("collect", "--batch-window", "-1"),
    ],
)
def test_usage_errors_exit_2(run_asz, args) -> None:
    assert run_asz(*args).returncode == 2


def test_a_session_id_that_is_not_one_is_a_usage_error(run_asz, tmp_path: Path) -> None:
    result = run_asz("--root", str(tmp_path / "root"), "body", "../etc", "x.request")
    assert result.returncode == 2
    assert b"not a Claude Code session id" in result.stderr
    assert not (tmp_path / "etc").exists()


def test_a_bad_config_file_exits_2_naming_key_and_file(run_asz, tmp_path: Path) -> None:
    config = tmp_path / "asz.toml"
    config.write_text("[service]\nbatch_windw = 3\n")
    result = run_asz("verify", "--config", str(config))
    assert result.returncode == 2
    assert b"service.batch_windw" in result.stderr
    assert str(config).encode() in result.stderr


def test_verify_of_a_missing_root_exits_2_and_of_an_empty_one_says_it_holds_nothing(
    run_asz, tmp_path: Path
) -> None:
    """A typo in --root is not a root that verifies (issue 13)."""
    typo = tmp_path / "typo"
    for flags in ([], ["--json"]):
        result = run_asz("--root", str(typo), "verify", *flags)
        assert result.returncode == 2
        assert result.stdout == b""
        assert f"no storage root at {typo}".encode() in result.stderr
    empty = tmp_path / "empty"
    empty.mkdir()
    result = run_asz("verify", "--root", str(empty))
    assert result.returncode == 0
    assert result.stdout.decode() == (
        f"the root {empty} holds no landed session: nothing to verify\n"
    )
    result = run_asz("verify", "--root", str(empty), "--json")
    assert result.returncode == 0
    assert json.loads(result.stdout)["sessions"] == 0


def test_a_session_or_body_that_is_not_there_exits_2(run_asz, tmp_path: Path) -> None:
    """Not found is a usage error (2), like a malformed id; 1 is for what failed."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    unknown = "11111111-2222-4333-8444-555555555555"
    result = run_asz("body", "--root", str(root), unknown, "x.request")
    assert result.returncode == 2
    assert f"no session {unknown}".encode() in result.stderr
    result = run_asz("body", "--root", str(root), FIXTURE_SESSION, "x.request")
    assert result.returncode == 2
    assert b"holds no body x.request" in result.stderr


def _parsers(parser: argparse.ArgumentParser, path: str = "asz") -> Iterator[tuple[str, Any]]:
    """Every parser of the command line, each action of a command included."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_argument_says_what_it_is_and_every_default_is_named() -> None:
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._VersionAction):
                continue
            if isinstance(action, argparse._SubParsersAction):
                continue
            name = "/".join(action.option_strings) or action.dest
            assert action.help and len(action.help) > 10, f"{path} {name} has no help"
            optional = action.option_strings and not action.required
            takes_value = action.nargs != 0
            if optional and takes_value:
                assert "default" in action.help, f"{path} {name} does not name its default"


def test_service_install_help_shows_the_install_options(run_asz) -> None:
    result = run_asz("service", "install", "--help")
    assert result.returncode == 0
    out = result.stdout.decode()
    assert out.startswith("usage: asz service install")
    assert "--dry-run" in out and "--root" in out


@pytest.mark.parametrize(
    "command", [["view"], ["cache"], ["verify"], ["restore", "--to", "out"], ["body", "x.request"]]
)
def test_every_reading_command_exits_2_for_a_session_that_is_not_there(
    run_asz, tmp_path: Path, command: list[str]
) -> None:
    unknown = "11111111-2222-4333-8444-555555555555"
    args = [command[0], "--root", str(FIXTURE_ROOT), unknown, *command[1:]]
    result = run_asz(*args, cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert f"no session {unknown}".encode() in result.stderr
    assert not (tmp_path / "out").exists()


def test_the_view_names_a_damaged_transcript_file_among_its_problems(
    run_asz, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    damaged = sorted((root / FIXTURE_SESSION / "transcripts").rglob("transcript-*.asz"))[0]
    damaged.write_bytes(damaged.read_bytes()[:-9])
    result = run_asz("view", "--root", str(root), FIXTURE_SESSION, "--json")
    problems = json.loads(result.stdout)["problems"]
    assert any(problem.startswith(f"{damaged}: ") for problem in problems), problems
    timeline = run_asz("view", "--root", str(root), FIXTURE_SESSION)
    assert timeline.returncode == 1
    assert timeline.stderr.decode().count(f"asz: problem: {damaged}: ") == 1
    assert "1 problem met reading this session (on stderr" in timeline.stdout.decode()
    assert str(damaged) not in timeline.stdout.decode(), "said once, on stderr"


def test_sources_names_only_real_session_ids(run_asz, tmp_path: Path) -> None:
    bodies = tmp_path / "claude" / "asz" / "provider-bodies"
    bodies.mkdir(parents=True)
    good = "11111111-2222-4333-8444-555555555555"
    for name, session in (("a", good), ("b", "../x"), ("c", "\x1b[2J")):
        user_id = json.dumps({"session_id": session})
        body = {"model": "m", "messages": [], "metadata": {"user_id": user_id}}
        (bodies / f"{name}.request.json").write_text(json.dumps(body))
    (bodies / "req_1.response.json").write_text('{"id":"msg_1"}')
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    result = run_asz("sources", "--root", str(tmp_path / "root"), env=env)
    assert result.returncode == 0
    out = result.stdout.decode()
    assert "3 requests, 1 response" in out
    assert f"{good}  1 request" in out
    assert "\x1b" not in out
    assert "../x" not in out
    assert "1 request name a session id that is not in Claude Code's form" in out


@pytest.mark.parametrize(
    "command",
    [
        ["collect", "--once"],
        ["collect"],
        ["sessions"],
        ["cache"],
        ["cache", FIXTURE_SESSION],
        ["view", FIXTURE_SESSION],
        ["body", FIXTURE_SESSION, "x.request"],
        ["restore", FIXTURE_SESSION, "--to", "out"],
        ["verify"],
        ["serve", "--listen", "127.0.0.1:0"],
        ["push"],
        ["redact", "--dry-run"],
        ["demo"],
        ["service", "install", "--dry-run"],
        ["service", "install", "--dry-run", "--web"],
    ],
)
def test_a_root_that_is_a_file_is_said_in_one_line_and_exit_2(
    run_asz, tmp_path: Path, command: list[str]
) -> None:
    """Every command, the service and the demo among them, refuses a root that is a file
    before it reads or writes anything, rather than ending in a traceback or calling it
    missing."""
    claude = tmp_path / "claude"
    (claude / "projects").mkdir(parents=True)
    a_file = tmp_path / "root"
    a_file.write_bytes(b"not a root\n")
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    result = run_asz(*command, "--root", str(a_file), env=env, cwd=tmp_path, timeout=30)
    assert result.returncode == 2, result.stderr
    (said,) = result.stderr.decode().splitlines()
    assert f"{a_file} is not a directory" in said, said
    assert a_file.read_bytes() == b"not a root\n"
    assert not (tmp_path / "out").exists()


def test_the_demo_refuses_a_keep_directory_that_is_a_file(run_asz, tmp_path: Path) -> None:
    a_file = tmp_path / "kept"
    a_file.write_bytes(b"")
    result = run_asz("demo", "--keep", str(a_file))
    assert result.returncode == 2
    assert result.stderr.decode() == (
        f"asz demo: {a_file} is not a directory; name a new or empty directory\n"
    )


def test_a_session_of_a_missing_root_says_the_root_is_missing(run_asz, tmp_path: Path) -> None:
    """A typo in --root is what to fix, not the session id."""
    missing = tmp_path / "typo"
    for command in (["view"], ["cache"], ["verify"], ["body", "x.request"]):
        args = [command[0], "--root", str(missing), FIXTURE_SESSION, *command[1:]]
        result = run_asz(*args)
        assert result.returncode == 2, command
        assert result.stderr.decode() == f"asz: there is no storage root at {missing}\n", command


def test_sources_with_no_claude_code_directory_suggests_the_documented_one(
    run_asz, tmp_path: Path
) -> None:
    """Neither ~/.config/claude nor ~/.claude exists: the bodies directory to set is the one
    under ~/.claude, where Claude Code's documentation (and the README) put its settings."""
    result = run_asz("sources", "--root", str(tmp_path / "root"))
    home = tmp_path / "home"
    wanted = f"OTEL_LOG_RAW_API_BODIES=file:{home / '.claude' / 'asz' / 'provider-bodies'}"
    assert wanted in result.stdout.decode().splitlines()[-1], result.stdout


@pytest.mark.parametrize("sessions", [1, 2])
def test_synth_says_what_it_wrote_in_words(run_asz, tmp_path: Path, sessions: int) -> None:
    out = tmp_path / "claude"
    result = run_asz("synth", str(out), "--sessions", str(sessions))
    assert result.returncode == 0, result.stderr
    totals = json.loads((out / "expected.json").read_bytes())["totals"]
    session_word = "session" if sessions == 1 else "sessions"
    assert result.stdout.decode() == (
        f"wrote {totals['requests']} requests, {totals['responses']} responses and the "
        f"transcripts of {sessions} {session_word} under {out}\n"
    )
