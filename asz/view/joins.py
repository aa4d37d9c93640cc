"""Which landed body belongs to which model call: exact joins, or none.

A body names no stream and no call position, so a join is made only on ids that both sides
carry, and only when exactly one body and one call carry them; nothing is matched by position
or by time. In order:

1. A response joins the call whose ``message.id`` is the response's ``id``, when exactly one
   response carries that id (``index.jsonl`` lines that landed with the session can name the
   message of a response whose body does not).
2. A request that an ``index.jsonl`` line names beside a message id joins that call, when the
   lines name no other request for that message and no other message for that request.
3. Any other request names its prompt (``cc_prompt_id``) and the provider request id of the
   call before it in its chain (``cc_prev_req``, none for a chain's first call). A call carries
   the same pair: the prompt current in its stream (a subagent's requests carry the prompt of
   the parent's call that started it), and the request id of the response joined to the call
   before it in the same stream. The request joins when exactly one request and one call carry
   the pair. A stream whose landed lines have a gap joins no request this way, since the
   call before may be missing; a call after one without a joined response carries no pair.

What stays unjoined says why: the title request and the compaction request have no call in
any transcript; a retried request is two requests with the same pair; two subagents started
under one prompt have first calls with the same pair. Synthetic calls never reached the
provider and take no part (they are not "the call before" either).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from asz.store import MAIN_STREAM, BodyManifest, Session
from asz.view.calls import Call, Transcript, read_transcript

__all__ = [
    "AMBIGUOUS",
    "GAP",
    "NO_CALL",
    "NO_MESSAGE",
    "NO_PROMPT",
    "SYNTHETIC",
    "TAKEN",
    "IndexEntry",
    "JoinedSession",
    "Joins",
    "Unjoined",
    "index_entries",
    "join",
    "join_session",
    "matching_prompt",
]

NO_CALL = "no call names it"
NO_PROMPT = "names no prompt"
NO_MESSAGE = "names no message"
AMBIGUOUS = "ambiguous"
GAP = "gap"
SYNTHETIC = "its call is synthetic"
TAKEN = "its call is joined to another request"


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One ``index.jsonl`` line: the record ids of the files it names, and the message id."""

    request: str | None
    response: str | None
    message_id: str | None


@dataclass(frozen=True, slots=True)
class Unjoined:
    reason: str
    detail: str


@dataclass(slots=True)
class Joins:
    request_of: dict[str, str] = field(default_factory=dict)
    """Message id -> the joined request's record id."""
    response_of: dict[str, str] = field(default_factory=dict)
    """Message id -> the joined response's record id."""
    call_of: dict[str, str] = field(default_factory=dict)
    """Record id -> the message id of its call."""
    via_index: set[str] = field(default_factory=set)
    unjoined: dict[str, Unjoined] = field(default_factory=dict)


@dataclass(slots=True)
class JoinedSession:
    """Everything the view and the cache report start from: no body rebuilt yet."""

    session: Session
    transcript: Transcript
    bodies: dict[str, BodyManifest]
    index: list[IndexEntry]
    joins: Joins


def index_entries(session: Session) -> list[IndexEntry]:
    """The session's landed ``index.jsonl`` lines, as record ids and message ids."""
    return [
        IndexEntry(
            request=_record_id(line.get("request_file")),
            response=_record_id(line.get("response_file")),
            message_id=_string(line.get("message_id")),
        )
        for line in session.index_entries()
    ]


def join_session(session: Session) -> JoinedSession:
    """Reads a session's transcripts, manifests and index lines, and joins them; what did not
    read is in ``session.problems``."""
    transcript = read_transcript(session.transcript_lines())
    bodies = session.manifests()
    index = index_entries(session)
    return JoinedSession(
        session=session,
        transcript=transcript,
        bodies=bodies,
        index=index,
        joins=join(transcript, bodies, index),
    )


def join(transcript: Transcript, bodies: dict[str, BodyManifest], index: list[IndexEntry]) -> Joins:
    joins = Joins()
    calls = transcript.calls
    _join_responses(calls, bodies, index, joins)
    _join_requests_by_index(calls, bodies, index, joins)
    _join_requests_by_keys(transcript, bodies, joins)
    return joins


def _join_responses(
    calls: dict[str, Call], bodies: dict[str, BodyManifest], index: list[IndexEntry], joins: Joins
) -> None:
    indexed = _one_to_one((e.response, e.message_id) for e in index if e.response)
    by_message: dict[str, list[str]] = defaultdict(list)
    for body in bodies.values():
        if body.role != "response":
            continue
        message_id = body.keys.message_id or indexed.get(body.record_id)
        if message_id is None:
            joins.unjoined[body.record_id] = Unjoined(NO_MESSAGE, "the body has no message id")
        else:
            by_message[message_id].append(body.record_id)
    for message_id, records in by_message.items():
        call = calls.get(message_id)
        if len(records) > 1:
            why = Unjoined(AMBIGUOUS, f"{len(records)} responses carry message {message_id}")
        elif call is None:
            why = Unjoined(NO_CALL, f"no transcript line carries message {message_id}")
        elif call.synthetic:
            why = Unjoined(SYNTHETIC, f"message {message_id} is a synthetic call")
        else:
            _link(joins, joins.response_of, message_id, records[0])
            continue
        for record_id in records:
            joins.unjoined[record_id] = why


def _join_requests_by_index(
    calls: dict[str, Call], bodies: dict[str, BodyManifest], index: list[IndexEntry], joins: Joins
) -> None:
    pairs = [
        (e.request, e.message_id)
        for e in index
        if e.request and e.message_id and getattr(bodies.get(e.request), "role", "") == "request"
    ]
    for record_id, message_id in _one_to_one(pairs).items():
        call = calls.get(message_id)
        if call is not None and not call.synthetic:
            _link(joins, joins.request_of, message_id, record_id)
            joins.via_index.add(record_id)


def _join_requests_by_keys(
    transcript: Transcript, bodies: dict[str, BodyManifest], joins: Joins
) -> None:
    calls_by_key: dict[tuple[str, str], list[Call]] = defaultdict(list)
    for call, key in _call_keys(transcript, bodies, joins):
        calls_by_key[key].append(call)
    requests_by_key: dict[tuple[str, str], list[str]] = defaultdict(list)
    for body in bodies.values():
        if body.role != "request" or body.record_id in joins.call_of:
            continue
        prompt = body.keys.prompt
        if prompt is None:
            joins.unjoined[body.record_id] = Unjoined(NO_PROMPT, "the body names no cc_prompt_id")
            continue
        requests_by_key[(body.keys.prev_request or "", prompt)].append(body.record_id)
    for key, records in requests_by_key.items():
        keyed = calls_by_key.get(key, [])
        named = f"prompt {key[1]} after {key[0] or 'no request'}"
        gapped = [call for call in keyed if transcript.streams[call.stream].gap]
        if gapped:
            why = Unjoined(GAP, f"stream {gapped[0].stream} has a gap in its landed lines")
        elif len(records) > 1:
            why = Unjoined(AMBIGUOUS, f"{len(records)} requests name {named}")
        elif not keyed:
            why = Unjoined(NO_CALL, f"no call carries {named}")
        elif len(keyed) > 1:
            why = Unjoined(AMBIGUOUS, f"{len(keyed)} calls carry {named}")
        elif keyed[0].message_id in joins.request_of:
            why = Unjoined(TAKEN, f"message {keyed[0].message_id} is joined through the index")
        else:
            _link(joins, joins.request_of, keyed[0].message_id, records[0])
            continue
        for record_id in records:
            joins.unjoined[record_id] = why


def _call_keys(
    transcript: Transcript, bodies: dict[str, BodyManifest], joins: Joins
) -> list[tuple[Call, tuple[str, str]]]:
    """(call, (previous request id, prompt)) for every call that carries such a pair."""
    keyed = []
    for stream in transcript.streams.values():
        previous: Call | None = None
        for call in stream.calls:
            if call.synthetic:
                continue
            prev_request = _prev_request(previous, bodies, joins)
            previous = call
            prompt = matching_prompt(transcript, call)
            if prev_request is not None and prompt is not None:
                keyed.append((call, (prev_request, prompt)))
    return keyed


def _prev_request(
    previous: Call | None, bodies: dict[str, BodyManifest], joins: Joins
) -> str | None:
    """'' for a stream's first call; None when the call before has no known request id."""
    if previous is None:
        return ""
    response = joins.response_of.get(previous.message_id)
    return bodies[response].keys.request_id if response else None


def matching_prompt(transcript: Transcript, call: Call) -> str | None:
    """The prompt a call's request names: its own, or for a subagent the prompt of the
    parent's call that started it (followed up through nested subagents)."""
    seen: set[str] = set()
    while call.stream != MAIN_STREAM and call.stream not in seen:
        seen.add(call.stream)
        start = transcript.streams[call.stream].started_by
        if start is None:
            break
        call = transcript.calls[start.message_id]
    return call.prompt_id


def _link(joins: Joins, table: dict[str, str], message_id: str, record_id: str) -> None:
    table[message_id] = record_id
    joins.call_of[record_id] = message_id


def _one_to_one(pairs: Iterable[tuple[str | None, str | None]]) -> dict[str, str]:
    """The pairs whose left names one right only and whose right is named by one left only."""
    rights: dict[str, set[str]] = defaultdict(set)
    lefts: dict[str, set[str]] = defaultdict(set)
    for left, right in pairs:
        if left and right:
            rights[left].add(right)
            lefts[right].add(left)
    return {
        left: next(iter(named))
        for left, named in rights.items()
        if len(named) == 1 and len(lefts[next(iter(named))]) == 1
    }


def _string(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def _record_id(value: object) -> str | None:
    """``<dir>/<uuid>.request.json`` -> ``<uuid>.request``: a file's record id."""
    name = _string(value)
    if name is None:
        return None
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    return name.removesuffix(".json") if name.endswith(".json") else None
