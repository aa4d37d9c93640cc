"""A page that fails answers 500 and is logged by its exception's type alone.

An exception's message may quote what it was reading, and what the web view reads is bodies:
the traceback uvicorn would print could carry a prompt or a file into the service's log. So
every failure stops here, is logged as ``page_failed`` with the path and the exception's type,
and the browser gets a plain 500 page (unless the answer had already begun).
"""

from __future__ import annotations

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from structlog.typing import FilteringBoundLogger


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
                answer = PlainTextResponse("asz could not make this page (see its log)", 500)
                await answer(scope, receive, send)
