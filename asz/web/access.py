"""Who may ask the web server anything: the address it serves, the names it answers to, and
the token.

Two threats shape this. A web page on another site can make the browser of someone running
``asz serve`` send requests to it, and by DNS rebinding (the attacker's name re-pointed at
127.0.0.1) even read the answers; the browser then sends the attacker's name in ``Host``. So
a request is answered only when its ``Host`` names the served port and either a name the
server is known by (the listen host, ``localhost``, and names given with ``--allow-host``) or
an IP address, which no rebinding can put there. And anyone on a network the server listens
on could read every prompt: a listen address other than loopback is refused unless a token is
configured, and once one is, every request must carry it.

The token comes from ``ASZ_WEB_TOKEN`` or from a file (``--token-file``, by default
``$XDG_CONFIG_HOME/asz/web-token``) that must be the user's own and private (mode 0600), as
ssh asks of a key. It is never logged and never shown.
"""

from __future__ import annotations

import ipaddress
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "MIN_TOKEN",
    "TOKEN_ENV",
    "TOKEN_FILE",
    "Access",
    "AccessError",
    "access_for",
    "default_token_file",
    "is_ip",
    "is_loopback",
    "load_token",
    "split_host",
]

TOKEN_ENV = "ASZ_WEB_TOKEN"  # noqa: S105 - the variable's name, not a token
TOKEN_FILE = Path("asz") / "web-token"
"""The token file's place under ``$XDG_CONFIG_HOME`` (``~/.config``)."""
MIN_TOKEN = 16
"""Characters a token needs at least: shorter ones are guessed."""
_MAX_TOKEN_FILE = 4096
_TOKEN = re.compile(rf"[A-Za-z0-9._~-]{{{MIN_TOKEN},1024}}")
"""URL- and cookie-safe characters only, so the token travels unchanged in a link and a
cookie."""


class AccessError(ValueError):
    """The server cannot start as asked (a token that is not usable, an exposed listen)."""


@dataclass(frozen=True, slots=True)
class Access:
    """What the guard checks: the served port, the names ``Host`` may carry, the token."""

    port: int
    names: frozenset[str]
    """Host names (lower case, no port) the server answers to, besides IP addresses."""
    token: str | None

    def host_allowed(self, host_header: str) -> bool:
        """Whether ``Host`` names this server: one of ``names`` or an IP address, with the
        served port (or none, when serving on 80)."""
        host, port = split_host(host_header)
        if host is None or port != self.port:
            return False
        return host in self.names or is_ip(host)


def split_host(value: str) -> tuple[str | None, int]:
    """``Host`` as a lower-case host and a port (80 when absent); None when malformed."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None, 0
        host, rest = value[1:end], value[end + 1 :]
    else:
        host, colon, port_text = value.partition(":")
        rest = colon + port_text
    if rest and not (rest.startswith(":") and rest[1:].isdigit()):
        return None, 0
    return (host or None), int(rest[1:]) if rest else 80


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """Whether a listen host is reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def access_for(host: str, port: int, token: str | None, allowed: tuple[str, ...] = ()) -> Access:
    """The rules for a server bound to ``host:port``; AccessError when it listens beyond
    loopback without a token."""
    if not is_loopback(host) and token is None:
        raise AccessError(
            f"listening on {host} would show every prompt to that network: configure a token "
            f"first ({TOKEN_ENV}, or a private token file: docs/web.md)"
        )
    names = {"localhost", host.lower(), *(name.lower() for name in allowed)}
    return Access(port=port, names=frozenset(names), token=token)


def default_token_file(env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(Path(env.get("HOME") or Path.home()) / ".config")
    return Path(base) / TOKEN_FILE


def load_token(env: Mapping[str, str], token_file: Path | None) -> str | None:
    """The configured token: the variable's, else the file's (the one named, else the default
    one when it exists); None when neither is configured. AccessError for a token that is too
    short or a file that is not the user's own private regular file."""
    token = env.get(TOKEN_ENV)
    if token is None:
        path = token_file or default_token_file(env)
        if token_file is None and not path.exists():
            return None
        token = _read_token_file(path)
    token = token.strip()
    if _TOKEN.fullmatch(token) is None:
        raise AccessError(
            f"the web token must be at least {MIN_TOKEN} of the characters A-Z a-z 0-9 . _ ~ - "
            "(python3 -c 'import secrets; print(secrets.token_urlsafe(32))' makes one)"
        )
    return token


def _read_token_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as err:
        raise AccessError(f"{path}: cannot read the token file ({err.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.getuid():
            raise AccessError(f"{path}: the token file must be a regular file of your own")
        if info.st_mode & 0o077:
            raise AccessError(f"{path}: the token file must be private (chmod 600)")
        data = handle.read(_MAX_TOKEN_FILE)
    try:
        return data.decode()
    except UnicodeDecodeError:
        raise AccessError(f"{path}: the token file is not text") from None
