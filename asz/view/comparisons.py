"""Every landed request compared with the previous request of its chain, in one walk.

The previous request is the one joined to the call whose response carries the request id this
request names in ``cc_prev_req``; a request that names none is a chain's ``first``. Requests
are read in landing order through ``Session.body_parts().walk()``, which holds only the latest
of them, and a request's shape is kept only until every request compared with it has been:
memory stays flat however long the session is, and each request costs what it adds. The same
walk reads each response's ``usage``, so the session's body files are read once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from asz.store import BodyManifest, BodyParts
from asz.view.calls import Call
from asz.view.causes import (
    FIRST,
    UNKNOWN,
    UNREADABLE,
    Between,
    compacted_between,
    compare,
    unreadable_detail,
)
from asz.view.document import facts_of_response, not_an_object
from asz.view.evidence import seconds_apart
from asz.view.joins import JoinedSession
from asz.view.records import Comparison
from asz.view.shapes import Shape, ShapeReader

__all__ = ["Compared", "compare_requests"]


@dataclass(frozen=True, slots=True)
class Compared:
    comparisons: dict[str, Comparison]
    """Request record id -> its comparison."""
    responses: dict[str, dict[str, Any]]
    """Response record id -> ``usage``, ``stop_reason`` and ``cache_miss_reason``."""


class _Walk:
    def __init__(self, joined: JoinedSession, problems: list[str]) -> None:
        self.joined = joined
        self.problems = problems
        responses: dict[str, list[str]] = {}
        for body in joined.bodies.values():
            if body.role == "response" and body.keys.request_id:
                responses.setdefault(body.keys.request_id, []).append(body.record_id)
        self._response_of_request = {k: v[0] for k, v in responses.items() if len(v) == 1}
        self.requests = {r: b for r, b in joined.bodies.items() if b.role == "request"}
        self.previous_of = {r: self._previous(b) for r, b in self.requests.items()}
        self.dependents: dict[str, list[str]] = {}
        for record_id, previous in self.previous_of.items():
            if previous is not None:
                self.dependents.setdefault(previous, []).append(record_id)
        self.waiting = {previous: len(found) for previous, found in self.dependents.items()}
        """How many requests are still to be compared with each request."""
        self.shapes: dict[str, Shape | None] = {}
        self.found: dict[str, Comparison] = {}
        self.responses: dict[str, dict[str, Any]] = {}
        """Response record id -> its facts (``asz.view.document.facts_of_response``)."""

    def _previous(self, request: BodyManifest) -> str | None:
        named = request.keys.prev_request
        joins = self.joined.joins
        response = self._response_of_request.get(named) if named else None
        message_id = joins.call_of.get(response) if response else None
        return joins.request_of.get(message_id) if message_id else None

    def run(self) -> Compared:
        session = self.joined.session
        parts = session.body_parts()
        reader = ShapeReader(parts)
        for record_id, role in parts.walk():
            if role == "response":
                self._take_response(parts, record_id)
                continue
            if record_id not in self.requests:
                continue
            shape = reader.shape(record_id)
            if shape is None:  # its row says why
                not_an_object(session, record_id, "the body is not a JSON object", self.problems)
            self.shapes[record_id] = shape
            self._compare_ready(record_id)
        for record_id in self.requests:
            if record_id not in self.found:  # never read, or its previous never was
                self._settle(record_id)
        return Compared(self.found, self.responses)

    def _take_response(self, parts: BodyParts, record_id: str) -> None:
        """A response's usage and the provider's verdict, read while the walk holds it."""
        body = parts.span(record_id, 0, parts.size(record_id))
        try:
            value = orjson.loads(body)
        except orjson.JSONDecodeError:
            not_an_object(self.joined.session, record_id, "the body is not JSON", self.problems)
            return
        if isinstance(value, dict):
            self.responses[record_id] = facts_of_response(value)
        else:
            why = "the body is not a JSON object"
            not_an_object(self.joined.session, record_id, why, self.problems)

    def _compare_ready(self, record_id: str) -> None:
        """Compares the request just read, and those that waited for it, once both sides of
        each comparison are read."""
        if self.previous_of[record_id] is None or self.previous_of[record_id] in self.shapes:
            self._settle(record_id)
        for waiting in self.dependents.get(record_id, ()):
            if waiting in self.shapes and waiting not in self.found:
                self._settle(waiting)

    def _settle(self, record_id: str) -> None:
        previous = self.previous_of[record_id]
        self.found[record_id] = self._comparison(
            self.requests[record_id], previous, self.shapes.get(record_id)
        )
        if previous is not None:
            self.waiting[previous] -= 1
            self._release(previous)
        self._release(record_id)

    def _release(self, record_id: str) -> None:
        """Lets go of a shape once it is compared and no request waits for it."""
        if record_id in self.found and not self.waiting.get(record_id):
            self.shapes.pop(record_id, None)

    def _comparison(
        self, request: BodyManifest, previous_id: str | None, current: Shape | None
    ) -> Comparison:
        joins = self.joined.joins
        calls = self.joined.transcript.calls
        named = request.keys.prev_request
        previous = self.shapes.get(previous_id) if previous_id else None
        also: list[str] = []
        if current is None:
            cause, detail = UNREADABLE, unreadable_detail(request)
        elif not named:
            cause, detail = FIRST, "names no previous request"
        elif previous_id is None or previous is None:
            cause, detail = UNKNOWN, f"no readable request is joined to the call of {named}"
        else:
            call = _call_of(self.joined, request.record_id)
            before = calls[joins.call_of[previous_id]]
            between = Between(
                gap_seconds=seconds_apart(before.last_time, call.time) if call else None,
                compacted=call is not None
                and compacted_between(self.joined.transcript, before, call),
            )
            found = compare(previous, current, between)
            (cause, detail), also = found[0], [item[0] for item in found[1:]]
        return {"previous": previous_id, "cause": cause, "detail": detail, "also": also}


def _call_of(joined: JoinedSession, record_id: str) -> Call | None:
    message_id = joined.joins.call_of.get(record_id)
    return joined.transcript.calls.get(message_id) if message_id else None


def compare_requests(joined: JoinedSession, problems: list[str]) -> Compared:
    """Every landed request's comparison, and every response's facts, from one walk over the
    session's bodies; what could not be read is added to ``problems``."""
    return _Walk(joined, problems).run()
