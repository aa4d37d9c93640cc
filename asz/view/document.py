"""The ``asz.view/1`` document: a session's streams, calls and compactions, with its bodies.

The document is built from transcript lines and body manifests only. A call lists the bodies
joined to it by reference (record id, landed file, row), never the bodies themselves: a
request holds the whole conversation so far and a session's requests add up to far more than
its transcripts. Only joined responses are rebuilt, for the final ``usage`` and
``stop_reason`` that transcripts do not hold (the transcript's usage is a running value
written while the response streamed); a response is small. See ``docs/view.md``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import orjson

from asz.store import BodyNotFound, CodecError, Session
from asz.view.calls import Call, Stream
from asz.view.joins import JoinedSession, join_session, matching_prompt
from asz.view.records import (
    ViewBody,
    ViewCall,
    ViewDocument,
    ViewSession,
    ViewStart,
    ViewStream,
    ViewSummary,
    ViewUnjoined,
)

__all__ = [
    "SCHEMA",
    "ParsedBodies",
    "build_view",
    "facts_of_response",
    "not_an_object",
    "problems_of",
]

SCHEMA = "asz.view/1"


class ParsedBodies:
    """A session's bodies parsed as JSON objects on demand; each that cannot be is a problem."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.problems: list[str] = []

    def body(self, record_id: str) -> bytes | None:
        """The body's exact bytes, or None (with the reason in ``problems``)."""
        try:
            return self.session.body(record_id)
        except (BodyNotFound, CodecError) as err:
            self.problems.append(f"{record_id}: {err}")
            return None

    def parsed(self, record_id: str) -> dict[str, Any] | None:
        """The body as a JSON object, or None (with the reason in ``problems``)."""
        data = self.body(record_id)
        if data is None:
            return None
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            not_an_object(self.session, record_id, "the body is not JSON", self.problems)
            return None
        if not isinstance(value, dict):
            not_an_object(self.session, record_id, "the body is not a JSON object", self.problems)
            return None
        return value

    def response_facts(self, record_id: str) -> dict[str, Any] | None:
        """``usage``, ``stop_reason`` and ``cache_miss_reason`` of a response body."""
        value = self.parsed(record_id)
        return None if value is None else facts_of_response(value)


def not_an_object(session: Session, record_id: str, why: str, problems: list[str]) -> None:
    """Adds ``why`` to ``problems`` unless the body landed whole: its manifest then says why
    (not valid UTF-8, not a JSON object...), and what Claude Code wrote is no damage."""
    if session.manifest(record_id).why is None:
        problems.append(f"{record_id}: {why}")


def facts_of_response(value: dict[str, Any]) -> dict[str, Any]:
    """``usage``, ``stop_reason`` and the provider's own ``cache_miss_reason`` of a parsed
    response, which may give it in ``usage`` or in ``diagnostics``."""
    usage = value.get("usage") if isinstance(value.get("usage"), dict) else None
    diagnostics = value.get("diagnostics")
    miss = (usage or {}).get("cache_miss_reason")
    if miss is None and isinstance(diagnostics, dict):
        miss = diagnostics.get("cache_miss_reason")
    return {"usage": usage, "stop_reason": value.get("stop_reason"), "cache_miss_reason": miss}


def problems_of(joined: JoinedSession, bodies: list[str]) -> list[str]:
    """Every problem met reading the session, then those met reading its bodies, each once."""
    found = [str(problem) for problem in joined.session.problems] + bodies
    return list(dict.fromkeys(found))


def build_view(session: Session, *, responses: bool = True) -> ViewDocument:
    """The view document of one session (see ``docs/view.md``).

    Without ``responses`` no body is read: the calls' ``usage`` and ``stop_reason`` are null,
    for a reader that takes them from the session's cache report (which holds both), and so
    costs what the transcripts and manifests hold."""
    joined = join_session(session)
    parsed = ParsedBodies(session) if responses else None
    calls = [
        _call(joined, call, n, parsed)
        for n, call in enumerate(joined.transcript.ordered_calls(), start=1)
    ]
    return {
        "schema": SCHEMA,
        "session": _session(joined),
        "streams": [_stream(joined, stream) for stream in joined.transcript.ordered_streams()],
        "calls": calls,
        "epochs": [
            {
                "type": "epoch.boundary",
                "stream": epoch.stream,
                "uuid": epoch.uuid,
                "time": epoch.time,
                "trigger": epoch.trigger,
                "pre_tokens": epoch.pre_tokens,
                "summary": epoch.summary,
            }
            for epoch in joined.transcript.epochs
        ],
        "summary": _summary(joined, calls),
        "problems": problems_of(joined, parsed.problems if parsed else []),
    }


def _session(joined: JoinedSession) -> ViewSession:
    transcript = joined.transcript
    models = dict.fromkeys(
        call.model for call in transcript.calls.values() if call.model and not call.synthetic
    )
    roles = Counter(body.role for body in joined.bodies.values())
    return {
        "id": joined.session.id,
        "directories": {"projects": transcript.project_dirs, "cwds": transcript.cwds},
        "first_time": transcript.first_time,
        "last_time": transcript.last_time,
        "models": list(models),
        "counts": {
            "lines": transcript.lines,
            "unreadable_lines": transcript.unreadable_lines,
            "streams": len(transcript.streams),
            "calls": len(transcript.calls),
            "synthetic_calls": sum(call.synthetic for call in transcript.calls.values()),
            "epochs": len(transcript.epochs),
            "requests": roles["request"],
            "responses": roles["response"],
        },
    }


def _stream(joined: JoinedSession, stream: Stream) -> ViewStream:
    start = stream.started_by
    started_by: ViewStart | None = None
    if start is not None:
        parent = joined.transcript.calls[start.message_id]
        started_by = {
            "stream": start.stream,
            "message_id": start.message_id,
            "tool_use_id": start.tool_use_id,
            "prompt_id": matching_prompt(joined.transcript, parent),
        }
    return {
        "id": stream.name,
        "sources": stream.sources,
        "lines": stream.lines,
        "calls": len(stream.calls),
        "first_time": stream.first_time,
        "last_time": stream.last_time,
        "gap": stream.gap,
        "started_by": started_by,
    }


def _call(joined: JoinedSession, call: Call, n: int, responses: ParsedBodies | None) -> ViewCall:
    joins = joined.joins
    bodies: list[ViewBody] = []
    facts = None
    for role, table in (("request", joins.request_of), ("response", joins.response_of)):
        record_id = table.get(call.message_id)
        if record_id is not None:
            body = joined.bodies[record_id]
            bodies.append({"role": role, "id": record_id, "ref": body.ref})
            if role == "response" and responses is not None:
                facts = responses.response_facts(record_id)
    return {
        "n": n,
        "stream": call.stream,
        "message_id": call.message_id,
        "request_id": call.request_id,
        "prompt_id": call.prompt_id,
        "model": call.model,
        "synthetic": call.synthetic,
        "version": call.version,
        "time": call.time,
        "last_time": call.last_time,
        "fragments": call.fragments,
        "usage": facts["usage"] if facts else None,
        "stop_reason": facts["stop_reason"] if facts else None,
        "provider_bodies": bodies,
    }


def _summary(joined: JoinedSession, calls: list[ViewCall]) -> ViewSummary:
    joins = joined.joins
    unjoined: list[ViewUnjoined] = [
        {
            "id": record_id,
            "role": joined.bodies[record_id].role,
            "reason": why.reason,
            "detail": why.detail,
        }
        for record_id, why in joins.unjoined.items()
    ]
    return {
        "calls": len(calls),
        "bodies_landed": len(joined.bodies),
        "requests_joined": len(joins.request_of),
        "requests_joined_through_index": len(joins.via_index),
        "responses_joined": len(joins.response_of),
        "calls_with_both": sum(len(call["provider_bodies"]) == 2 for call in calls),
        "unjoined": unjoined,
        "unjoined_by_reason": dict(Counter(item["reason"] for item in unjoined)),
    }
