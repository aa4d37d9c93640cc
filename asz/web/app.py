"""The application: the five stable URLs, the static files, the 404 and 400 pages, behind the
guard.

Starlette is the framework: it is built on anyio (as asz is), small, typed, and gives
routing, static files and error handlers without imposing anything else. Jinja2 renders the
pages with autoescape on, so every string a body holds is escaped where it is written.
"""

from __future__ import annotations

from functools import partial

from starlette.applications import Starlette
from starlette.routing import Match, Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp
from structlog.typing import FilteringBoundLogger

from asz.web.access import Access
from asz.web.contained import Contained
from asz.web.guard import Guard
from asz.web.library import Library, Missing
from asz.web.pages import Pages
from asz.web.pagination import BadQuery

__all__ = ["create_app", "landing"]


def create_app(library: Library, access: Access, log: FilteringBoundLogger) -> ASGIApp:
    """The ASGI application serving ``library`` under the rules of ``access``; a page that
    fails is logged to ``log`` without its message (``asz.web.contained``)."""
    pages = Pages(library)
    app = Starlette(
        routes=[
            Route("/", pages.sessions, name="sessions"),
            Route("/sessions/{session}", pages.session, name="session"),
            Route("/sessions/{session}/calls/{message_id}", pages.call, name="call"),
            Route("/sessions/{session}/bodies/{record_id}", pages.body, name="body"),
            Route("/sessions/{session}/bodies/{record_id}/page", pages.body_page, name="body_page"),
            Mount("/static", StaticFiles(packages=[("asz.web", "static")]), name="static"),
        ],
        exception_handlers={
            Missing: pages.missing,
            404: pages.missing,
            BadQuery: pages.bad_query,
        },
    )
    return Contained(Guard(app, access, partial(landing, app)), log)


def landing(app: Starlette, path: str) -> str:
    """The page ``path`` names, as its route builds it (its parameters quoted), else the
    session list: always a path on this origin, whatever was sent."""
    for route in app.routes:
        if not isinstance(route, Route):
            continue
        match, child = route.matches({"type": "http", "path": path, "method": "GET"})
        if match is Match.FULL:
            return str(app.url_path_for(route.name, **child["path_params"]))
    return "/"
