"""``asz serve`` run for real: the executable in a subprocess, its port read from its log,
and plain HTTP requests to it (with any ``Host`` header a test wants to send).

Shared by the web tests and the browser tests.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from support.cli import asz_executable

__all__ = [
    "HIDING",
    "HOSTILE",
    "WAIT",
    "Answer",
    "Served",
    "child_env",
    "hostile_capture",
    "land",
    "request",
    "serve_command",
    "serving",
    "tree",
]

WAIT = 30.0


def child_env(home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    env.update(extra or {})
    return env


def land(tmp: Path, claude: Path) -> Path:
    """``claude`` landed by one real ``asz collect --once`` pass into ``tmp / "root"``."""
    root = tmp / "root"
    done = subprocess.run(
        [*asz_executable(), "collect", "--once", "--root", str(root)],
        env=child_env(tmp / "home", {"CLAUDE_CONFIG_DIR": str(claude)}),
        capture_output=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return root


@dataclass
class Answer:
    status: int
    headers: dict[str, str]
    body: bytes

    @property
    def text(self) -> str:
        return self.body.decode()


def request(
    port: int, path: str, headers: dict[str, str] | None = None, method: str = "GET"
) -> Answer:
    """One HTTP request to 127.0.0.1:``port``; ``Host`` is ``127.0.0.1:port`` unless given."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=WAIT)
    try:
        sent = {"Host": f"127.0.0.1:{port}", **(headers or {})}
        connection.request(method, path, headers=sent)
        response = connection.getresponse()
        return Answer(
            response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        )
    finally:
        connection.close()


class Served:
    """One running ``asz serve``; its log lines (JSON) are read as they come."""

    def __init__(self, process: subprocess.Popen[bytes]) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        assert process.stdout is not None
        first = process.stdout.readline()
        assert first, f"asz serve exited: {process.stderr.read() if process.stderr else ''!r}"
        self.lines.append(orjson.loads(first))
        self.port = int(self.lines[0]["port"])
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for raw in self.process.stdout:
            self.lines.append(orjson.loads(raw))

    def ended(self) -> int:
        """Its exit status, once it has ended and every line it logged is read."""
        code = self.process.wait(timeout=WAIT)
        self._reader.join(timeout=WAIT)
        return code

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def get(self, path: str, headers: dict[str, str] | None = None) -> Answer:
        return request(self.port, path, headers)


def serve_command(root: Path, *flags: str) -> list[str]:
    return [*asz_executable(), "serve", "--root", str(root), "--log-format", "json", *flags]


@contextlib.contextmanager
def serving(
    root: Path, home: Path, *flags: str, env: dict[str, str] | None = None
) -> Iterator[Served]:
    """``asz serve`` on a free loopback port (unless ``flags`` give ``--listen``)."""
    listen = () if "--listen" in flags else ("--listen", "127.0.0.1:0")
    process = subprocess.Popen(
        serve_command(root, *listen, *flags),
        env=child_env(home, env),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        yield Served(process)
    finally:
        if process.poll() is None:
            process.terminate()
        process.wait(timeout=WAIT)
        assert process.stdout is not None and process.stderr is not None
        process.stdout.close()
        process.stderr.close()


def tree(root: Path) -> dict[str, tuple[int, int, int]]:
    """Every path under ``root`` with its mode, size and mtime (ns): what a write changes."""
    found = {}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(root))] = (info.st_mode, info.st_size, info.st_mtime_ns)
    info = root.lstat()
    found["."] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


HOSTILE = (
    "<script>window.aszPwned = 1</script>",
    '<img src=x onerror="window.aszPwned = 2">',
    '<a href="javascript:window.aszPwned = 3">click me</a>',
)
"""What a hostile file or tool output could put in a body: each would set the flag if a page
ran it."""


HIDING = (
    "left \u202eright-to-left\u202c and \u2067isolated\u2069 \u200fmarks\u200e \u061c",
    "nul \x00 escape \x1b[31mred\x1b[0m bell \x07 del \x7f c1 \x9b cr \r zero\u200bwidth",
)
"""Text that hides or reorders what follows it when written raw: bidi controls, NUL, ESC."""


def hostile_capture(claude: Path, hostile: tuple[str, ...] = HOSTILE) -> tuple[str, str]:
    """A Claude Code directory holding one session whose request's messages (its text, a
    reminder, a tool result, a tool's input) and response hold ``hostile``, joined to its
    call; its session and message ids."""
    from support.claude_dir import Claude, request_body, response_body

    session, message_id = "5e55e55e-0000-4000-8000-00000000beef", "msg_hostile"
    made = Claude(claude)
    cwd = "/home/u/" + hostile[0]
    user = {
        "type": "user",
        "sessionId": session,
        "uuid": "u-1",
        "parentUuid": None,
        "cwd": cwd,
        "promptId": "p1",
        "timestamp": "2026-09-01T10:00:00.000Z",
        "message": {"role": "user", "content": "look at " + hostile[1]},
    }
    assistant = {
        "type": "assistant",
        "sessionId": session,
        "uuid": "a-1",
        "parentUuid": "u-1",
        "cwd": cwd,
        "timestamp": "2026-09-01T10:00:02.000Z",
        "requestId": "req_hostile",
        "message": {"id": message_id, "role": "assistant", "model": "claude-test"},
    }
    path = made.transcript_path(session)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(user) + b"\n" + orjson.dumps(assistant) + b"\n")
    body = orjson.loads(request_body(session, prompt="p1", tools=True))
    text = " ".join(hostile)
    body["messages"] = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": f"<system-reminder>{text}</system-reminder>"},
                {"type": "text", "text": text, "cache_control": {"type": "ephemeral"}},
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": text, "input": {text: text}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": text}],
        },
    ]
    made.body("0000beef-0000-4000-8000-000000000001.request.json", orjson.dumps(body))
    response = orjson.loads(response_body(message_id, text))
    made.body("req_hostile.response.json", orjson.dumps(response))
    return session, message_id
