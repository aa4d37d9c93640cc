"""An S3-protocol server on the loopback for the archive tests, and a proxy that breaks it.

:class:`S3Server` is moto in server mode (``ThreadedMotoServer``), started and stopped by the
tests themselves; its objects live in this process, so a server stopped and started again on
the same port still holds them (a "server stopped in the middle of a push"). :class:`FaultProxy`
stands between the client and the server: it forwards one request per connection, counts
every request by method, key and the status the server gave, and, when told, resets a
connection before forwarding the request (the server never saw it) or after (the server took
it and the answer is lost), answers ``503 SlowDown`` or any other S3 error itself
(``error:CODE:STATUS``), holds an answer back a moment, or stops listening (``refuse``: every
connection is refused, as when the server is gone) until told to listen again. Nothing of asz
is mocked: the real client speaks real HTTP to a real server through a
real socket.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote, urlsplit

__all__ = [
    "BUCKET",
    "CREDENTIALS",
    "Fault",
    "FaultProxy",
    "S3Server",
    "Seen",
    "another_server",
    "archive_config",
    "proxied",
    "s3_error",
]

BUCKET = "team-archive"
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing-key",
    "AWS_SECRET_ACCESS_KEY": "testing-secret",
    "AWS_REGION": "us-east-1",
}


class S3Server:
    """moto's S3 on ``127.0.0.1``; ``stop`` and ``start`` again keep the port and the objects."""

    def __init__(self) -> None:
        self.port = _free_port()
        self._server = None
        self.start()
        client = self.client()
        # moto keeps its objects in this process: a second server finds the bucket made.
        if BUCKET not in {b["Name"] for b in client.list_buckets().get("Buckets", [])}:
            client.create_bucket(Bucket=BUCKET)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        from moto.server import ThreadedMotoServer

        os.environ.update(CREDENTIALS)  # moto's own boto3 calls, in this process
        logging.getLogger("werkzeug").setLevel(logging.WARNING)  # a line per request
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=self.port, verbose=False)
        self._server.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def client(self):
        """A boto3 client for what the tests do behind asz's back (look, change an object)."""
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, **_boto_credentials())

    def etags(self, prefix: str = "") -> dict[str, tuple[str, object]]:
        """Every object under ``prefix``: key -> its ETag and time of last change, which an
        overwrite (even with the same bytes) changes."""
        client = self.client()
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"]] = (item["ETag"], item["LastModified"])
        return found

    def objects(self, prefix: str = "") -> dict[str, bytes]:
        """Every object under ``prefix``: key -> bytes."""
        client = self.client()
        found = {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=BUCKET, Prefix=prefix):
            for item in page.get("Contents", []):
                found[item["Key"]] = client.get_object(Bucket=BUCKET, Key=item["Key"])[
                    "Body"
                ].read()
        return found


@contextlib.contextmanager
def another_server() -> Iterator[str]:
    """Another S3 server, in a process of its own (so none of the first's objects), with an
    empty bucket of the same name: the endpoint of a "moved" archive. Yields its endpoint."""
    import subprocess
    import sys

    import boto3

    port = _free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        client = boto3.client("s3", endpoint_url=endpoint, **_boto_credentials())
        deadline = time.monotonic() + 30
        while True:
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.1)  # the server is still starting
        yield endpoint
    finally:
        server.terminate()
        server.wait(timeout=30)


def _boto_credentials() -> dict[str, str]:
    return {
        "aws_access_key_id": CREDENTIALS["AWS_ACCESS_KEY_ID"],
        "aws_secret_access_key": CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        "region_name": CREDENTIALS["AWS_REGION"],
    }


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@dataclass(frozen=True)
class Seen:
    """One request the proxy saw: its method, its object key, the status the server gave
    (``None``: never answered by the server, ``503`` may be the proxy's own)."""

    method: str
    key: str
    status: int | None
    fault: str = ""
    at: float = 0.0
    """When the request arrived (``time.monotonic``)."""


Fault = Callable[[str, str, int], str]
"""(method, key, number of the request from 1) -> "" (forward), "reset-before", "reset-after",
"503", "slow", or "error:CODE:STATUS" (e.g. "error:AccessDenied:403")."""


def s3_error(code: str, status: int) -> bytes:
    """A whole HTTP answer carrying an S3 error, as the service words one."""
    body = (
        f'<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
        f"<Message>{code}</Message><RequestId>0</RequestId></Error>"
    ).encode()
    return (
        f"HTTP/1.1 {status} {code}\r\nContent-Type: application/xml\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode() + body


@dataclass
class FaultProxy:
    """A TCP proxy in front of ``upstream_port`` that counts and, when ``fault`` says, breaks."""

    upstream_port: int
    fault: Fault = lambda method, key, n: ""
    delay: float = 0.05
    seen: list[Seen] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        self.port = 0
        self._stop = False
        self._arrived: Counter[str] = Counter()
        self._in_flight = 0
        self.most_at_once = 0
        """The most requests the proxy held at one time (a client's parallelism)."""
        self.listen()

    def listen(self) -> None:
        """Accepts connections (again, on the same port after ``refuse``)."""
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self.port = self._listener.getsockname()[1]
        self._stop = False
        self._thread = threading.Thread(target=self._accept, args=(self._listener,), daemon=True)
        self._thread.start()

    def refuse(self) -> None:
        """Stops listening: every connection is refused, as when the server is gone."""
        self.close()
        self._thread.join(timeout=5)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self._stop = True
        with contextlib.suppress(OSError):
            self._listener.close()

    def puts(self, status: int | None = 200) -> Counter[str]:
        """Keys by how many PUTs the server answered with ``status``."""
        with self._lock:
            return Counter(s.key for s in self.seen if s.method == "PUT" and s.status == status)

    def sent(self) -> Counter[str]:
        """Keys by how many PUTs went for them, but a push record's marker
        (``_archive/roots/``), which a push that starts a record creates."""
        with self._lock:
            return Counter(
                s.key for s in self.seen if s.method == "PUT" and "/_archive/roots/" not in s.key
            )

    def requests(self, method: str) -> int:
        with self._lock:
            return sum(1 for s in self.seen if s.method == method)

    def _accept(self, listener: socket.socket) -> None:
        while not self._stop:
            try:
                client, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _serve(self, client: socket.socket) -> None:
        with client:
            try:
                request = _read_request(client)
            except (OSError, ValueError):
                return
            if request is None:
                return
            method, target, head, body = request
            arrived = time.monotonic()
            key = unquote(urlsplit(target).path).split("/", 2)[-1]
            with self._lock:  # numbered as they arrive, so each number is dealt once
                self._arrived[method] += 1
                number = self._arrived[method]
                self._in_flight += 1
                self.most_at_once = max(self.most_at_once, self._in_flight)
            try:
                self._answer(
                    client,
                    method=method,
                    key=key,
                    number=number,
                    head=head,
                    body=body,
                    arrived=arrived,
                )
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _answer(
        self,
        client: socket.socket,
        *,
        method: str,
        key: str,
        number: int,
        head: bytes,
        body: bytes,
        arrived: float,
    ) -> None:
        fault = self.fault(method, key, number)
        answer = b""
        if fault == "503":
            answer = s3_error("SlowDown", 503)
        elif fault.startswith("error:"):
            _, code, status = fault.split(":")
            answer = s3_error(code, int(status))
        elif fault != "reset-before":
            try:
                answer = _forward(self.upstream_port, head, body)
            except OSError:
                fault = "no-server"
        status = _status(answer) if answer else None
        with self._lock:  # counted before the client hears anything
            self.seen.append(Seen(method, key, status, fault, arrived))
        if fault == "slow":  # the server took it; the answer is slow to come
            time.sleep(self.delay)
        if not answer or fault == "reset-after":
            _reset(client)
            return
        with contextlib.suppress(OSError):
            client.sendall(answer)


def _reset(sock: socket.socket) -> None:
    """Closes with a TCP reset, as a dropped connection does."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()


def _read_request(sock: socket.socket) -> tuple[str, str, bytes, bytes] | None:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    method, target, _version = lines[0].decode().split(" ", 2)
    headers = [line for line in lines[1:] if not line.lower().startswith(b"connection:")]
    length = 0
    for line in headers:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value.strip())
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ValueError("request cut short")
        body += chunk
    head = b"\r\n".join([lines[0], *headers, b"Connection: close"]) + b"\r\n\r\n"
    return method, target, head, body


def _forward(port: int, head: bytes, body: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as upstream:
        upstream.sendall(head + body)
        chunks = []
        while chunk := upstream.recv(65536):
            chunks.append(chunk)
    answer = b"".join(chunks)
    if not answer:
        raise OSError("the server closed without answering")
    return answer


def _status(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


@contextlib.contextmanager
def proxied(server: S3Server, fault: Fault | None = None) -> Iterator[FaultProxy]:
    proxy = FaultProxy(server.port, fault or (lambda method, key, n: ""))
    try:
        yield proxy
    finally:
        proxy.close()


def archive_config(
    path: Path, endpoint: str, prefix: str = "team", *, redact: bool = False, **extra: object
) -> Path:
    """A config file naming the archive at ``endpoint`` (fast retries unless ``extra`` says).

    The tests of the push itself compare what went with the landed files byte for byte, so
    they push raw (``[redact] enabled = false``); ``redact`` leaves the default policy on."""
    settings = {
        "attempts": 4,
        "backoff": 0.01,
        "backoff_cap": 0.05,
        "push_interval": 0.0,
        **extra,
    }
    lines = ["[archive]", f'url = "s3://{BUCKET}/{prefix}"', f'endpoint = "{endpoint}"']
    lines += [f"{key} = {value!r}" for key, value in settings.items()]
    if not redact:
        lines += ["[redact]", "enabled = false"]
    path.write_text("\n".join(lines) + "\n")
    return path
