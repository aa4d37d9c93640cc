"""The ground truth of a capture (``expected.json``), derived from what the simulation did.

Claims and joins are worked out here with the rules a collector and the view follow, from the
ids the bodies and transcripts carry, so the document states what a correct reader must find.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from asz.synth.options import CLAUDE_VERSION, SynthOptions
from asz.synth.records import Call, Session
from asz.synth.writer import BODIES_DIR, PROJECTS_DIR, Body, Capture

__all__ = ["SCHEMA", "Key", "build", "call_keys", "request_key"]

SCHEMA = "asz.synth.expected/1"
Key = tuple[str, str]


def request_key(body: Body) -> Key | None:
    """What a request names: (previous request id or "", prompt id); no prompt, no key."""
    if body.role != "request" or not body.prompt_id:
        return None
    return (body.names_request or "", body.prompt_id)


def call_keys(calls: list[Call]) -> dict[str, Key | None]:
    """The key each call offers, by request name: the request id of the previous call of its
    stream (carried by that call's response) and the call's prompt. A stream's first call
    offers ""; a call after a response without a request id offers nothing."""
    keys: dict[str, Key | None] = {}
    previous: dict[str, Call] = {}
    for call in calls:
        before = previous.get(call.stream)
        key: Key | None
        if not call.prompt_id:
            key = None
        elif before is None:
            key = ("", call.prompt_id)
        elif before.response.request_id is None:
            key = None
        else:
            key = (before.response.request_id, call.prompt_id)
        keys[call.request.name] = key
        previous[call.stream] = call
    return keys


def _claim(body: Body, named: set[str], in_transcripts: set[str], indexed: bool) -> str | None:
    if body.role == "request":
        return "request"
    if body.request_id is not None and body.request_id in named:
        return "request"
    if body.message_id is not None and body.message_id in in_transcripts:
        return "transcript"
    return "index" if indexed else None


def _session_bodies(session: Session, bodies: list[Body], indexed: bool) -> list[dict[str, Any]]:
    named = {b.names_request for b in bodies if b.role == "request" and b.names_request}
    offered = call_keys(session.calls)
    requests = Counter(k for b in bodies if (k := request_key(b)) is not None)
    calls = Counter(k for k in offered.values() if k is not None)
    out = []
    for body in bodies:
        if body.role == "request":
            key = offered.get(body.name)
            joins = (
                body.kind == "call"
                and key is not None
                and key == request_key(body)
                and requests[key] == 1
                and calls[key] == 1
            )
        else:
            joins = body.kind == "call"
        out.append(
            {
                "id": body.name,
                "file": body.file,
                "role": body.role,
                "session": body.session,
                "size": body.size,
                "sha256": body.sha256,
                "mtime_ns": body.mtime_ns,
                "kind": body.kind,
                "stream": body.stream,
                "message_id": body.message_id,
                "request_id": body.request_id,
                "names_request": body.names_request if body.role == "request" else None,
                "prompt_id": body.prompt_id if body.role == "request" else None,
                "claim": _claim(body, named, session.transcript_message_ids, indexed),
                "joins": joins,
                "cache_cause": body.cache_cause
                if body.role == "request" and body.kind == "call"
                else None,
            }
        )
    return out


def _session(session: Session) -> dict[str, Any]:
    return {
        "id": session.id,
        "cwd": session.cwd,
        "project_dir": session.project_dir,
        "transcripts": session.transcripts,
        "sidecars": session.sidecars,
        "streams": [stream.to_json() for stream in session.streams],
        "calls": [
            {
                "stream": call.stream,
                "message_id": call.response.message_id,
                "request_id": call.response.request_id,
                "prompt_id": call.prompt_id,
                "request": call.request.name,
                "response": call.response.name,
            }
            for call in session.calls
        ],
        "compactions": session.compactions,
        **({"planted": session.planted} if session.planted else {}),
    }


def build(options: SynthOptions, sessions: list[Session], capture: Capture) -> dict[str, Any]:
    by_session: dict[str, list[Body]] = {}
    for body in sorted(capture.bodies, key=lambda b: (b.mtime_ns, b.name)):
        by_session.setdefault(body.session, []).append(body)
    listed: list[dict[str, Any]] = []
    for session in sessions:
        listed.extend(_session_bodies(session, by_session.get(session.id, []), options.index))
    responses = [b for b in listed if b["role"] == "response"]
    claimable = sum(1 for b in responses if b["claim"] is not None)
    return {
        "schema": SCHEMA,
        "options": options.to_json(),
        "claude_version": CLAUDE_VERSION,
        "bodies_dir": BODIES_DIR,
        "projects_dir": PROJECTS_DIR,
        "sessions": [_session(session) for session in sessions],
        "bodies": listed,
        "cache_breaks": [brk for session in sessions for brk in session.breaks],
        "cache_kept_changes": [kept for session in sessions for kept in session.kept_changes],
        "totals": {
            "requests": len(listed) - len(responses),
            "responses": len(responses),
            "body_bytes": sum(b["size"] for b in listed),
            "transcript_bytes": sum(
                capture.size(path) for session in sessions for path in session.transcripts
            ),
            "claimable_responses": claimable,
            "unclaimable_responses": len(responses) - claimable,
        },
    }
