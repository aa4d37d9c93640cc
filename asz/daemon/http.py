"""``/metrics``, ``/healthz`` and ``/readyz`` on the address ``service.listen`` names, and no other.

The server answers from its own threads, so a scrape or a probe never waits on a pass, and a
probe still gets an answer (503) when the event loop hangs, which is exactly when one is
needed. Health is judged by the loop's heartbeat, not by the process being alive: a process
whose loop stopped turning lands nothing.
"""

from __future__ import annotations

import socket
import socketserver
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import orjson

from asz.daemon.metrics import ServiceMetrics

__all__ = ["STALL_SECONDS", "HealthState", "ListenError", "StatusServer", "parse_listen"]

STALL_SECONDS = 10.0
"""A loop that has not ticked for this long is reported unhealthy (it ticks every second)."""

_METRICS_TYPE = "text/plain; version=0.0.4; charset=utf-8"


class ListenError(ValueError):
    """A ``listen`` value that is not ``HOST:PORT``."""


def parse_listen(listen: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for an IPv6 address) as a host and a port number."""
    host, sep, port_text = listen.rpartition(":")
    if not sep or not host or not port_text.isdigit() or int(port_text) > 65535:
        raise ListenError(f"listen must be HOST:PORT, not {listen!r}")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    elif ":" in host:
        raise ListenError(f"an IPv6 address in listen goes in brackets: {listen!r}")
    return host, int(port_text)


@dataclass(slots=True)
class HealthState:
    """What the probes report; written by the event loop, read by the server's threads.

    Each field is replaced whole, never mutated in place, so a reader in another thread sees
    either the old value or the new one.
    """

    version: str
    started_monotonic: float = field(default_factory=time.monotonic)
    last_tick: float = field(default_factory=time.monotonic)
    ready: bool = False
    last_pass_at: float | None = None
    last_pass: dict[str, Any] | None = None
    sources_absent: list[str] = field(default_factory=list)
    """Source directories not there at the last look: not an error, since Claude Code may
    make them later, but the first thing to check when nothing lands."""

    unhealthy_after: float | None = None
    """Seconds pushes to the archive may keep failing before the service is unhealthy; None
    without an archive."""
    push_failing_since: float | None = None
    """Monotonic time of the first failed push since the last one without an error."""
    last_push: dict[str, Any] | None = None

    export_unhealthy_after: float | None = None
    """Seconds exports to the OTLP endpoint may keep failing before the service is
    unhealthy; None without an endpoint."""
    export_failing_since: float | None = None
    last_export: dict[str, Any] | None = None

    def export_done(self, counts: dict[str, Any] | None, failed: bool) -> None:
        """An export ended; ``counts`` is None when it crashed."""
        if counts is not None:
            self.last_export = counts
        if not failed:
            self.export_failing_since = None
        elif self.export_failing_since is None:
            self.export_failing_since = time.monotonic()

    def push_done(self, counts: dict[str, Any] | None, failed: bool) -> None:
        """A push ended; ``counts`` is None when it crashed."""
        if counts is not None:
            self.last_push = counts
        if not failed:
            self.push_failing_since = None
        elif self.push_failing_since is None:
            self.push_failing_since = time.monotonic()

    def pushes_failing(self, now: float) -> float | None:
        """For how long pushes have failed, once that is longer than ``unhealthy_after``."""
        return _failing_for(self.push_failing_since, self.unhealthy_after, now)

    def tick(self) -> None:
        self.last_tick = time.monotonic()

    def pass_done(self, counts: dict[str, Any], finished_at: float) -> None:
        self.last_pass = counts
        self.last_pass_at = finished_at

    def report(self) -> tuple[bool, dict[str, Any]]:
        """Whether the loop is alive, and the document ``/healthz`` answers with."""
        now = time.monotonic()
        silent = now - self.last_tick
        alive = silent < STALL_SECONDS
        failing = self.pushes_failing(now)
        status = "ok" if alive else "stalled"
        if alive and failing is not None:
            status = "push_failing"
        exporting = _failing_for(self.export_failing_since, self.export_unhealthy_after, now)
        if status == "ok" and exporting is not None:
            status = "export_failing"
        report = {
            "status": status,
            "version": self.version,
            "uptime_seconds": round(now - self.started_monotonic, 3),
            "loop_silent_seconds": round(silent, 3),
            "ready": self.ready,
            "last_pass_at": self.last_pass_at,
            "last_pass": self.last_pass,
            "sources_absent": self.sources_absent,
        }
        if self.unhealthy_after is not None:
            report["archive"] = {
                "failing_seconds": None
                if self.push_failing_since is None
                else round(now - self.push_failing_since, 3),
                "unhealthy_after": self.unhealthy_after,
                "last_push": self.last_push,
            }
        if self.export_unhealthy_after is not None:
            report["otlp"] = {
                "failing_seconds": None
                if self.export_failing_since is None
                else round(now - self.export_failing_since, 3),
                "unhealthy_after": self.export_unhealthy_after,
                "last_export": self.last_export,
            }
        return status == "ok", report


def _failing_for(since: float | None, allowed: float | None, now: float) -> float | None:
    """For how long something has failed, once that is longer than ``allowed``."""
    if since is None or allowed is None:
        return None
    return now - since if now - since > allowed else None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = False

    def __init__(self, host: str, port: int, health: HealthState, metrics: ServiceMetrics):
        self.address_family = socket.AF_INET6 if ":" in host else socket.AF_INET
        self.health = health
        self.metrics = metrics
        super().__init__((host, port), _Handler)

    def server_bind(self) -> None:
        # HTTPServer.server_bind asks DNS for the host's full name, which can hang a start-up
        # for nothing: the name is never used.
        socketserver.TCPServer.server_bind(self)
        self.server_name = str(self.server_address[0])
        self.server_port = int(self.server_address[1])


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._answer(200, _METRICS_TYPE, self.server.metrics.exposition())
        elif path == "/healthz":
            alive, report = self.server.health.report()
            self._answer(200 if alive else 503, "application/json", orjson.dumps(report))
        elif path == "/readyz":
            ready = self.server.health.ready
            body = orjson.dumps({"ready": ready})
            self._answer(200 if ready else 503, "application/json", body)
        else:
            self._answer(404, "text/plain; charset=utf-8", b"not found\n")

    def _answer(self, status: int, content_type: str, body: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        """Scrapes every few seconds would drown the log; requests are not logged."""


class StatusServer:
    """The endpoint, served from a thread until :meth:`close`."""

    def __init__(self, listen: str, health: HealthState, metrics: ServiceMetrics) -> None:
        host, port = parse_listen(listen)
        self._server = _Server(host, port, health, metrics)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 1.0}, daemon=True
        )

    @property
    def address(self) -> tuple[str, int]:
        """The bound host and port; the port is the one picked when ``listen`` said 0."""
        host, port = self._server.server_address[:2]
        return str(host), int(port)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stops serving; blocks up to the poll interval, so call it from a worker thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join()
