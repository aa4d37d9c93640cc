"""What a command runs with: the configuration's records, their built-in defaults, and the
paths they resolve to.

Where the values come from (flags, the environment, the config file) is
:mod:`asz.config_file`; everything else takes a :class:`Config` as it is handed over.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

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
    "absolute_path",
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
        return (absolute_path(Path(configured)),)
    return tuple(directory / below for directory in claude_dirs)


def absolute_path(path: Path) -> Path:
    """``path`` with ``~`` expanded, made absolute without following links."""
    return Path(os.path.abspath(path.expanduser()))
