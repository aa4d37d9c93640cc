"""The pages (the list, a session, a call, a body's bytes and a body's page) and the 404 and
400 pages: each reads what it shows through the library, in a worker thread, and renders its
template there too (a 200 KB request is a large page).

Every id in a URL is checked before it is used: a session id must be in Claude Code's UUID
form and landed, a message id one of the session's calls, a record id one of its bodies.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import quote, urlencode

import anyio
import anyio.to_thread
import orjson
from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.requests import Request
from starlette.responses import HTMLResponse, Response

from asz.view.records import ViewDocument
from asz.web.chart import cache_chart, weight_bar
from asz.web.compare import difference
from asz.web.formats import FILTERS, visible
from asz.web.library import Library, Missing
from asz.web.listing import MAX_FOUND, choice_of, chosen, found_prompts
from asz.web.pagination import page_items, page_of
from asz.web.request import PAGE_TEXT, pretty, request_parts
from asz.web.timeline import CallRow, Timeline
from asz.words import count

__all__ = ["BODY_CSP", "ROWS_PER_PAGE", "SESSIONS_PER_PAGE", "WORKERS", "Pages", "environment"]

SESSIONS_PER_PAGE = 100
ROWS_PER_PAGE = 200
"""Timeline rows per session page: a thousand-call session is five light pages."""
WORKERS = 2
"""Pages read at once; each may hold a session's view and report while it works."""
BODY_CSP = "default-src 'none'; sandbox"
"""A body is data: even a browser told to render it may run nothing of it."""


def environment() -> Environment:
    env = Environment(
        loader=PackageLoader("asz.web", "templates"),
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible,
    )
    env.filters.update(FILTERS)
    env.filters["segment"] = lambda value: quote(str(value), safe="")
    env.globals["urlencode"] = urlencode
    return env


class Pages:
    """The handlers, over one library."""

    def __init__(self, library: Library) -> None:
        self.library = library
        self.env = environment()
        self._limiter: anyio.CapacityLimiter | None = None

    async def _run(self, work: Callable[[], Any]) -> Any:
        if self._limiter is None:
            self._limiter = anyio.CapacityLimiter(WORKERS)
        return await anyio.to_thread.run_sync(work, limiter=self._limiter)

    async def _page(self, template: str, make: Callable[[], dict[str, Any]]) -> HTMLResponse:
        def work() -> str:
            return self.env.get_template(template).render(make())

        return HTMLResponse(await self._run(work))

    async def sessions(self, request: Request) -> Response:
        choice = choice_of(request.query_params)
        asked = request.query_params.get("page")

        def make() -> dict[str, Any]:
            entries = self.library.listed()
            shown = chosen(entries, choice)
            page = page_of(len(shown), SESSIONS_PER_PAGE, asked)
            found = found_prompts(shown, choice.search) if choice.search else []
            return {
                "found": found[:MAX_FOUND],
                "found_count": len(found),
                "entries": page_items(shown, page),
                "total": len(entries),
                "root": self.library.store.location,
                "page": page,
                "choice": choice,
            }

        return await self._page("sessions.html", make)

    async def session(self, request: Request) -> Response:
        session_id = request.path_params["session"]
        asked = request.query_params.get("page")

        def make() -> dict[str, Any]:
            session = self.library.session(session_id)
            view = self.library.view(session)
            report = self.library.report(session)
            found = self.library.timeline(session)
            page = page_of(len(found.items), ROWS_PER_PAGE, asked)
            return {
                "view": view,
                "summary": self.library.summary(session),
                "report": report,
                "items": page_items(found.items, page),
                "page": page,
                "chart": cache_chart(found.items),
                "counted": _counted(len(found.calls), len(found.items) - len(found.calls)),
                "numbers": {call.message_id: call.n for call in found.calls},
                "problems": list(dict.fromkeys([*view["problems"], *report["problems"]])),
            }

        return await self._page("session.html", make)

    async def call(self, request: Request) -> Response:
        session_id = request.path_params["session"]
        message_id = request.path_params["message_id"]
        return await self._page("call.html", lambda: self._call(session_id, message_id))

    def _call(self, session_id: str, message_id: str) -> dict[str, Any]:
        session = self.library.session(session_id)
        view = self.library.view(session)
        call = next((c for c in view["calls"] if c["message_id"] == message_id), None)
        if call is None:
            raise Missing(f"session {session.id} has no call {message_id}")
        report = self.library.report(session)
        row = next((r for r in report["rows"] if r["message_id"] == message_id), None)
        in_time = self.library.timeline(session)
        before, here, after = in_time.around(message_id)
        # a compaction's call, or one whose join was ambiguous, has neither or only one
        bodies: dict[str, str | None] = {"request": None, "response": None}
        bodies.update((body["role"], body["id"]) for body in call["provider_bodies"])
        found: dict[str, Any] = {"call": call, "row": row, "bodies": bodies, "session": view}
        found.update(here=here, before=before, after=after, compared=None)
        found.update(request=None, response=None, difference=None, previous=None)
        request_id = bodies.get("request")
        if request_id is not None:
            data = self.library.body(session, request_id)
            parsed = _object(data)
            if parsed is not None:
                parts = request_parts(parsed, len(data))
                found["request"] = parts
                found["weights"] = weight_bar(parts.weights)
                previous = row.get("previous") if row else None
                if previous is not None:
                    earlier = _object(self.library.body(session, previous))
                    if earlier is not None:
                        found["previous"] = previous
                        found["compared"] = _call_of(view, in_time, previous)
                        found["difference"] = difference(earlier, parsed)
        response_id = bodies.get("response")
        if response_id is not None:
            response = _object(self.library.body(session, response_id))
            if response is not None:
                found["response"] = {
                    "stop_reason": response.get("stop_reason"),
                    "usage": pretty(response["usage"]) if "usage" in response else None,
                    "messages": request_parts(
                        {"messages": [{"role": "assistant", "content": response.get("content")}]},
                        0,
                    ).messages,
                }
        return found

    async def body(self, request: Request) -> Response:
        session_id = request.path_params["session"]
        record_id = request.path_params["record_id"]

        def work() -> bytes:
            return self.library.body(self.library.session(session_id), record_id)

        data = await self._run(work)
        return Response(
            data, media_type="application/json", headers={"content-security-policy": BODY_CSP}
        )

    async def body_page(self, request: Request) -> Response:
        """A body as a page: what it is, the call it joined (or why none), links back, and
        its text (the first ``PAGE_TEXT`` characters), beside the link to its exact bytes."""
        session_id = request.path_params["session"]
        record_id = request.path_params["record_id"]

        def make() -> dict[str, Any]:
            session = self.library.session(session_id)
            data = self.library.body(session, record_id)
            view = self.library.view(session)
            in_time = self.library.timeline(session)
            parsed = _object(data)
            text = pretty(parsed) if parsed is not None else data.decode(errors="replace")
            shown, hidden = text[:PAGE_TEXT], max(0, len(text) - PAGE_TEXT)
            unjoined = next((b for b in view["summary"]["unjoined"] if b["id"] == record_id), None)
            return {
                "sid": session.id,
                "record_id": record_id,
                "size": len(data),
                "call": _call_of(view, in_time, record_id),
                "unjoined": unjoined,
                "json": parsed is not None,
                "text": shown,
                "hidden": hidden,
            }

        return await self._page("body.html", make)

    async def missing(self, request: Request, exc: Exception) -> Response:
        """The 404 page, saying what was not found."""
        if isinstance(exc, Missing):
            said = str(exc.args[0])
        else:  # the router's 404: no route, or no static file
            said = f"there is no page at {request.url.path}"
        return self._said(404, "Not found", said)

    async def bad_query(self, request: Request, exc: Exception) -> Response:
        """The 400 page, saying which query parameter no page offers and what it may be."""
        return self._said(400, "Not a choice this page offers", str(exc.args[0]))

    def _said(self, status: int, heading: str, said: str) -> HTMLResponse:
        html = self.env.get_template("said.html").render({"heading": heading, "said": said})
        return HTMLResponse(html, status_code=status)


def _counted(calls: int, compactions: int) -> str:
    """What a session's rows are: its calls and its compactions."""
    said = count(calls, "call")
    return f"{said}, {count(compactions, 'compaction')}" if compactions else said


def _call_of(view: ViewDocument, in_time: Timeline, record_id: str) -> CallRow | None:
    """The call a body joined, if one did."""
    for call in view["calls"]:
        if any(body["id"] == record_id for body in call["provider_bodies"]):
            return in_time.around(call["message_id"])[1]
    return None


def _object(data: bytes) -> dict[str, Any] | None:
    """A body parsed as a JSON object; None when it is not one (shown as bytes only)."""
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None
