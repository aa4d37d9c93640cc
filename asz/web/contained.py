"""A page that fails answers 500 and is logged by its exception's type alone.

An exception's message may quote what it was reading, and what the web view reads is bodies:
the traceback uvicorn would print could carry a prompt or a file into the service's log. So
every failure stops here, is logged as ``page_failed`` with the path and the exception's type,
and the browser gets the 500 page docs/web.md describes, with the security headers of every
answer (unless the answer had already begun).
"""

from __future__ import annotations

from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.typing import FilteringBoundLogger

from asz.web.guard import answer_plain

__all__ = ["FAILED_PAGE", "Contained"]

FAILED_PAGE = (
    '<!doctype html><html lang="en"><head><meta charset="utf-8">'
    '<meta name="viewport" content="width=device-width, initial-scale=1">'
    '<title>failed - asz</title><link rel="stylesheet" href="/static/asz.css"></head>'
    '<body><header class="top"><a href="/" class="brand">asz</a></header><main>'
    "<h1>This page failed</h1>"
    '<p id="failed">asz could not make this page, see its log (the event '
    "<code>page_failed</code> names the path and the error).</p>"
    '<p><a href="/">every session</a></p></main></body></html>'
)
"""Written out here, not rendered: the page that says rendering failed must not render."""


class Contained:
    def __init__(self, app: ASGIApp, log: FilteringBoundLogger) -> None:
        self.app = app
        self.log = log

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = False

        async def sending(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as err:  # every failure, so that none reaches a log whole
            self.log.error("page_failed", path=scope.get("path"), error=type(err).__name__)
            if not started and scope["type"] == "http":
                await answer_plain(send, 500, FAILED_PAGE, [], html=True)
