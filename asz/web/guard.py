"""The door every request passes before any page: methods, ``Host``, token, and the headers
that keep hostile content inert.

It is plain ASGI around the application, so that nothing in the application (a route, an
error page, a static file) can answer without it. What it enforces is decided in
:mod:`.access`; here it is applied:

- only ``GET`` and ``HEAD``: nothing the server does writes, and a form posted from another
  site has nothing to reach (405);
- ``Host`` must name this server (403), against DNS rebinding;
- with a token configured, every request carries it: ``Authorization: Bearer <token>``, or
  the cookie set when a link carrying ``?token=<token>`` is opened once (the server answers
  that link with a redirect to the same page without the token, so it leaves the address bar
  and the history); else 401. That redirect goes to the page the route matched, rebuilt
  from its name and parameters, never to the path as sent: ``//evil.example/x`` or
  ``/%5Cevil.example/`` would otherwise send the browser to another site (an open redirect);
- a path holding a control character (``/a%0d%0aSet-Cookie:...``) names no page and could
  break a header that quotes it: 400;
- every answer carries a Content-Security-Policy that allows no script at all and nothing
  from another origin (the pages need no script: sorting, filtering and paging are links and
  forms, folding is ``<details>``), with ``nosniff``, no referrer, no framing and no caching.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Callable
from http.cookies import CookieError, SimpleCookie
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from asz.web.access import Access

__all__ = ["CSP", "HEADERS", "METHODS", "TOKEN_PARAMETER", "Guard", "answer_plain", "cookie_name"]

CSP = (
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; "
    "base-uri 'none'; frame-ancestors 'none'"
)
"""No script, no inline style, nothing from another origin; forms only to this server."""
HEADERS = (
    (b"content-security-policy", CSP.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"no-referrer"),
    (b"x-frame-options", b"DENY"),
    (b"cross-origin-opener-policy", b"same-origin"),
    (b"cross-origin-resource-policy", b"same-origin"),
    (b"cache-control", b"no-store"),
)
METHODS = frozenset({"GET", "HEAD"})
TOKEN_PARAMETER = "token"  # noqa: S105 - the parameter's name, not a token
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def cookie_name(port: int) -> str:
    """One cookie per served port: cookies are shared by every port of a host."""
    return f"asz_token_{port}"


class Guard:
    """The ASGI middleware (see the module)."""

    def __init__(self, app: ASGIApp, access: Access, landing: Callable[[str], str]) -> None:
        self.app = app
        self.access = access
        self.landing = landing
        """The path on this origin to send a signed-in request to, from its request path."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            key.decode("latin-1"): value.decode("latin-1") for key, value in scope["headers"]
        }
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            status, text, extra = refusal
            await answer_plain(send, status, text, extra)
            return
        if self.access.token is not None and TOKEN_PARAMETER in _query(scope):
            await self._set_cookie(scope, send)
            return
        await self.app(scope, receive, _secured(send))

    def _refusal(
        self, scope: Scope, headers: dict[str, str]
    ) -> tuple[int, str, list[tuple[bytes, bytes]]] | None:
        if scope["method"] not in METHODS:
            return 405, "this server only reads: GET and HEAD", [(b"allow", b"GET, HEAD")]
        if _CONTROL.search(scope["path"]):
            return 400, "a path holding a control character names no page", []
        if not self.access.host_allowed(headers.get("host", "")):
            return 403, "this server does not answer to that Host", []
        if self.access.token is None:
            return None
        if any(_same(given, self.access.token) for given in _tokens_carried(scope, headers)):
            return None
        return 401, "this server needs its token: open the link with ?token=... once", []

    async def _set_cookie(self, scope: Scope, send: Send) -> None:
        """Answers a request whose token is right (checked above) with the cookie and a
        redirect to the same page without the token."""
        token = self.access.token
        assert token is not None
        kept = [(key, value) for key, value in _query(scope).items() if key != TOKEN_PARAMETER]
        target = self.landing(scope["path"])
        if kept:
            target += "?" + urlencode(kept)
        cookie = f"{cookie_name(self.access.port)}={token}; HttpOnly; SameSite=Strict; Path=/"
        await answer_plain(
            send,
            303,
            "signed in",
            [(b"location", target.encode()), (b"set-cookie", cookie.encode())],
        )


def _query(scope: Scope) -> dict[str, str]:
    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


def _tokens_carried(scope: Scope, headers: dict[str, str]) -> list[str]:
    """Every token the request offers: the bearer header, the cookie, the link's."""
    found = []
    authorization = headers.get("authorization", "")
    if authorization.lower().startswith("bearer "):
        found.append(authorization[len("bearer ") :].strip())
    cookies = SimpleCookie()
    try:
        cookies.load(headers.get("cookie", ""))
    except CookieError:  # a malformed Cookie header carries no token
        cookies = SimpleCookie()
    for morsel in cookies.values():
        if morsel.key.startswith("asz_token_"):
            found.append(morsel.value)
    link = _query(scope).get(TOKEN_PARAMETER)
    if link is not None:
        found.append(link)
    return found


def _same(given: str, token: str) -> bool:
    """Compared in constant time, so the answer's timing tells nothing of the token."""
    return hmac.compare_digest(given.encode(), token.encode())


def _secured(send: Send) -> Send:
    """``send`` with the security headers added to the response's start (a header the
    application set itself, such as a stricter policy for a body, is kept)."""

    async def sending(message: Message) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", []))
            present = {key.lower() for key, _ in headers}
            headers += [(key, value) for key, value in HEADERS if key not in present]
            message = {**message, "headers": headers}
        await send(message)

    return sending


async def answer_plain(
    send: Send, status: int, text: str, extra: list[tuple[bytes, bytes]], *, html: bool = False
) -> None:
    """A whole answer written here, before or around the application, with the security
    headers: ``text`` as plain text, or as a page when ``html``."""
    body = (text + "\n").encode()
    kind = b"text/html; charset=utf-8" if html else b"text/plain; charset=utf-8"
    headers = [
        (b"content-type", kind),
        (b"content-length", str(len(body)).encode()),
        *extra,
    ]
    await _secured(send)({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
