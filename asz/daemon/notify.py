"""systemd's notification protocol: datagrams to ``$NOTIFY_SOCKET``, nothing else needed.

With ``Type=notify`` systemd counts the service as started only on ``READY=1``, so a unit
that depends on it (or an operator running ``systemctl --user start``) waits until the first
scan is done; ``WATCHDOG=1`` lets systemd restart a service whose event loop hung, which a
process that merely exists would never reveal. Outside systemd ``NOTIFY_SOCKET`` is unset and
every call here does nothing.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping

__all__ = ["Notifier"]


class Notifier:
    """Sends state lines to the service manager, if there is one listening."""

    def __init__(self, address: str | None, watchdog_usec: int | None = None) -> None:
        self._address = _socket_address(address) if address else None
        self._watchdog_usec = watchdog_usec if self._address else None

    @classmethod
    def from_environ(cls, env: Mapping[str, str] | None = None) -> Notifier:
        """The notifier systemd set up for this process through its environment.

        ``WATCHDOG_PID`` names the process the watchdog is meant for; a child that inherited
        the variables from a watched parent must not feed the parent's watchdog.
        """
        env = os.environ if env is None else env
        address = env.get("NOTIFY_SOCKET") or None
        usec = _positive_int(env.get("WATCHDOG_USEC"))
        watched_pid = _positive_int(env.get("WATCHDOG_PID"))
        if watched_pid is not None and watched_pid != os.getpid():
            usec = None
        return cls(address, usec)

    @property
    def enabled(self) -> bool:
        return self._address is not None

    @property
    def watchdog_interval(self) -> float | None:
        """Seconds between ``WATCHDOG=1`` pings: half the timeout, as systemd advises."""
        return None if self._watchdog_usec is None else self._watchdog_usec / 2_000_000

    def send(self, *assignments: str) -> None:
        """Sends ``KEY=value`` lines in one datagram, without ever waiting.

        The sender is the event loop, and a receiver that stopped reading fills its queue
        (ten datagrams by default on Linux) after which a blocking send would hang the loop
        for good. So the send does not block: a full queue, or a manager that went away,
        raises OSError for the caller to count, and the message is dropped.
        """
        if self._address is None:
            return
        payload = "\n".join(assignments).encode()
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as sock:
            sock.setblocking(False)
            sock.sendto(payload, self._address)

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def watchdog(self) -> None:
        self.send("WATCHDOG=1")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")


def _socket_address(address: str) -> str:
    """An ``@name`` address is in Linux's abstract namespace, spelled with a leading NUL."""
    return "\0" + address[1:] if address.startswith("@") else address


def _positive_int(text: str | None) -> int | None:
    try:
        value = int(text) if text else 0
    except ValueError:
        return None
    return value if value > 0 else None
