"""Long work shows its progress on a terminal, and nothing anywhere else.

Each case runs the real ``asz`` with stderr on a pseudo-terminal, then again with stderr on a
pipe: the bar says what is done of the total in files and bytes (ending at the whole), and a
pipe gets no bar, no escape codes, nothing but what the command says anyway.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from support.terminal import on_a_terminal

from asz.store import open_store
from asz.synth import SynthOptions, synthesize

BAR = re.compile(r"(\d+)/(\d+) files")


def _env(tmp_path: Path, claude: Path) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CONFIG_DIR": str(claude),
    }


def _last_bar(shown: str) -> tuple[int, int]:
    counts = BAR.findall(shown)
    assert counts, f"no progress bar on the terminal: {shown[-300:]!r}"
    done, total = counts[-1]
    return int(done), int(total)


@pytest.fixture
def capture(tmp_path: Path) -> tuple[Path, dict[str, Any]]:
    claude = tmp_path / "claude"
    return claude, synthesize(claude, SynthOptions(seed=3, index=True))


def test_a_first_pass_shows_files_and_bytes_on_a_terminal_and_nothing_on_a_pipe(
    tmp_path: Path, capture: tuple[Path, dict[str, Any]], run_asz: Any
) -> None:
    claude, expected = capture
    env = _env(tmp_path, claude)
    root = tmp_path / "root"
    code, shown, said = on_a_terminal(
        ["collect", "--once", "--json", "--root", str(root)], env, "stderr"
    )
    assert code == 0
    counts = json.loads(said)
    transcripts = sum(len(s["transcripts"]) + len(s["sidecars"]) for s in expected["sessions"])
    done, total = _last_bar(shown)
    assert done == total == transcripts + counts["bodies_landed"]
    assert " MB" in shown or " kB" in shown

    again = run_asz("collect", "--once", "--root", str(tmp_path / "other"), env=env)
    assert again.returncode == 0
    assert b"files" not in again.stderr and b"\x1b" not in again.stderr


@pytest.mark.slow
def test_verify_and_restore_show_every_landed_file_read(
    tmp_path: Path, capture: tuple[Path, dict[str, Any]], run_asz: Any
) -> None:
    claude, expected = capture
    env = _env(tmp_path, claude)
    root = tmp_path / "root"
    assert run_asz("collect", "--once", "--root", str(root), env=env).returncode == 0
    store = open_store(root)
    landed = [store.session(s).landed() for s in store.sessions()]

    code, shown, _out = on_a_terminal(["verify", "--root", str(root)], env, "stderr")
    assert code == 0
    assert _last_bar(shown) == (sum(map(len, landed)),) * 2

    session = expected["sessions"][0]["id"]
    target = tmp_path / "restored"
    args = ["restore", "--root", str(root), session, "--to", str(target)]
    code, shown, _out = on_a_terminal(args, env, "stderr")
    assert code == 0
    streams = store.session(session).landed("transcript")
    assert _last_bar(shown) == (len(streams), len(streams))

    quiet = run_asz("verify", "--root", str(root), env=env)
    assert quiet.returncode == 0 and quiet.stderr == b""
