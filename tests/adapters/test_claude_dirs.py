"""Claude Code's directories, wherever they are (issue 13, items 1 and 2), through the real
``asz``: every one of ``~/.config/claude`` and ``~/.claude`` that exists, or those
``CLAUDE_CONFIG_DIR`` names, collected as one; and a one-shot command whose sources or root
are not there says so instead of looking clean.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest
from support.cli import RunAsz

A = "11111111-2222-4333-8444-555555555555"
B = "66666666-7777-4888-8999-aaaaaaaaaaaa"
BODIES = Path("asz") / "provider-bodies"


def line(session: str, number: int, cwd: str = "/home/u/p") -> bytes:
    value = {
        "type": "user",
        "sessionId": session,
        "uuid": f"{session}-{number}",
        "parentUuid": None,
        "cwd": cwd,
        "message": {"role": "user", "content": f"line {number}"},
    }
    return orjson.dumps(value) + b"\n"


def request(session: str, text: str) -> bytes:
    user_id = orjson.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session})
    return orjson.dumps(
        {
            "model": "claude-test",
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "system": [{"type": "text", "text": "x-anthropic-billing-header: cc_prompt_id=p;"}],
            "metadata": {"user_id": user_id.decode()},
        }
    )


def put(path: Path, data: bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """The HOME ``run_asz`` gives the real ``asz``."""
    return tmp_path / "home"


def test_with_xdg_config_home_set_and_absent_the_claude_directory_in_home_is_found(
    run_asz: RunAsz, tmp_path: Path, home: Path
) -> None:
    """``HOME=H XDG_CONFIG_HOME=X asz sources`` looked only in ``X/claude`` (issue 13)."""
    put(home / ".claude" / "projects" / "-p" / f"{A}.jsonl", line(A, 1))
    env = {"XDG_CONFIG_HOME": str(tmp_path / "xdg")}
    result = run_asz("sources", "--root", str(tmp_path / "root"), env=env)
    assert result.returncode == 0, result.stderr
    out = result.stdout.decode()
    assert f"  {home / '.claude' / 'projects'}: 1 session, 1 file" in out
    assert str(tmp_path / "xdg") not in out
    described = json.loads(run_asz("sources", "--json", env=env).stdout)
    assert described["claude_dirs"] == [{"dir": str(home / ".claude"), "exists": True}]


@pytest.mark.slow
def test_both_directories_are_collected_as_one_and_sources_counts_each(
    run_asz: RunAsz, tmp_path: Path, home: Path
) -> None:
    xdg, dot = home / ".config" / "claude", home / ".claude"
    root = tmp_path / "root"
    # Session A: its main transcript under ~/.config/claude, a subagent under ~/.claude, and a
    # stale copy of the main transcript under ~/.claude too (the same path: shadowed).
    main = put(xdg / "projects" / "-p" / f"{A}.jsonl", line(A, 1) + line(A, 2))
    agent = put(dot / "projects" / "-p" / A / "subagents" / "agent-a1.jsonl", line(A, 3))
    stale = put(dot / "projects" / "-p" / f"{A}.jsonl", line(A, 9))
    put(dot / "projects" / "-q" / f"{B}.jsonl", line(B, 1, cwd="/home/u/q"))
    # Bodies in both bodies directories; one name in both, taken from the first.
    put(xdg / BODIES / "r1.request.json", request(A, "one"))
    put(dot / BODIES / "r2.request.json", request(B, "two"))
    put(xdg / BODIES / "r3.request.json", request(A, "first copy"))
    put(dot / BODIES / "r3.request.json", request(A, "second copy"))

    described = json.loads(run_asz("sources", "--json", "--root", str(root)).stdout)
    assert described["claude_dirs"] == [
        {"dir": str(xdg), "exists": True},
        {"dir": str(dot), "exists": True},
    ]
    local = described["claude_code_local"]
    per_dir = [(d["dir"], d["sessions"], d["files"], d["shadowed"]) for d in local["dirs"]]
    assert per_dir == [(str(xdg / "projects"), 1, 1, 0), (str(dot / "projects"), 2, 2, 1)]
    assert (local["sessions"], local["files"], local["shadowed"]) == (2, 3, 1)
    provider = described["claude_code_provider"]
    per_dir = [(d["requests"], d["shadowed"]) for d in provider["dirs"]]
    assert per_dir == [(2, 0), (1, 1)]
    human = run_asz("sources", "--root", str(root)).stdout.decode()
    assert "1 file here also under an earlier directory" in human

    first = run_asz("collect", "--once", "--json", "--root", str(root))
    assert first.returncode == 0, first.stderr
    counts = orjson.loads(first.stdout)
    assert (counts["sessions"], counts["bodies_landed"], counts["conflicts"]) == (2, 3, 0)
    assert counts["transcript_lines_landed"] == 4, "the shadowed copy's line is not landed"
    body = run_asz("body", "--root", str(root), A, "r3.request")
    assert body.stdout == request(A, "first copy")
    restored = tmp_path / "restored"
    assert run_asz("restore", "--root", str(root), A, "--to", str(restored)).returncode == 0
    assert (restored / "-p" / f"{A}.jsonl").read_bytes() == main.read_bytes()
    assert (restored / "-p" / A / "subagents" / "agent-a1.jsonl").read_bytes() == line(A, 3)

    # The shadowed copy changes as it pleases: it is never a conflict, pass after pass.
    stale.write_bytes(line(A, 7))
    (dot / BODIES / "r3.request.json").write_bytes(request(A, "rewritten"))
    agent.write_bytes(line(A, 3) + line(A, 4))
    for expected_lines in (1, 0):
        again = run_asz("collect", "--once", "--json", "--root", str(root))
        counts = orjson.loads(again.stdout)
        assert (again.returncode, counts["conflicts"], counts["errors"]) == (0, 0, [])
        assert counts["transcript_lines_landed"] == expected_lines


def test_claude_config_dir_names_several_directories_separated_by_commas(
    run_asz: RunAsz, tmp_path: Path
) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    put(one / "projects" / "-p" / f"{A}.jsonl", line(A, 1))
    put(two / "projects" / "-q" / f"{B}.jsonl", line(B, 1, cwd="/home/u/q"))
    env = {"CLAUDE_CONFIG_DIR": f"{one},{two},{tmp_path / 'three'}"}
    described = json.loads(run_asz("sources", "--json", env=env).stdout)
    assert [(d["dir"], d["exists"]) for d in described["claude_dirs"]] == [
        (str(one), True),
        (str(two), True),
        (str(tmp_path / "three"), False),
    ]
    human = run_asz("sources", env=env).stdout.decode()
    assert f"  {tmp_path / 'three'} (absent)" in human
    assert f"  {tmp_path / 'three' / 'projects'} (absent)" in human
    done = run_asz("collect", "--once", "--json", "--root", str(tmp_path / "root"), env=env)
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["sessions"] == 2


def test_claude_dir_in_the_config_file_may_be_a_list(run_asz: RunAsz, tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    put(one / "projects" / "-p" / f"{A}.jsonl", line(A, 1))
    put(two / "projects" / "-q" / f"{B}.jsonl", line(B, 1, cwd="/home/u/q"))
    config = tmp_path / "asz.toml"
    config.write_text(f'claude_dir = ["{one}", "{two}"]\n')
    done = run_asz(
        "collect", "--once", "--json", "--config", str(config), "--root", str(tmp_path / "r")
    )
    assert done.returncode == 0, done.stderr
    assert orjson.loads(done.stdout)["sessions"] == 2


# -- nothing there ---------------------------------------------------------------------------


def test_collect_once_with_no_claude_directory_says_so_and_exits_1(
    run_asz: RunAsz, tmp_path: Path
) -> None:
    """``CLAUDE_CONFIG_DIR=/does/not/exist asz collect --once`` printed nothing and exited 0."""
    missing = tmp_path / "does" / "not" / "exist"
    for flags in ([], ["--json"]):
        result = run_asz(
            "collect",
            "--once",
            *flags,
            "--root",
            str(tmp_path / "root"),
            env={"CLAUDE_CONFIG_DIR": str(missing)},
        )
        assert result.returncode == 1
        assert result.stdout == b""
        assert f"no Claude Code directory exists: {missing}".encode() in result.stderr
    home = tmp_path / "home"
    for command in (["collect", "--once"], ["sources"]):
        home_only = run_asz(*command, "--root", str(tmp_path / "root"))
        assert home_only.returncode == 1
        said = f"no Claude Code directory exists: {home / '.config' / 'claude'}, {home / '.claude'}"
        assert said.encode() in home_only.stderr
    listed = run_asz("sources", "--root", str(tmp_path / "root")).stdout.decode()
    assert f"  {home / '.claude'} (absent)" in listed, "the report is still printed"


def test_a_claude_directory_without_projects_or_bodies_says_which_are_absent(
    run_asz: RunAsz, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    claude.mkdir()
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    result = run_asz("collect", "--once", "--root", str(tmp_path / "root"), env=env)
    assert result.returncode == 1
    expected = f"none of these directories exists: {claude / 'projects'}, {claude / BODIES}"
    assert expected.encode() in result.stderr


def test_transcripts_without_a_bodies_directory_is_normal_and_said_nothing_of(
    run_asz: RunAsz, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    put(claude / "projects" / "-p" / f"{A}.jsonl", line(A, 1))
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    result = run_asz("collect", "--once", "--json", "--root", str(tmp_path / "root"), env=env)
    assert result.returncode == 0
    assert result.stderr == b""
    assert orjson.loads(result.stdout)["transcript_lines_landed"] == 1
