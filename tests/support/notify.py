"""A systemd notification socket: a real AF_UNIX datagram socket, read as systemd would."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator

from support.service import wait_until

__all__ = ["Datagrams", "notify_socket"]


@contextlib.contextmanager
def notify_socket() -> Iterator[tuple[socket.socket, str]]:
    """A bound datagram socket at a short path (AF_UNIX paths are limited to ~100 bytes)."""
    directory = tempfile.mkdtemp(prefix="asz-notify-")
    path = os.path.join(directory, "notify")
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(path)
    receiver.settimeout(5)
    try:
        yield receiver, path
    finally:
        receiver.close()
        shutil.rmtree(directory)


class Datagrams:
    """What the service sent, read as it arrives."""

    def __init__(self, receiver: socket.socket) -> None:
        self.receiver = receiver
        self.received: list[bytes] = []

    def wait_for(self, done: Callable[[list[bytes]], bool], what: str) -> None:
        def pump() -> bool:
            with contextlib.suppress(TimeoutError):
                self.received.append(self.receiver.recv(4096))
            return done(self.received)

        wait_until(pump, what)

    def index(self, fragment: bytes) -> int:
        return next(i for i, message in enumerate(self.received) if fragment in message)
