"""Configuration: built-in defaults, an optional TOML file, the environment, path resolution.

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
from dataclasses import dataclass, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, get_type_hints

__all__ = [
    "BODIES",
    "COMPRESSIONS",
    "DEFAULT_EXCLUDE",
    "DEFAULT_LISTEN",
    "DEFAULT_MAX_DELTA_BYTES",
    "PRICE_KEYS",
    "PROJECTS",
    "AdapterConfig",
    "Adapters",
    "AnalyticsConfig",
    "ArchiveConfig",
    "Config",
    "ConfigError",
    "ModelPrice",
    "OtlpConfig",
    "RedactConfig",
    "ServiceConfig",
    "SessionFilter",
    "default_claude_dirs",
    "default_config_file",
    "default_root",
    "load_config",
    "model_prices",
    "split_dirs",
]

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
    report_interval: float = 30.0
    """Seconds between two builds of one session's kept cache report while it keeps landing."""
    repack_after: float = 3600.0
    """Seconds a session lands nothing before the service (or ``asz repack`` without a
    session) repacks it into few files (``asz.store._repack``); 0: the service never does."""
    listen: str = DEFAULT_LISTEN


@dataclass(frozen=True, slots=True)
class ArchiveConfig:
    """The team archive ``asz push`` writes to and ``--root s3://...`` reads (``asz.archive``).

    Credentials are never here: they come from the standard AWS environment variables, or the
    shared config and credentials files and profile (docs/security.md).
    """

    url: str = ""
    """``s3://bucket/prefix``; empty: no archive."""
    endpoint: str = ""
    """An S3-compatible service's URL (MinIO, R2, ...); empty: AWS, or ``AWS_ENDPOINT_URL``."""
    region: str = ""
    """Empty: ``AWS_REGION``, the profile's, or the client's default."""
    workers: int = 8
    """Uploads in flight at once."""
    attempts: int = 6
    """Tries of one request before it counts as failed (resets, 5xx, throttling)."""
    backoff: float = 0.25
    """Seconds the first retry waits at most; each next one doubles it, with equal jitter."""
    backoff_cap: float = 20.0
    cache_bytes: int = 1024 * 1024 * 1024
    """The bound of the local cache of landed files read from an archive."""
    unhealthy_after: float = 900.0
    """Seconds pushes may keep failing before ``/healthz`` says so."""
    prune_after: float = 7 * 86400.0
    """Seconds a generation is in the archive before ``asz push --prune`` removes the objects
    it replaced (readers that listed the session before it keep them that long)."""
    push_interval: float = 300.0
    """Seconds the service waits at least between two pushes of a session still landing, so
    its small files are not sent one by one (a quiet session is pushed once repacked)."""


@dataclass(frozen=True, slots=True)
class OtlpConfig:
    """Where ``asz export otlp`` and the service send every model call as an OpenTelemetry
    span (``asz.export``, docs/otel.md).

    An API key is never here: it comes from ``headers_file`` (a file only its owner reads) or
    the standard ``OTEL_EXPORTER_OTLP_HEADERS`` variable.
    """

    endpoint: str = ""
    """The OTLP/HTTP base URL (``/v1/traces`` and ``/v1/metrics`` are added); empty: the
    standard ``OTEL_EXPORTER_OTLP_*ENDPOINT`` variables, and without them the service sends
    nothing."""
    headers: tuple[str, ...] = ()
    """``name=value`` headers sent with every request."""
    headers_file: str = ""
    """A file of ``name=value`` lines, readable by its owner only (chmod 600)."""
    timeout: float = 10.0
    """Seconds one batch may take, its retries included."""
    batch_spans: int = 512
    quiet_seconds: float = 300.0
    """A session that landed nothing for this long is final: its last calls go out too."""
    backoff: float = 5.0
    """Seconds the service waits after a failed batch; doubled after each next one."""
    backoff_cap: float = 300.0
    unhealthy_after: float = 900.0
    """Seconds exports may keep failing before ``/healthz`` says so."""
    metrics: bool = True
    """The service also sends its cache-cost counters over OTLP (``/v1/metrics``)."""
    metrics_interval: float = 60.0
    content: bool = False
    """Spans also carry what each call sent (system prompt, tools, messages), through the
    ``[redact]`` policy; off by default (docs/otel.md)."""
    content_limit: int = 256 * 1024
    """Bytes of one content attribute at most (``asz.export.content``)."""


@dataclass(frozen=True, slots=True)
class RedactConfig:
    """What is redacted where data leaves the machine: the archive, ``asz serve`` beyond
    loopback, every export (``asz.redact``, docs/security.md). The local root stays exact.

    The key is better given in ``ASZ_REDACT_KEY`` than here: it is a secret of the archive's.
    """

    enabled: bool = True
    disable: tuple[str, ...] = ()
    """Rules that do not run (``asz.redact.RULE_NAMES``)."""
    withhold: tuple[str, ...] = ()
    """Parts withheld whole: ``system``, ``tools``, ``instructions``, ``tool-results``."""
    home_paths: bool = True
    """Whether the user name in home paths is replaced (the ``user`` rule)."""
    key: str = ""
    """The markers' hash key; empty: ``ASZ_REDACT_KEY``, else one kept under the root."""


@dataclass(frozen=True, slots=True)
class AnalyticsConfig:
    """Where ``asz export parquet`` and the service write the call facts as Parquet tables,
    and where ``asz sql`` and ``asz cache`` read them (``asz.analytics``, docs/analytics.md)."""

    url: str = ""
    """A directory, or ``s3://bucket/prefix`` reached with ``[archive]``'s endpoint and
    region; empty: no tables."""
    quiet_seconds: float = 300.0
    """A session that landed nothing for this long is final: its last calls are written too."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """What a model's tokens cost, in US dollars per million tokens."""

    input: float
    output: float
    cache_read: float
    cache_write_5m: float
    cache_write_1h: float


PRICE_KEYS = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")


@dataclass(frozen=True, slots=True)
class Config:
    """Everything a command needs, with paths already resolved to absolute ones."""

    root: Path
    claude_dirs: tuple[Path, ...]
    """Claude Code's directories, in order: where the same file is in two, the first wins."""
    compression: str = "zstd"
    sessions: SessionFilter = SessionFilter()
    adapters: Adapters = Adapters()
    service: ServiceConfig = ServiceConfig()
    archive: ArchiveConfig = ArchiveConfig()
    otlp: OtlpConfig = OtlpConfig()
    redact: RedactConfig = RedactConfig()
    analytics: AnalyticsConfig = AnalyticsConfig()
    root_url: str = ""
    """The archive ``--root`` (or ``ASZ_ROOT``, or ``root``) named instead of a directory
    (``s3://bucket/prefix``): the reading commands read it, the commands that write into a
    root refuse to run, and any other finds no root at ``root``."""
    prices: tuple[tuple[str, ModelPrice], ...] = ()
    """The config file's ``[prices."<model or family>"]`` tables, in file order: they win
    over the shipped price table (see ``asz.view.prices``)."""
    source_file: Path | None = None

    @property
    def location(self) -> str:
        """The root as ``asz.archive.open_root`` takes it: the archive's URL, or the directory."""
        return self.root_url or str(self.root)

    @property
    def projects_dirs(self) -> tuple[Path, ...]:
        """Where Claude Code keeps its transcripts: each directory's ``projects``, or the one
        ``adapters.claude_code_local.source_root`` names instead of all of them."""
        return _sources(self.adapters.claude_code_local.source_root, self.claude_dirs, PROJECTS)

    @property
    def bodies_dirs(self) -> tuple[Path, ...]:
        """Where Claude Code writes provider bodies when told ``file:<dir>``: each directory's
        ``asz/provider-bodies``, or the one ``adapters.claude_code_provider.source_root``
        names instead of all of them."""
        return _sources(self.adapters.claude_code_provider.source_root, self.claude_dirs, BODIES)

    @property
    def source_dirs(self) -> tuple[Path, ...]:
        """Every directory the enabled adapters read: the transcripts', then the bodies'."""
        local, provider = self.adapters.claude_code_local, self.adapters.claude_code_provider
        return (self.projects_dirs if local.enabled else ()) + (
            self.bodies_dirs if provider.enabled else ()
        )

    @property
    def projects_dir(self) -> Path:
        """The first transcripts directory: where a caller that writes a capture of its own
        (a benchmark, a test) puts it."""
        return self.projects_dirs[0]

    @property
    def bodies_dir(self) -> Path:
        """The first bodies directory, for the same callers as ``projects_dir``."""
        return self.bodies_dirs[0]


COMPRESSIONS = ("zstd", "none")
PROJECTS = Path("projects")
BODIES = Path("asz") / "provider-bodies"


def _sources(configured: str, claude_dirs: tuple[Path, ...], below: Path) -> tuple[Path, ...]:
    if configured:
        return (_absolute(Path(configured)),)
    return tuple(directory / below for directory in claude_dirs)


def _absolute(path: Path) -> Path:
    return Path(os.path.abspath(path.expanduser()))


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
            _absolute(config_home / "claude") if config_home else _home(env) / ".config" / "claude",
            _home(env) / ".claude",
        ]
    )
    return tuple(path for path in candidates if path.is_dir()) or candidates


def split_dirs(text: str) -> tuple[Path, ...]:
    """The directories a comma-separated list names, absolute, each once, in order."""
    return _unique([_absolute(Path(part.strip())) for part in text.split(",") if part.strip()])


def _unique(paths: list[Path]) -> tuple[Path, ...]:
    return tuple(dict.fromkeys(paths))


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
        merged = replace(merged, root=_absolute(Path(chosen_root)))
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
        return (_absolute(Path(value)),)
    if isinstance(value, list) and value and all(isinstance(item, str) and item for item in value):
        return _unique([_absolute(Path(item)) for item in value])
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
