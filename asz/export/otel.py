"""Span records handed to the OpenTelemetry SDK's OTLP/HTTP exporter, and where they go.

The spans are history: their times and ids are fixed by what landed, so no live tracer makes
them. Each record becomes the SDK's ``ReadableSpan`` and goes straight to
``OTLPSpanExporter.export`` (protobuf over HTTP), which retries a batch the endpoint could not
take (connection refused, 429, 5xx) within its timeout.

Where: ``--endpoint``, else ``[otlp] endpoint``, else the standard variables
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` (the whole URL) and ``OTEL_EXPORTER_OTLP_ENDPOINT`` (a
base, to which ``/v1/traces`` is added). Headers: ``[otlp] headers`` and the private file
``[otlp] headers_file`` when either is set, else ``OTEL_EXPORTER_OTLP_TRACES_HEADERS`` and
``OTEL_EXPORTER_OTLP_HEADERS``, which the SDK reads itself; likewise the compression and
certificate variables. The timeout is ``[otlp] timeout`` (the standard variable is not read: a
batch's time is asz's to bound). The resource honours ``OTEL_SERVICE_NAME`` and
``OTEL_RESOURCE_ATTRIBUTES``.
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import requests
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, TraceFlags

from asz import __version__
from asz.export.run import ExportFailed
from asz.export.spans import SpanRecord

__all__ = [
    "METRICS_PATH",
    "SCHEMA_URL",
    "SEMCONV_VERSION",
    "SERVICE_NAME",
    "TRACES_PATH",
    "EndpointError",
    "SpanSender",
    "Target",
    "quiet_sdk_logs",
    "readable_span",
    "resolve_target",
    "resource",
    "shown_url",
]

SEMCONV_VERSION = "1.41.0"
"""The OpenTelemetry semantic conventions the GenAI attributes follow (``docs/otel.md``)."""
SCHEMA_URL = f"https://opentelemetry.io/schemas/{SEMCONV_VERSION}"
SERVICE_NAME = "claude-code"
"""The calls are Claude Code's; asz only tells of them (the scope says so)."""
TRACES_PATH = "/v1/traces"
METRICS_PATH = "/v1/metrics"
_SCOPE = InstrumentationScope("asz", __version__, SCHEMA_URL)


class EndpointError(ValueError):
    """No endpoint is named, or its headers cannot be read."""


@dataclass(frozen=True, slots=True)
class Target:
    """One OTLP endpoint: the traces URL and the headers to send (None: the SDK's variables)."""

    traces_url: str
    metrics_url: str | None
    headers: Mapping[str, str] | None
    timeout: float


def resolve_target(
    endpoint: str,
    headers: Sequence[str],
    headers_file: str,
    timeout: float,
    env: Mapping[str, str] | None = None,
) -> Target:
    """The endpoint the flags, the config and the standard variables name, in that order
    (``endpoint`` is the flag's or the config's base URL, empty when neither names one)."""
    env = os.environ if env is None else env
    if endpoint:
        traces: str | None = _below(endpoint, TRACES_PATH)
        metrics: str | None = _below(endpoint, METRICS_PATH)
    else:
        base = env.get("OTEL_EXPORTER_OTLP_ENDPOINT", "")
        traces = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or (
            _below(base, TRACES_PATH) if base else None
        )
        metrics = env.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT") or (
            _below(base, METRICS_PATH) if base else None
        )
    if not traces:
        raise EndpointError(
            "no OTLP endpoint: give --endpoint URL, set [otlp] endpoint in the config file, "
            "or OTEL_EXPORTER_OTLP_ENDPOINT"
        )
    if not traces.startswith(("http://", "https://")):
        raise EndpointError(
            f"an OTLP/HTTP endpoint is an http:// or https:// URL, not {shown_url(traces)!r}"
        )
    named = _headers(headers, headers_file)
    return Target(traces, metrics, named, timeout)


def shown_url(url: str) -> str:
    """``url`` as it may be said in a line or a log: a token some backends take in the
    user part or the query of the URL is left out."""
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def _below(base: str, path: str) -> str:
    return base.rstrip("/") + path


def _headers(headers: Sequence[str], headers_file: str) -> dict[str, str] | None:
    """``name=value`` pairs from the config and its headers file; None when neither gives any,
    so that the SDK reads the standard variables instead."""
    if not headers and not headers_file:
        return None
    found = dict(_pair(item, "[otlp] headers") for item in headers)
    if headers_file:
        found.update(_headers_file(Path(headers_file).expanduser()))
    return found


def _pair(text: str, where: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        # The text itself is not shown: it may hold a key.
        raise EndpointError(f"{where}: each header must be name=value, and one is not")
    return name.strip().lower(), value.strip()


def _headers_file(path: Path) -> dict[str, str]:
    """A file of ``name=value`` lines (``#`` starts a comment) that only its owner may read:
    it holds an API key, which must not sit in a config file others read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as err:
        raise EndpointError(f"[otlp] headers_file {path}: {err.strerror}") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_mode & 0o077:
            raise EndpointError(
                f"[otlp] headers_file {path}: must be a file only its owner can read (chmod 600)"
            )
        text = handle.read().decode("utf-8", errors="replace")
    lines = [line.strip() for line in text.splitlines()]
    return dict(
        _pair(line, f"[otlp] headers_file {path}")
        for line in lines
        if line and not line.startswith("#")
    )


def resource() -> Resource:
    """The SDK's resource (``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` included),
    named ``claude-code`` where they name no service."""
    found = Resource.create(schema_url=SCHEMA_URL)
    if str(found.attributes.get("service.name", "")).startswith("unknown_service"):
        found = found.merge(Resource({"service.name": SERVICE_NAME}, SCHEMA_URL))
    return found


def readable_span(record: SpanRecord, owner: Resource) -> ReadableSpan:
    flags = TraceFlags(TraceFlags.SAMPLED)
    return ReadableSpan(
        name=record.name,
        context=SpanContext(record.trace_id, record.span_id, is_remote=False, trace_flags=flags),
        parent=SpanContext(record.trace_id, record.parent_id, is_remote=False, trace_flags=flags)
        if record.parent_id is not None
        else None,
        resource=owner,
        attributes=record.attributes,
        events=[Event(event.name, event.attributes, event.time_ns) for event in record.events],
        kind=SpanKind.CLIENT if record.client else SpanKind.INTERNAL,
        instrumentation_scope=_SCOPE,
        start_time=record.start_ns,
        end_time=record.end_ns,
    )


class _Said(logging.Handler):
    """Keeps what the SDK's exporter said of the batch: its only word on why it failed."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())

    def why(self) -> str:
        """The reason the exporter gave: the status of a refusal, else the first transient
        error (its later words only say that it gave up)."""
        for message in self.messages:
            if "code:" in message:
                return message
        if self.messages:
            return self.messages[0].split(", retrying", 1)[0]
        return "the endpoint did not take the batch"


_SDK_LOGGER = logging.getLogger("opentelemetry.exporter")


def quiet_sdk_logs() -> None:
    """Keeps the SDK's exporters' own messages out of asz's output and log: a failed span
    batch is reported once, in asz's words, and the metrics are sent again next time."""
    _SDK_LOGGER.propagate = False
    if not any(isinstance(handler, logging.NullHandler) for handler in _SDK_LOGGER.handlers):
        # Without a handler of its own, logging would print them anyway (its last resort).
        _SDK_LOGGER.addHandler(logging.NullHandler())


class SpanSender:
    """Sends span records to one endpoint, one batch per call."""

    def __init__(self, target: Target) -> None:
        self.target = target
        self._resource = resource()
        self._answered = ""
        """The status of the endpoint's last answer, which the SDK's messages leave out."""
        session = requests.Session()
        session.hooks["response"].append(self._answer)
        self._exporter = OTLPSpanExporter(
            endpoint=target.traces_url,
            headers=target.headers,
            timeout=target.timeout,
            session=session,
        )
        self._said = _Said()
        # The SDK logs each failed batch on its own; the export reports it once, in its words.
        _SDK_LOGGER.addHandler(self._said)
        quiet_sdk_logs()

    def _answer(self, response: requests.Response, *args: object, **kwargs: object) -> None:
        self._answered = f"{response.status_code} {response.reason}".strip()

    def send(self, records: Sequence[SpanRecord]) -> None:
        """Raises ExportFailed, saying why, when the endpoint did not take the batch."""
        self._said.messages = []
        self._answered = ""
        spans = [readable_span(record, self._resource) for record in records]
        if self._exporter.export(spans) is not SpanExportResult.SUCCESS:
            why = f"answered {self._answered}" if self._answered else self._said.why()
            raise ExportFailed(f"{shown_url(self.target.traces_url)}: {why}")

    def close(self) -> None:
        _SDK_LOGGER.removeHandler(self._said)
        self._exporter.shutdown()  # type: ignore[no-untyped-call]
