"""The real ``asz`` with one side on a pseudo-terminal, as a person at a terminal sees it."""

from __future__ import annotations

import fcntl
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import time
from typing import Any

from support.cli import asz_executable

__all__ = ["on_a_terminal"]


def on_a_terminal(
    args: list[str], env: dict[str, str], side: str, columns: int = 100, until: bytes = b""
) -> tuple[int, str, bytes]:
    """Runs the real ``asz`` with ``side`` (``stdout`` or ``stderr``) on a pseudo-terminal
    ``columns`` wide and the other side on a pipe: its exit code, what the terminal showed
    (newlines as written), and what the pipe got. With ``until``, the process is a service,
    stopped with SIGTERM once the terminal shows it."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    streams: dict[str, Any] = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE, side: slave}
    process = subprocess.Popen([*asz_executable(), *args], env=env, **streams)
    os.close(slave)
    shown = b""
    stopping = False
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if until and until in shown and not stopping:
            process.send_signal(signal.SIGTERM)  # once: a second one stops it at once
            stopping = True
        if not select.select([master], [], [], 0.1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the terminal's other end closed: the process exited
            break
        if not chunk:
            break
        shown += chunk
    os.close(master)
    other = process.stderr if side == "stdout" else process.stdout
    assert other is not None
    piped = other.read()
    other.close()
    return process.wait(timeout=30), shown.decode().replace("\r\n", "\n"), piped
