"""``asz service install --web``: the web view's unit and agent, as far as a test may go
(``--dry-run`` through the real executable; the unit checked by ``systemd-analyze verify``,
the agent by plistlib), and the shipped templates in ``deploy/``."""

from __future__ import annotations

import os
import plistlib
import subprocess
from pathlib import Path

from support.cli import asz_executable
from support.paths import REPO
from support.systemd import systemd_verify

from asz.config import Config
from asz.daemon.install import (
    WEB,
    WEB_LABEL,
    Launchd,
    Systemd,
    asz_command,
    render_plist,
    render_unit,
    service_command,
)

DEPLOY_UNIT = REPO / "deploy" / "systemd" / "asz-web.service"
DEPLOY_PLIST = REPO / "deploy" / "launchd" / f"{WEB_LABEL}.plist"


def test_the_shipped_web_unit_and_agent_are_what_install_writes_less_the_paths() -> None:
    assert DEPLOY_UNIT.read_text() == render_unit("%h/.local/bin/asz serve", {}, WEB.template)
    assert DEPLOY_PLIST.read_bytes() == render_plist(
        ["/Users/you/.local/bin/asz", "serve"],
        {},
        Path("/Users/you/Library/Logs/asz"),
        WEB_LABEL,
        "asz-web",
    )


def test_install_web_dry_run_writes_the_web_unit_beside_the_collector_s(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    result = subprocess.run(
        [
            *asz_executable(),
            "service",
            "install",
            "--web",
            "--dry-run",
            "--root",
            str(tmp_path / "root"),
        ],
        env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    unit_path = home / ".config" / "systemd" / "user" / "asz-web.service"
    assert f"would write {unit_path}" in result.stdout
    exec_start = next(line for line in result.stdout.splitlines() if line.startswith("ExecStart="))
    words = exec_start.removeprefix("ExecStart=").split()
    assert os.path.isabs(words[0]) and words[1:] == ["serve", "--root", str(tmp_path / "root")]
    assert "Environment=" not in result.stdout
    assert "would run systemctl --user enable --now asz-web.service" in result.stdout
    assert not (home / ".config").exists()


def test_the_web_unit_passes_verify_and_names_the_token_file_it_found(tmp_path: Path) -> None:
    home = tmp_path / "home"
    token_file = home / ".config" / "asz" / "web-token"
    token_file.parent.mkdir(parents=True)
    token_file.write_text("x" * 32)
    config = Config(root=tmp_path / "a root", claude_dirs=(tmp_path / "claude",))
    plan = Systemd({"HOME": str(home)}, WEB).install(config, asz_command())
    ((path, data),) = plan.writes
    assert path == home / ".config" / "systemd" / "user" / "asz-web.service"
    assert f"--token-file {token_file}" in data.decode()
    unit = tmp_path / "asz-web.service"
    unit.write_bytes(data)
    result = systemd_verify(unit, home, tmp_path)
    assert (result.returncode, result.stderr) == (0, "")


def test_the_web_agent_runs_serve_and_logs_apart(tmp_path: Path) -> None:
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    plan = Launchd({"HOME": str(tmp_path)}, uid=501, kind=WEB).install(config, asz_command())
    ((path, data),) = plan.writes
    assert path.name == f"{WEB_LABEL}.plist"
    agent = plistlib.loads(data)
    assert agent["ProgramArguments"] == [*asz_command(), "serve", "--root", str(config.root)]
    assert agent["StandardOutPath"].endswith("asz-web.log")
    assert "EnvironmentVariables" not in agent


def test_uninstall_and_status_with_web_name_the_web_unit(tmp_path: Path, capsys) -> None:
    config = Config(root=tmp_path / "root", claude_dirs=(tmp_path / "claude",))
    env = {"HOME": str(tmp_path)}
    assert service_command("uninstall", config, True, "linux", env, web=True) == 0
    assert "systemctl --user disable --now asz-web.service" in capsys.readouterr().out
    assert service_command("status", config, True, "linux", env, web=True) == 0
    assert "status --no-pager asz-web.service" in capsys.readouterr().out


def test_an_archive_root_installs_the_web_view_over_it_and_refuses_the_collector(
    tmp_path: Path,
) -> None:
    home = tmp_path / "home"
    home.mkdir()
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home)}
    remote = "s3://team-archive/asz"

    def install(*flags: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*asz_executable(), "service", "install", *flags, "--dry-run", "--root", remote],
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    web = install("--web")
    assert web.returncode == 0, web.stderr
    exec_start = next(line for line in web.stdout.splitlines() if line.startswith("ExecStart="))
    assert exec_start.split()[1:] == ["serve", "--root", remote]
    collector = install()
    assert collector.returncode == 2
    assert "the collector service works on a storage root directory" in collector.stderr
    assert not (home / ".config").exists()
