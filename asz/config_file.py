"""Where a command's configuration comes from: built-in defaults, an optional TOML file, the
environment, and the command line.

Precedence, highest first: command-line flags, environment (``ASZ_ROOT``), the config file,
built-in defaults. Claude Code's directories are those the config file's ``claude_dir`` names,
else those ``$CLAUDE_CONFIG_DIR`` names (comma-separated), else every one of
``$XDG_CONFIG_HOME/claude`` (``~/.config/claude``) and ``~/.claude`` that exists: Claude Code
documents ``~/.claude`` but some versions wrote to ``~/.config/claude``, so a user may have
either or both, and asz reads all of them as one. A config file is strict: an unknown key or a
value of the wrong type is refused with a message naming the key and the file, because a
silently ignored typo in a long-running service is a bug nobody sees.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import fields, is_dataclass, replace
from pathlib import Path
from typing import Any, get_type_hints

from asz.config import (
    COMPRESSIONS,
    PRICE_KEYS,
    AdapterConfig,
    Config,
    ConfigError,
    ModelPrice,
    absolute_path,
)

__all__ = [
    "default_claude_dirs",
    "default_config_file",
    "default_root",
    "load_config",
    "model_prices",
    "split_dirs",
]


def _home(env: Mapping[str, str]) -> Path:
    return Path(env["HOME"]) if env.get("HOME") else Path.home()


def default_claude_dirs(env: Mapping[str, str]) -> tuple[Path, ...]:
    """Claude Code's directories when the config file names none.

    Those ``$CLAUDE_CONFIG_DIR`` names, comma-separated, whether or not they exist (naming one
    is asking for it). Else every one of ``$XDG_CONFIG_HOME/claude`` (``~/.config/claude``)
    and ``~/.claude`` that exists; when neither does, both, so that ``asz sources`` shows
    where it looked and a service watches both until Claude Code makes one.
    """
    named = split_dirs(env.get("CLAUDE_CONFIG_DIR", ""))
    if named:
        return named
    config_home = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else None
    candidates = _unique(
        [
            absolute_path(config_home / "claude")
            if config_home
            else _home(env) / ".config" / "claude",
            _home(env) / ".claude",
        ]
    )
    return tuple(path for path in candidates if path.is_dir()) or candidates


def split_dirs(text: str) -> tuple[Path, ...]:
    """The directories a comma-separated list names, absolute, each once, in order."""
    return _unique([absolute_path(Path(part.strip())) for part in text.split(",") if part.strip()])


def _unique(paths: list[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


def default_root(env: Mapping[str, str]) -> Path:
    """The storage root when neither a flag, ``ASZ_ROOT`` nor the config file names one."""
    if env.get("XDG_DATA_HOME"):
        return absolute_path(Path(env["XDG_DATA_HOME"]) / "asz")
    return _home(env) / ".local" / "share" / "asz"


def default_config_file(env: Mapping[str, str]) -> Path:
    base = Path(env["XDG_CONFIG_HOME"]) if env.get("XDG_CONFIG_HOME") else _home(env) / ".config"
    return base / "asz" / "asz.toml"


def load_config(
    config_file: Path | None = None,
    root: Path | str | None = None,
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
    prices = model_prices(table.pop("prices", {}), where)
    _check_str(raw_root, "root", where)
    named = _claude_dirs_named(raw_claude, where)
    base = Config(
        root=default_root(env),
        claude_dirs=named or default_claude_dirs(env),
        prices=prices,
        source_file=path if where != "the defaults" else None,
    )
    merged: Config = _merge(base, table, where, prefix="")
    if merged.compression not in COMPRESSIONS:
        raise ConfigError(f"{where}: compression must be one of {', '.join(COMPRESSIONS)}")
    chosen_root: Path | str | None = root or env.get("ASZ_ROOT") or raw_root or None
    if chosen_root is not None:
        merged = replace(merged, root=absolute_path(Path(chosen_root)))
    if isinstance(chosen_root, str) and "://" in chosen_root:
        # ``root`` stays the path the text would name, which no command finds a root at, so
        # a command that reads no archive says so rather than using another root. A bad one
        # is blamed on where it came from, not on a config file that may not name it.
        named_by = "--root" if root else "ASZ_ROOT" if env.get("ASZ_ROOT") else where
        merged = replace(merged, root_url=_archive_url(chosen_root, named_by))
    if merged.archive.url:
        _archive_url(merged.archive.url, where)
    if "://" in merged.analytics.url:
        _archive_url(merged.analytics.url, where)
    elif merged.analytics.url:
        tables = str(Path(merged.analytics.url).expanduser().absolute())
        merged = replace(merged, analytics=replace(merged.analytics, url=tables))
    _check_budgets(merged, where)
    return merged


def _archive_url(url: str, where: str) -> str:
    """An archive's URL, checked: ``s3://bucket/prefix`` is the one form read."""
    from asz.locations import ArchiveError, ArchiveUrl

    try:
        return str(ArchiveUrl.parse(url))
    except ArchiveError as err:
        raise ConfigError(f"{where}: {err}") from None


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


def _claude_dirs_named(value: Any, where: str) -> tuple[Path, ...]:
    """The directories the file's ``claude_dir`` names: one string, or a list of them (an
    empty string names none, as if the key were absent)."""
    if value is None or value == "":
        return ()
    if isinstance(value, str):
        return (absolute_path(Path(value)),)
    if isinstance(value, list) and value and all(isinstance(item, str) and item for item in value):
        return _unique([absolute_path(Path(item)) for item in value])
    raise ConfigError(f"{where}: claude_dir must be a string or a non-empty list of strings")


def model_prices(value: Any, where: str) -> tuple[tuple[str, ModelPrice], ...]:
    """``{name: {input, output, cache_read, cache_write_5m, cache_write_1h}}``, every key
    given and each a number >= 0: a price is never made up from a partial one."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where}: prices must be a table of tables")
    found = []
    for name, entry in value.items():
        key = f"prices.{name!r}"
        if not isinstance(entry, dict):
            raise ConfigError(f"{where}: {key} must be a table")
        unknown = sorted(set(entry) - set(PRICE_KEYS))
        if unknown:
            raise ConfigError(f"{where}: unknown key {key}.{unknown[0]}")
        for field in PRICE_KEYS:
            amount = entry.get(field)
            if amount is None:
                raise ConfigError(f"{where}: {key} must give {field}")
            if isinstance(amount, bool) or not isinstance(amount, int | float) or amount < 0:
                raise ConfigError(f"{where}: {key}.{field} must be a number >= 0")
        found.append((name, ModelPrice(**{f: float(entry[f]) for f in PRICE_KEYS})))
    return tuple(found)


_NOT_IN_FILE = {"source_file", "prices", "root_url"}


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
    archive = config.archive
    if archive.workers < 1 or archive.attempts < 1 or archive.cache_bytes < 0:
        raise ConfigError(
            f"{where}: archive.workers and archive.attempts must be at least 1, "
            "archive.cache_bytes not negative"
        )
    for key in ("backoff", "backoff_cap", "unhealthy_after", "push_interval", "prune_after"):
        if getattr(archive, key) < 0:
            raise ConfigError(f"{where}: archive.{key} must not be negative")
    if config.analytics.quiet_seconds < 0:
        raise ConfigError(f"{where}: analytics.quiet_seconds must not be negative")
    otlp = config.otlp
    if otlp.batch_spans < 1:
        raise ConfigError(f"{where}: otlp.batch_spans must be at least 1")
    for key in ("timeout", "quiet_seconds", "backoff_cap", "unhealthy_after"):
        if getattr(otlp, key) < 0:
            raise ConfigError(f"{where}: otlp.{key} must not be negative")
    for key in ("backoff", "metrics_interval"):  # 0 would ask a failing endpoint in a loop
        if getattr(otlp, key) <= 0:
            raise ConfigError(f"{where}: otlp.{key} must be positive")
    if otlp.content_limit < 1024:
        raise ConfigError(f"{where}: otlp.content_limit must be at least 1024 bytes")
    service = config.service
    for key in (
        "batch_window",
        "settle_seconds",
        "rescan_interval",
        "unreadable_after",
        "report_interval",
        "repack_after",
    ):
        if getattr(service, key) < 0:
            raise ConfigError(f"{where}: service.{key} must not be negative")
    if service.rescan_interval == 0:
        raise ConfigError(f"{where}: service.rescan_interval must be positive")
