"""The systemd unit, the launchd agent, and ``asz service`` as far as a test may go.

A test cannot install a service into the machine's manager, so ``install`` is run with
``--dry-run`` through the real executable, and what it would write is checked the way the
manager would check it: ``systemd-analyze verify`` for the unit, plistlib for the agent.
"""

from __future__ import annotations

import os
import plistlib
import subprocess
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st
from support.cli import asz_executable
from support.paths import REPO
from support.systemd import systemd_verify

from asz.config import Config
from asz.daemon.install import (
    LABEL,
    Launchd,
    Systemd,
    asz_command,
    render_plist,
    render_unit,
    service_command,
    systemd_quote,
)

DEPLOY_UNIT = REPO / "deploy" / "systemd" / "asz.service"
DEPLOY_PLIST = REPO / "deploy" / "launchd" / f"{LABEL}.plist"


def test_the_shipped_unit_is_the_one_install_writes_less_the_paths() -> None:
    assert DEPLOY_UNIT.read_text() == render_unit("%h/.local/bin/asz collect", {})


def test_the_shipped_unit_passes_systemd_analyze_verify(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".local" / "bin").mkdir(parents=True)
    (home / ".local" / "bin" / "asz").symlink_to(asz_executable()[0])
    result = systemd_verify(DEPLOY_UNIT, home, tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def test_the_unit_install_writes_passes_verify_with_odd_paths(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    odd = tmp_path / "a dir with 100% spaces and $signs"
    config = Config(root=odd / "root", claude_dirs=(odd / "claude",))
    plan = Systemd({"HOME": str(home)}).install(config, asz_command())
    ((path, data),) = plan.writes
    assert path == home / ".config" / "systemd" / "user" / "asz.service"
    unit = tmp_path / "asz.service"
    unit.write_bytes(data)
    result = systemd_verify(unit, home, tmp_path)
    assert (result.returncode, result.stderr) == (0, "")
    text = data.decode()
    assert "Type=notify" in text and "WatchdogSec=" in text
    assert systemd_quote(str(odd / "root")) in text
    exec_start = next(line for line in text.splitlines() if line.startswith("ExecStart="))
    assert "100%%" in exec_start and "$$signs" in exec_start
    environment = next(line for line in text.splitlines() if line.startswith("Environment="))
    assert environment == f'Environment="CLAUDE_CONFIG_DIR={odd}/claude"'.replace("%", "%%")


def test_install_dry_run_says_what_it_would_write_and_run_and_does_nothing(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "CLAUDE_CONFIG_DIR": str(tmp_path / "claude"),
    }
    result = subprocess.run(
        [*asz_executable(), "service", "install", "--dry-run", "--root", str(tmp_path / "root")],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    unit_path = home / ".config" / "systemd" / "user" / "asz.service"
    assert f"would write {unit_path}" in result.stdout
    exec_start = next(line for line in result.stdout.splitlines() if line.startswith("ExecStart="))
    program = exec_start.removeprefix("ExecStart=").split()[0]
    assert os.path.isabs(program) and os.access(program, os.X_OK)
    assert f"--root {tmp_path / 'root'}" in exec_start
    assert f"Environment=CLAUDE_CONFIG_DIR={tmp_path / 'claude'}" in result.stdout
    assert "would run systemctl --user daemon-reload" in result.stdout
    assert "would run systemctl --user enable --now asz.service" in result.stdout
    assert not unit_path.exists() and not (home / ".config").exists()


def install_dry_run(tmp_path: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """``asz service install --dry-run`` through the real executable, with only ``env``."""
    return subprocess.run(
        [*asz_executable(), "service", "install", "--dry-run", "--root", str(tmp_path / "root")],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_install_pins_every_claude_directory_it_found_and_only_those(tmp_path: Path) -> None:
    """XDG_CONFIG_HOME set while only ~/.claude exists: the unit names ~/.claude (issue 13);
    with both there, it names both, the XDG one first."""
    home, config_home = tmp_path / "home", tmp_path / "xdg"
    (home / ".claude").mkdir(parents=True)
    env = {"HOME": str(home), "XDG_CONFIG_HOME": str(config_home)}
    result = install_dry_run(tmp_path, env)
    assert result.returncode == 0, result.stderr
    assert f"Environment=CLAUDE_CONFIG_DIR={home / '.claude'}\n" in result.stdout
    (config_home / "claude").mkdir(parents=True)
    result = install_dry_run(tmp_path, env)
    both = f"{config_home / 'claude'},{home / '.claude'}"
    assert f"Environment=CLAUDE_CONFIG_DIR={both}\n" in result.stdout


def test_the_agent_carries_every_directory_and_a_comma_in_one_is_refused(
    tmp_path: Path, capsys
) -> None:
    dirs = (tmp_path / "one", tmp_path / "two")
    config = Config(root=tmp_path / "root", claude_dirs=dirs)
    plan = Launchd({"HOME": str(tmp_path)}, uid=501).install(config, asz_command())
    agent = plistlib.loads(plan.writes[0][1])
    assert agent["EnvironmentVariables"] == {"CLAUDE_CONFIG_DIR": f"{dirs[0]},{dirs[1]}"}
    odd = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "a,b",))
    env = {"HOME": str(tmp_path)}
    assert service_command("install", odd, dry_run=True, platform="darwin", env=env) == 1
    assert "a comma in the name cannot be passed in CLAUDE_CONFIG_DIR" in capsys.readouterr().err
    assert not (tmp_path / "Library").exists()


def test_uninstall_and_status_dry_runs_name_their_commands(tmp_path: Path, capsys) -> None:
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    env = {"HOME": str(tmp_path)}
    assert service_command("uninstall", config, dry_run=True, platform="linux", env=env) == 0
    out = capsys.readouterr().out
    assert "would run systemctl --user disable --now asz.service" in out
    assert "would remove" in out
    assert service_command("status", config, dry_run=True, platform="linux", env=env) == 0
    assert "would run systemctl --user status --no-pager asz.service" in capsys.readouterr().out


def test_an_unknown_platform_is_refused(tmp_path: Path, capsys) -> None:
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    assert service_command("install", config, dry_run=True, platform="sunos5", env={}) == 1
    assert "no per-user service manager" in capsys.readouterr().err


def test_the_shipped_plist_parses_and_holds_what_launchd_needs() -> None:
    agent = plistlib.loads(DEPLOY_PLIST.read_bytes())
    for key in ("RunAtLoad", "KeepAlive", "StandardOutPath", "StandardErrorPath"):
        assert key in agent, key
    assert agent["Label"] == LABEL and agent["RunAtLoad"] is True
    assert agent["ProgramArguments"][1:] == ["collect"]
    assert DEPLOY_PLIST.read_bytes() == render_plist(
        ["/Users/you/.local/bin/asz", "collect"], {}, Path("/Users/you/Library/Logs/asz")
    )


def test_the_agent_install_writes_runs_this_asz_with_absolute_paths(tmp_path: Path) -> None:
    home = tmp_path / "Users" / "me"
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    manager = Launchd({"HOME": str(home)}, uid=501)
    plan = manager.install(config, asz_command())
    ((path, data),) = plan.writes
    assert path == home / "Library" / "LaunchAgents" / f"{LABEL}.plist"
    agent = plistlib.loads(data)
    assert agent["ProgramArguments"] == [
        *asz_command(),
        "collect",
        "--root",
        str(tmp_path / "root"),
    ]
    assert all(os.path.isabs(agent[key]) for key in ("StandardOutPath", "StandardErrorPath"))
    assert agent["EnvironmentVariables"] == {"CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}
    assert plan.directories == [home / "Library" / "Logs" / "asz"]
    assert [command.argv[:2] for command in plan.commands] == [
        ["launchctl", "bootout"],
        ["launchctl", "bootstrap"],
    ]
    assert plan.commands[1].argv[2] == "gui/501"


def test_the_agent_dry_run_prints_the_plist(tmp_path: Path, capsys) -> None:
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    env = {"HOME": str(tmp_path)}
    assert service_command("install", config, dry_run=True, platform="darwin", env=env) == 0
    out = capsys.readouterr().out
    assert "<key>RunAtLoad</key>" in out and "would run launchctl bootstrap" in out
    assert not (tmp_path / "Library").exists()


@given(st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc")), min_size=1))
def test_a_quoted_word_is_one_word_with_specifiers_and_variables_escaped(word: str) -> None:
    quoted = systemd_quote(word)
    if quoted.startswith('"'):
        inner = quoted[1:-1]
        assert quoted.endswith('"')
        assert inner.replace("\\\\", "").replace('\\"', "").count('"') == 0
    else:
        assert not any(char in quoted for char in " \t\"'\\;")
    unescaped = quoted.replace("%%", "").replace("$$", "")
    assert "%" not in unescaped and "$" not in unescaped
