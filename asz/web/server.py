"""Binding the address and running the application under uvicorn, in anyio's loop.

uvicorn is the ASGI server: the most used one, pure Python over h11 without its optional
extras, and it serves a socket bound beforehand. The socket is bound here, before the server
starts, so that the port actually bound (``--listen 127.0.0.1:0`` picks a free one, as the
tests do) is known to the guard, which checks every ``Host`` against it, and is logged.
uvicorn's own logging is off: its access log would write every URL, and a URL may carry the
token. SIGINT and SIGTERM end the server after the requests in flight, and the command then
exits 0 with a ``stopped`` line, as ``asz collect`` does: uvicorn would raise the signal again
once done, which ends the process by the signal (a traceback on Ctrl-C, status -15 under a
service manager), so :class:`_Server` keeps the signal for itself.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import socket
from collections.abc import Iterator

import anyio
import uvicorn
from structlog.typing import FilteringBoundLogger

from asz.web.access import Access
from asz.web.app import create_app
from asz.web.library import Library

__all__ = ["KEEP_ALIVE", "MAX_CONNECTIONS", "STOP_SIGNALS", "bind", "serve"]

KEEP_ALIVE = 5
MAX_CONNECTIONS = 64
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class _Server(uvicorn.Server):
    """uvicorn's server, but a signal only asks it to stop: it is not raised again after."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        before = {sig: signal.signal(sig, self.handle_exit) for sig in STOP_SIGNALS}
        try:
            yield
        finally:
            for sig, handler in before.items():
                signal.signal(sig, handler)


def bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host:port`` (OSError when it cannot be had)."""
    family, kind, proto, _name, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


class _Forwarded(logging.Handler):
    """uvicorn's own warnings (a request it could not parse: "Invalid HTTP request
    received.") as lines of the service's log, which is JSON when asked, instead of bare text
    on stderr. Only the message: its exception, if any, could quote what was sent."""

    def __init__(self, log: FilteringBoundLogger) -> None:
        super().__init__(logging.WARNING)
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log.warning("server_warning", message=record.getMessage())


def serve(library: Library, access: Access, sock: socket.socket, log: FilteringBoundLogger) -> None:
    """Serves until SIGINT or SIGTERM."""
    uvicorn_log = logging.getLogger("uvicorn")
    uvicorn_log.addHandler(_Forwarded(log))
    uvicorn_log.propagate = False
    config = uvicorn.Config(
        create_app(library, access, log),
        log_config=None,
        access_log=False,
        lifespan="off",
        server_header=False,
        proxy_headers=False,
        timeout_keep_alive=KEEP_ALIVE,
        limit_concurrency=MAX_CONNECTIONS,
        http="h11",
        loop="asyncio",
    )
    host, port = sock.getsockname()[:2]
    shown = f"[{host}]" if ":" in host else host
    log.info(
        "listening",
        host=host,
        port=port,
        root=library.store.location,
        token=access.token is not None,
        message=f"serving {library.store.location} at http://{shown}:{port}/",
    )
    anyio.run(_Server(config).serve, [sock])
    log.info("stopped")
