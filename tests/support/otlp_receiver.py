"""A minimal OTLP/HTTP receiver of the tests' own: it decodes what asz sends with
``opentelemetry-proto`` and keeps every span and metric as plain values, each attribute with the
protobuf type it came in, so a test pins names and types exactly as a backend reads them."""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["Received", "Receiver", "typed"]


def typed(value: AnyValue) -> tuple[str, Any]:
    """An attribute value as (its protobuf type, its Python value)."""
    kind = value.WhichOneof("value")
    if kind == "array_value":
        return "array", [typed(item) for item in value.array_value.values]
    return kind or "empty", getattr(value, kind) if kind else None


@dataclass
class Received:
    spans: list[dict[str, Any]] = field(default_factory=list)
    metrics: list[dict[str, Any]] = field(default_factory=list)
    requests: list[dict[str, str]] = field(default_factory=list)
    """The headers of every request."""


class Receiver:
    """Serves ``/v1/traces`` and ``/v1/metrics`` on a free loopback port until closed.

    ``refuse`` makes it answer 503 to the requests it names (a count: the next so many), so a
    test shows an endpoint that is down and comes back."""

    def __init__(self) -> None:
        self.received = Received()
        self.refuse = 0
        self.delay = 0.0
        """Seconds each request waits before it is answered (a slow backend)."""
        self.lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                time.sleep(receiver.delay)
                with receiver.lock:
                    receiver.received.requests.append(dict(self.headers.items()))
                    if receiver.refuse:
                        receiver.refuse -= 1
                        self._answer(503, b"")
                        return
                    if self.path == "/v1/traces":
                        receiver._traces(body)
                        answer = ExportTraceServiceResponse().SerializeToString()
                    elif self.path == "/v1/metrics":
                        receiver._metrics(body)
                        answer = ExportMetricsServiceResponse().SerializeToString()
                    else:
                        self._answer(404, b"")
                        return
                self._answer(200, answer)

            def _answer(self, status: int, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.received.spans)

    def metrics(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.received.metrics)

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest()
        request.ParseFromString(body)
        for resource_spans in request.resource_spans:
            resource = {a.key: typed(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    self.received.spans.append(
                        {
                            "resource": resource,
                            "scope": (scope_spans.scope.name, scope_spans.schema_url),
                            "name": span.name,
                            "kind": span.kind,
                            "trace_id": span.trace_id.hex(),
                            "span_id": span.span_id.hex(),
                            "parent_span_id": span.parent_span_id.hex() or None,
                            "start": span.start_time_unix_nano,
                            "end": span.end_time_unix_nano,
                            "attributes": {a.key: typed(a.value) for a in span.attributes},
                            "events": [
                                {
                                    "name": event.name,
                                    "time": event.time_unix_nano,
                                    "attributes": {a.key: typed(a.value) for a in event.attributes},
                                }
                                for event in span.events
                            ],
                        }
                    )

    def _metrics(self, body: bytes) -> None:
        request = ExportMetricsServiceRequest()
        request.ParseFromString(body)
        for resource_metrics in request.resource_metrics:
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    points = getattr(metric, kind).data_points
                    self.received.metrics.append(
                        {
                            "name": metric.name,
                            "unit": metric.unit,
                            "kind": kind,
                            "points": [
                                {
                                    "attributes": {a.key: typed(a.value)[1] for a in p.attributes},
                                    "value": p.as_double
                                    if p.WhichOneof("value") == "as_double"
                                    else p.as_int,
                                }
                                for p in points
                            ],
                        }
                    )

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
