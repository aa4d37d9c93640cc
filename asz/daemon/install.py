"""``asz service install|uninstall|status``: the collector (and, with ``--web``, the web view)
as a per-user service.

The unit (systemd, Linux) or agent (launchd, macOS) runs the very ``asz`` that installed it,
by absolute path, with the storage root, config file and Claude Code directories that this
command resolved, so the service collects what ``asz collect`` run here would collect:
neither manager gives a service the login shell's environment. Each step is printed before it
is taken, and ``--dry-run`` prints the same steps and takes none.
"""

from __future__ import annotations

import http.client
import os
import plistlib
import subprocess
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from asz.config import Config
from asz.daemon.http import ListenError, parse_listen
from asz.exits import EXIT_FAILED, EXIT_OK

__all__ = [
    "COLLECTOR",
    "LABEL",
    "UNIT_NAME",
    "WEB",
    "WEB_LABEL",
    "WEB_UNIT_NAME",
    "Command",
    "Launchd",
    "Manager",
    "Plan",
    "ServiceKind",
    "Systemd",
    "UnpinnableDir",
    "asz_command",
    "collect_arguments",
    "manager_for",
    "render_plist",
    "render_unit",
    "serve_arguments",
    "service_command",
    "service_environment",
    "systemd_assignment",
    "systemd_quote",
]

UNIT_NAME = "asz.service"
LABEL = "io.asz.collect"
WEB_UNIT_NAME = "asz-web.service"
WEB_LABEL = "io.asz.web"

_UNIT_TEMPLATE = """\
[Unit]
Description=asz: keep Claude Code's provider bodies and transcripts

[Service]
Type=notify
NotifyAccess=main
ExecStart={exec_start}
{environment}\
Restart=on-failure
RestartSec=5
# The first scan of a large backlog can take long; READY is sent when it is done.
TimeoutStartSec=infinity
# A stop lets the pass in flight finish.
TimeoutStopSec=120
WatchdogSec=60
UMask=0077
Nice=10
NoNewPrivileges=yes

[Install]
WantedBy=default.target
"""


_WEB_UNIT_TEMPLATE = """\
[Unit]
Description=asz: a read-only web view of the kept bodies and transcripts

[Service]
Type=simple
ExecStart={exec_start}
{environment}\
Restart=on-failure
RestartSec=5
TimeoutStopSec=30
UMask=0077
NoNewPrivileges=yes

[Install]
WantedBy=default.target
"""


@dataclass(frozen=True, slots=True)
class ServiceKind:
    """One service asz installs: its unit's name, its agent's label and log, and what it
    runs."""

    unit_name: str
    label: str
    log_name: str
    template: str
    arguments: Callable[[Config, Mapping[str, str]], list[str]]
    environment: Callable[[Config], dict[str, str]]


def asz_command() -> list[str]:
    """How to start the ``asz`` that is running now, by absolute path.

    The console script when started as one (a pipx or virtualenv install), else this
    interpreter with ``-m asz``, which finds the same package.
    """
    script = Path(sys.argv[0])
    if script.name == "asz" and script.is_file():
        return [os.path.abspath(script)]
    return [os.path.abspath(sys.executable), "-m", "asz"]


def collect_arguments(config: Config) -> list[str]:
    arguments = ["collect", "--root", str(config.root)]
    if config.source_file is not None:
        arguments += ["--config", str(Path(config.source_file).absolute())]
    return arguments


def serve_arguments(config: Config, env: Mapping[str, str]) -> list[str]:
    """``asz serve`` on this root and config, at its default address; with the token file
    named when one is where ``asz serve`` looks for it, since the service's environment may
    not say the same ``XDG_CONFIG_HOME``."""
    from asz.web.access import default_token_file

    arguments = ["serve", "--root", config.location]
    if config.source_file is not None:
        arguments += ["--config", str(Path(config.source_file).absolute())]
    token_file = default_token_file(env)
    if token_file.is_file():
        arguments += ["--token-file", str(token_file.absolute())]
    return arguments


def service_environment(config: Config) -> dict[str, str]:
    """Pins the Claude Code directories resolved here, comma-separated: a config file naming
    them wins over the variable anyway, so this changes nothing but the default. A directory
    named in the variable is read whether or not it exists, so the service keeps watching one
    that was absent at install time. A name holding a comma cannot be carried there
    (``UnpinnableDir``)."""
    for directory in config.claude_dirs:
        if "," in str(directory):
            raise UnpinnableDir(
                f"{directory}: a comma in the name cannot be passed in CLAUDE_CONFIG_DIR; "
                "name it in the config file's claude_dir instead"
            )
    return {"CLAUDE_CONFIG_DIR": ",".join(map(str, config.claude_dirs))}


class UnpinnableDir(ValueError):
    """A Claude Code directory the service's environment cannot name."""


COLLECTOR = ServiceKind(
    UNIT_NAME,
    LABEL,
    "asz",
    _UNIT_TEMPLATE,
    lambda config, _env: collect_arguments(config),
    service_environment,
)
WEB = ServiceKind(
    WEB_UNIT_NAME, WEB_LABEL, "asz-web", _WEB_UNIT_TEMPLATE, serve_arguments, lambda _config: {}
)
"""``asz serve`` reads the root only: it needs no Claude Code directory pinned."""


def systemd_quote(argument: str) -> str:
    """One ExecStart= word: ``%`` and ``$`` doubled, quoted when it holds anything special."""
    return _quoted(argument.replace("%", "%%").replace("$", "$$"))


def systemd_assignment(key: str, value: str) -> str:
    """One Environment= assignment; systemd expands specifiers there but not variables."""
    return _quoted(f"{key}={value}".replace("%", "%%"))


def _quoted(escaped: str) -> str:
    if escaped and not any(char in escaped for char in " \t\n\"'\\;"):
        return escaped
    return '"' + escaped.replace("\\", "\\\\").replace('"', '\\"') + '"'


def render_unit(
    exec_start: str, environment: Mapping[str, str], template: str = _UNIT_TEMPLATE
) -> str:
    """The user unit; ``exec_start`` is the ExecStart= line's value, already quoted."""
    lines = "".join(
        "Environment=" + systemd_assignment(key, value) + "\n"
        for key, value in sorted(environment.items())
    )
    return template.format(exec_start=exec_start, environment=lines)


def render_plist(
    program: Sequence[str],
    environment: Mapping[str, str],
    log_dir: Path,
    label: str = LABEL,
    log_name: str = "asz",
) -> bytes:
    """The LaunchAgent: started at login, started again when it exits with a failure."""
    agent: dict[str, object] = {
        "Label": label,
        "ProgramArguments": list(program),
        "RunAtLoad": True,
        "KeepAlive": {"SuccessfulExit": False},
        "ProcessType": "Background",
        "ExitTimeOut": 120,
        "StandardOutPath": str(log_dir / f"{log_name}.log"),
        "StandardErrorPath": str(log_dir / f"{log_name}.err.log"),
    }
    if environment:
        agent["EnvironmentVariables"] = dict(environment)
    return plistlib.dumps(agent)


@dataclass(frozen=True, slots=True)
class Command:
    argv: list[str]
    may_fail: bool = False
    """A failure is reported and the plan goes on (unloading what may not be loaded)."""


@dataclass(slots=True)
class Plan:
    """Steps, in order: directories to make, files to write and remove, commands to run."""

    directories: list[Path] = field(default_factory=list)
    writes: list[tuple[Path, bytes]] = field(default_factory=list)
    removes: list[Path] = field(default_factory=list)
    commands: list[Command] = field(default_factory=list)


class Manager(Protocol):
    """The per-user service manager of this platform."""

    unit_path: Path

    def install(self, config: Config, command: Sequence[str]) -> Plan: ...

    def uninstall(self) -> Plan: ...

    def status(self) -> Plan: ...


class Systemd:
    def __init__(self, env: Mapping[str, str], kind: ServiceKind = COLLECTOR) -> None:
        config_home = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME", "~")) / ".config")
        self.unit_path = Path(config_home).expanduser() / "systemd" / "user" / kind.unit_name
        self.kind = kind
        self.env = env

    def install(self, config: Config, command: Sequence[str]) -> Plan:
        kind = self.kind
        words = [*command, *kind.arguments(config, self.env)]
        unit = render_unit(
            " ".join(map(systemd_quote, words)), kind.environment(config), kind.template
        )
        plan = Plan(writes=[(self.unit_path, unit.encode())])
        plan.commands.append(_systemctl("daemon-reload"))
        if _differs(self.unit_path, unit.encode()):
            # A running service keeps its old unit until restarted; try-restart leaves a
            # stopped one stopped, and enable --now starts it.
            plan.commands.append(_systemctl("try-restart", kind.unit_name))
        plan.commands.append(_systemctl("enable", "--now", kind.unit_name))
        return plan

    def uninstall(self) -> Plan:
        return Plan(
            removes=[self.unit_path],
            commands=[
                _systemctl("disable", "--now", self.kind.unit_name, may_fail=True),
                _systemctl("daemon-reload"),
            ],
        )

    def status(self) -> Plan:
        return Plan(
            commands=[_systemctl("status", "--no-pager", self.kind.unit_name, may_fail=True)]
        )


class Launchd:
    def __init__(self, env: Mapping[str, str], uid: int, kind: ServiceKind = COLLECTOR) -> None:
        home = Path(env.get("HOME", "~")).expanduser()
        self.unit_path = home / "Library" / "LaunchAgents" / f"{kind.label}.plist"
        self.log_dir = home / "Library" / "Logs" / "asz"
        self.domain = f"gui/{uid}"
        self.service = f"{self.domain}/{kind.label}"
        self.kind = kind
        self.env = env

    def install(self, config: Config, command: Sequence[str]) -> Plan:
        kind = self.kind
        program = [*command, *kind.arguments(config, self.env)]
        agent = render_plist(
            program, kind.environment(config), self.log_dir, kind.label, kind.log_name
        )
        return Plan(
            # launchd opens the log files but does not make their directory.
            directories=[self.log_dir],
            writes=[(self.unit_path, agent)],
            # bootout fails when the agent is not loaded; bootstrap then loads the plist
            # as written now.
            commands=[
                Command(["launchctl", "bootout", self.service], may_fail=True),
                Command(["launchctl", "bootstrap", self.domain, str(self.unit_path)]),
            ],
        )

    def uninstall(self) -> Plan:
        return Plan(
            removes=[self.unit_path],
            commands=[Command(["launchctl", "bootout", self.service], may_fail=True)],
        )

    def status(self) -> Plan:
        return Plan(commands=[Command(["launchctl", "print", self.service], may_fail=True)])


def manager_for(platform: str, env: Mapping[str, str], kind: ServiceKind = COLLECTOR) -> Manager:
    if platform == "darwin":
        return Launchd(env, os.getuid(), kind)
    if platform.startswith("linux"):
        return Systemd(env, kind)
    raise OSError(f"no per-user service manager asz knows on {platform}")


def service_command(
    action: str,
    config: Config,
    dry_run: bool = False,
    platform: str = sys.platform,
    env: Mapping[str, str] | None = None,
    *,
    web: bool = False,
) -> int:
    """Runs ``asz service ACTION`` (of the web view's service with ``web``); prints each
    step, and with ``dry_run`` takes none."""
    try:
        manager = manager_for(
            platform, os.environ if env is None else env, WEB if web else COLLECTOR
        )
    except OSError as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    if action == "install":
        try:
            plan = manager.install(config, asz_command())
        except UnpinnableDir as err:
            print(f"asz: {err}", file=sys.stderr)
            return EXIT_FAILED
    elif action == "uninstall":
        plan = manager.uninstall()
    else:
        print(f"unit: {manager.unit_path} ({_presence(manager.unit_path)})")
        plan = manager.status()
    code = _carry_out(plan, dry_run)
    if action == "status" and not dry_run and not web:
        code = max(code, _print_health(config.service.listen))
    return code


def _carry_out(plan: Plan, dry_run: bool) -> int:
    prefix = "would " if dry_run else ""
    for directory in plan.directories:
        print(f"{prefix}make {directory}")
        if not dry_run:
            directory.mkdir(parents=True, exist_ok=True)
    for path, data in plan.writes:
        print(f"{prefix}write {path}")
        if dry_run:
            sys.stdout.write(data.decode())
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
    for path in plan.removes:
        print(f"{prefix}remove {path}")
        if not dry_run:
            path.unlink(missing_ok=True)
    for command in plan.commands:
        print(f"{prefix}run {' '.join(command.argv)}")
        if dry_run:
            continue
        try:
            returncode = subprocess.run(command.argv, check=False).returncode
        except FileNotFoundError:
            returncode = 127
        if returncode != 0:
            print(f"  exited {returncode}")
            if not command.may_fail:
                return EXIT_FAILED
    return EXIT_OK


def _print_health(listen: str) -> int:
    try:
        host, port = parse_listen(listen)
    except ListenError as err:
        print(f"health: {err}")
        return EXIT_FAILED
    if port == 0:
        print("health: listen picks a free port, so there is no address to ask")
        return EXIT_FAILED
    connection = http.client.HTTPConnection(host, port, timeout=3)
    try:
        connection.request("GET", "/healthz")
        response = connection.getresponse()
        body = response.read().decode(errors="replace")
    except OSError as err:
        print(f"health: no answer from {host}:{port} ({err})")
        return EXIT_FAILED
    finally:
        connection.close()
    print(f"health: {response.status} {body}")
    return EXIT_OK if response.status == 200 else EXIT_FAILED


def _systemctl(*arguments: str, may_fail: bool = False) -> Command:
    return Command(["systemctl", "--user", *arguments], may_fail=may_fail)


def _differs(path: Path, data: bytes) -> bool:
    try:
        return path.read_bytes() != data
    except FileNotFoundError:
        return True


def _presence(path: Path) -> str:
    return "installed" if path.is_file() else "not installed"
