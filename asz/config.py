"""Configuration: built-in defaults, an optional TOML file, the environment, path resolution.

Precedence, highest first: command-line flags, environment (``ASZ_ROOT``), the config file,
built-in defaults. The Claude Code directory follows Claude Code's own lookup
(``$CLAUDE_CONFIG_DIR``, then ``$XDG_CONFIG_HOME/claude``, then ``~/.claude``) unless the config
file names it. A config file is strict: an unknown key or a value of the wrong type is refused
with a message naming the key and the file, because a silently ignored typo in a long-running
service is a bug nobody sees.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, get_type_hints

DEFAULT_LISTEN = "127.0.0.1:9477"
DEFAULT_EXCLUDE = ("/private/tmp/**",)
DEFAULT_MAX_DELTA_BYTES = 2 * 1024 * 1024


class ConfigError(Exception):
    """A configuration that cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class SessionFilter:
    """Which sessions are collected, judged by the directory of the session's main transcript."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = DEFAULT_EXCLUDE


@dataclass(frozen=True, slots=True)
class AdapterConfig:
    """One adapter's source and landing budget; an empty source_root means the default."""

    enabled: bool = True
    source_root: str = ""
    max_delta_bytes: int = DEFAULT_MAX_DELTA_BYTES


@dataclass(frozen=True, slots=True)
class Adapters:
    claude_code_local: AdapterConfig = AdapterConfig()
    claude_code_provider: AdapterConfig = AdapterConfig()


@dataclass(frozen=True, slots=True)
class ServiceConfig:
    """Timings of the long-running collector (seconds) and where it serves metrics and health."""

    batch_window: float = 10.0
    settle_seconds: float = 1.0
    rescan_interval: float = 60.0
    unreadable_after: float = 120.0
    listen: str = DEFAULT_LISTEN


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a command needs, with paths already resolved to absolute ones."""

    root: Path
    claude_dir: Path
    compression: str = "zstd"
    sessions: SessionFilter = SessionFilter()
    adapters: Adapters = Adapters()
    service: ServiceConfig = ServiceConfig()
    source_file: Path | None = None

    @property
    def projects_dir(self) -> Path:
        """Where Claude Code keeps its transcripts."""
        return _resolve_source(
            self.adapters.claude_code_local.source_root, self.claude_dir / "projects"
        )

    @property
    def bodies_dir(self) -> Path:
        """Where Claude Code writes provider bodies when told ``file:<dir>``."""
        configured = self.adapters.claude_code_provider.source_root
        return _resolve_source(configured, self.claude_dir / "asz" / "provider-bodies")


COMPRESSIONS = ("zstd", "none")


def _resolve_source(configured: str, default: Path) -> Path:
    return _absolute(Path(configured)) if configured else default


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def default_claude_dir(env: Mapping[str, str]) -> Path:
    """Claude Code's own lookup of its configuration directory."""
    if env.get("CLAUDE_CONFIG_DIR"):
        return _absolute(Path(env["CLAUDE_CONFIG_DIR"]))
    if env.get("XDG_CONFIG_HOME"):
        return _absolute(Path(env["XDG_CONFIG_HOME"]) / "claude")
    return _home(env) / ".claude"


def default_root(env: Mapping[str, str]) -> Path:
    """The storage root when neither a flag, ``ASZ_ROOT`` nor the config file names one."""
    if env.get("XDG_DATA_HOME"):
        return _absolute(Path(env["XDG_DATA_HOME"]) / "asz")
    return _home(env) / ".local" / "share" / "asz"


def default_config_file(env: Mapping[str, str]) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else _home(env) / ".config"
    return base / "asz" / "asz.toml"


def load_config(
    config_file: Path | None = None,
    root: Path | None = None,
    env: Mapping[str, str] | None = None,
) -> Config:
    """Builds the configuration a command runs with.

    ``config_file`` given explicitly must exist; the default one is read only when present.
    """
    env = os.environ if env is None else env
    explicit = config_file is not None
    path = config_file if explicit else default_config_file(env)
    table: dict[str, Any] = {}
    if path is not None and (explicit or path.is_file()):
        table = _read_toml(path)
    # Named before its keys are taken out, so that an error in any key names the file.
    where = str(path) if table else "the defaults"
    raw_root = table.pop("root", None)
    raw_claude = table.pop("claude_dir", None)
    _check_str(raw_root, "root", where)
    _check_str(raw_claude, "claude_dir", where)
    base = Config(
        root=default_root(env),
        claude_dir=_absolute(Path(raw_claude)) if raw_claude else default_claude_dir(env),
        source_file=path if where != "the defaults" else None,
    )
    merged = _merge(base, table, where, prefix="")
    if merged.compression not in COMPRESSIONS:
        raise ConfigError(f"{where}: compression must be one of {', '.join(COMPRESSIONS)}")
    chosen_root = root or (Path(env["ASZ_ROOT"]) if env.get("ASZ_ROOT") else None)
    if chosen_root is None and raw_root:
        chosen_root = Path(raw_root)
    if chosen_root is not None:
        merged = replace(merged, root=_absolute(chosen_root))
    _check_budgets(merged, where)
    return merged


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as handle:
            return tomllib.load(handle)
    except FileNotFoundError:
        raise ConfigError(f"{path}: no such config file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise ConfigError(f"{path}: {err}") from None


def _check_str(value: Any, key: str, where: str) -> None:
    if value is not None and not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, not {type(value).__name__}")


_NOT_IN_FILE = {"source_file"}


def _merge(target: Any, table: Mapping[str, Any], where: str, prefix: str) -> Any:
    """Returns ``target`` with ``table``'s values, refusing unknown keys and wrong types."""
    hints = get_type_hints(type(target))
    known = {f.name for f in fields(target) if f.name not in _NOT_IN_FILE}
    changes: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}{key}"
        if key not in known:
            raise ConfigError(f"{where}: unknown key {name!r}")
        current = getattr(target, key)
        if is_dataclass(current):
            if not isinstance(value, dict):
                raise ConfigError(f"{where}: {name} must be a table")
            changes[key] = _merge(current, value, where, prefix=f"{name}.")
        else:
            changes[key] = _coerce(value, hints[key], name, where)
    return replace(target, **changes)


def _coerce(value: Any, hint: Any, name: str, where: str) -> Any:
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: {name} must be true or false")
    if hint is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        raise ConfigError(f"{where}: {name} must be an integer")
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise ConfigError(f"{where}: {name} must be a number")
    if hint is str:
        if isinstance(value, str):
            return value
        raise ConfigError(f"{where}: {name} must be a string")
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return tuple(value)
    raise ConfigError(f"{where}: {name} must be a list of strings")


def _check_budgets(config: Config, where: str) -> None:
    for name in ("claude_code_local", "claude_code_provider"):
        adapter: AdapterConfig = getattr(config.adapters, name)
        if adapter.max_delta_bytes < 4096:
            raise ConfigError(f"{where}: adapters.{name}.max_delta_bytes must be at least 4096")
    service = config.service
    for key in ("batch_window", "settle_seconds", "rescan_interval", "unreadable_after"):
        if getattr(service, key) < 0:
            raise ConfigError(f"{where}: service.{key} must not be negative")
    if service.rescan_interval == 0:
        raise ConfigError(f"{where}: service.rescan_interval must be positive")
