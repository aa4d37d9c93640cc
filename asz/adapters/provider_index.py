"""``index.jsonl``: Claude Code's own record of which body files belong to which session.

From 2.1.274, Claude Code appends one line per successful response to ``index.jsonl`` in the
bodies directory, naming the session, the request and message ids and the two files. It is
the only record that ties a title or compaction response, which no transcript names, to its
session. So its lines are claims for the files they name, and they are kept as well: each
session's new complete lines land append-only, byte for byte and field for field, in
``<root>/<session>/provider_index/``, one record per line.

With several bodies directories, the file read is the first one's that exists (the adapter
picks it); the state names the file its offset is in, so when another file is read instead,
that one is read from its start, the lines each session already holds are skipped as below,
and the other's held lines are let go (they are held again if it is read again).

A torn last line is Claude Code still writing it and waits. A line of a session the filter
excludes or cannot judge yet is held by its offset and lands when the filter lets it. The
state under ``_state`` is derived: when it is lost, or a session whose lines landed was
removed, the file is read again from the start, and in each session the lines its landed files
already hold (up to the highest offset landed) are skipped, so nothing lands twice.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson
import structlog

from asz.adapters.provider_source import parse_body_name
from asz.adapters.session_filter import Verdict
from asz.adapters.source_files import NotReadable, open_regular
from asz.bodykeys import is_session_id
from asz.crashpoints import crash_point
from asz.store import (
    INDEX_KIND,
    PROVIDER_INDEX_STATE_FILE,
    STATE_DIR,
    LandedFileError,
    Store,
    index_dir,
)
from asz.tally import Tally

__all__ = [
    "INDEX_NAME",
    "INDEX_TAIL_BYTES",
    "READ_LIMIT",
    "STATE_FORMAT",
    "STATE_PATH",
    "IndexLine",
    "IndexPass",
    "IndexState",
    "JudgeSession",
    "decode_state",
    "log",
    "sync_index",
]

INDEX_NAME = "index.jsonl"
STATE_PATH = f"{STATE_DIR}/{PROVIDER_INDEX_STATE_FILE}"
STATE_FORMAT = "asz.provider-index/1"
INDEX_TAIL_BYTES = 4096
"""Bytes before the read offset whose digest proves the file was only appended to."""
READ_LIMIT = 64 * 1024 * 1024
"""New bytes read in one pass; the rest waits for the next."""
_MAX_STATE_BYTES = 1 << 30
_RECORD_OVERHEAD = 96
_FILE_OVERHEAD = 512

log = structlog.get_logger(__name__)

JudgeSession = Callable[[str], Verdict]


@dataclass(slots=True)
class IndexState:
    """How far the file was read, what is held back, and what its lines claim."""

    offset: int = 0
    tail_sha256: str = ""
    held: dict[str, list[tuple[int, int, str]]] = field(default_factory=dict)
    landed: set[str] = field(default_factory=set)
    claims: dict[str, str] = field(default_factory=dict)
    source: str = ""
    """The file ``offset`` is in ("" in a state written before this was kept: any)."""

    def encode(self) -> bytes:
        return orjson.dumps(
            {
                "format": STATE_FORMAT,
                "source": self.source,
                "offset": self.offset,
                "tail_sha256": self.tail_sha256,
                "held": {
                    session: [list(line) for line in lines] for session, lines in self.held.items()
                },
                "landed": sorted(self.landed),
                "claims": self.claims,
            }
        )

    def claim(self, name: str, session: str) -> None:
        """Records that a line names ``name`` under ``session``; two sessions cancel out."""
        known = self.claims.get(name)
        if known is None:
            self.claims[name] = session
        elif known != session:
            self.claims[name] = ""


def decode_state(data: bytes) -> IndexState:
    """Parses the saved state; raises ValueError when it is not one this version wrote."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as err:
        raise ValueError(f"not JSON: {err}") from None
    if not isinstance(doc, dict) or doc.get("format") != STATE_FORMAT:
        raise ValueError("not in this version's format")
    offset, tail = doc.get("offset"), doc.get("tail_sha256")
    held, landed, claims = doc.get("held"), doc.get("landed"), doc.get("claims")
    source = doc.get("source", "")
    if not (
        isinstance(source, str)
        and isinstance(offset, int)
        and offset >= 0
        and isinstance(tail, str)
        and isinstance(held, dict)
        and isinstance(landed, list)
        and all(_is_session(session) for session in [*landed, *held])
        and isinstance(claims, dict)
        and all(session == "" or _is_session(session) for session in claims.values())
    ):
        raise ValueError("a field has the wrong type, or names no session")
    state = IndexState(offset, tail, {}, set(landed), claims, source)
    for session, lines in held.items():
        if not isinstance(lines, list):
            raise ValueError("a held list has the wrong type")
        state.held[session] = [_held_line(line) for line in lines]
    return state


def _is_session(value: object) -> bool:
    return isinstance(value, str) and is_session_id(value)


def _held_line(line: object) -> tuple[int, int, str]:
    if (
        isinstance(line, list)
        and len(line) == 3
        and isinstance(line[0], int)
        and isinstance(line[1], int)
        and isinstance(line[2], str)
    ):
        return line[0], line[1], line[2]
    raise ValueError("a held line has the wrong type")


@dataclass(slots=True)
class IndexPass:
    """What one pass did with ``index.jsonl``; ``claims`` maps body file names to sessions."""

    claims: dict[str, str] = field(default_factory=dict)
    tally: Tally = field(default_factory=Tally)


@dataclass(frozen=True, slots=True)
class IndexLine:
    offset: int
    data: bytes

    @property
    def digest(self) -> str:
        return hashlib.sha256(self.data).hexdigest()


def sync_index(directory: Path, store: Store, judge: JudgeSession, budget: int) -> IndexPass:
    """Reads the new complete lines of ``index.jsonl``, lands them and returns every claim."""
    result = IndexPass()
    tally = result.tally
    state, saved = _load_state(store)
    if any(not store.open_session(session).landed(INDEX_KIND) for session in state.landed):
        # A session whose lines landed was removed: read from the start so they land again.
        state = IndexState(claims=state.claims)
    try:
        by_session = _read_new_lines(directory / INDEX_NAME, state, tally)
    except OSError as err:
        tally.errors.append(f"{directory / INDEX_NAME}: cannot be read: {err}")
        by_session = {}
    for session in sorted(set(by_session) | set(state.held)):
        new = by_session.get(session, [])
        if judge(session) is not Verdict.COLLECT:
            state.held.setdefault(session, []).extend(_held(new))
            continue
        lines = _reread(directory / INDEX_NAME, state.held.pop(session, []), tally) + new
        if _land(store, session, lines, budget, tally):
            state.landed.add(session)
        else:
            state.held[session] = _held(lines)
    result.claims = state.claims
    encoded = state.encode()
    if encoded != saved:
        store.backend.replace_derived(STATE_PATH, encoded)
        crash_point("index.saved")
    return result


def _held(lines: list[IndexLine]) -> list[tuple[int, int, str]]:
    return [(line.offset, len(line.data), line.digest[:16]) for line in lines]


def _load_state(store: Store) -> tuple[IndexState, bytes]:
    """The saved state and the bytes it was read from (a missing state reads as the empty
    one, so nothing is written until there is something to remember)."""
    try:
        data = store.backend.read(STATE_PATH, _MAX_STATE_BYTES)
    except FileNotFoundError:
        return IndexState(), IndexState().encode()
    try:
        return decode_state(data), data
    except ValueError as err:
        log.warning("index state rebuilt", path=store.backend.describe(STATE_PATH), why=str(err))
        return IndexState(), data


def _read_new_lines(path: Path, state: IndexState, tally: Tally) -> dict[str, list[IndexLine]]:
    """New complete lines by session; claims recorded, unusable lines reported once."""
    try:
        fd, info = open_regular(path)
    except NotReadable as err:
        if err.kind != "gone":
            tally.errors.append(f"{path}: {err.why}")
        return {}
    source = os.path.realpath(path)
    if state.source != source:
        if state.source:
            log.info("index file changed", was=state.source, now=source)
            state.offset, state.tail_sha256, state.held = 0, "", {}
        state.source = source
    with os.fdopen(fd, "rb") as handle:
        if info.st_size == state.offset:
            return {}
        if info.st_size < state.offset:
            tally.conflict_sources.append(
                f"{path}: shorter than the {state.offset} bytes already read "
                "(truncated or replaced); nothing more is read from it"
            )
            return {}
        start = max(0, state.offset - INDEX_TAIL_BYTES)
        tail = os.pread(handle.fileno(), state.offset - start, start)
        if state.offset and hashlib.sha256(tail).hexdigest() != state.tail_sha256:
            tally.conflict_sources.append(
                f"{path}: rewritten behind the {state.offset} bytes already read; "
                "nothing more is read from it"
            )
            return {}
        chunk = _complete_lines(handle.fileno(), state.offset, info.st_size)
    by_session: dict[str, list[IndexLine]] = {}
    for line in _split(chunk, state.offset):
        session = _line_session(line, state)
        if session is None:
            tally.errors.append(
                f"{path}: the line at byte {line.offset} names no session id in Claude Code's "
                "form; it is not landed"
            )
        else:
            by_session.setdefault(session, []).append(line)
    state.offset += len(chunk)
    read = tail + chunk
    state.tail_sha256 = hashlib.sha256(
        read[len(read) - min(INDEX_TAIL_BYTES, state.offset) :]
    ).hexdigest()
    return by_session


def _complete_lines(fd: int, offset: int, size: int) -> bytes:
    """The bytes from ``offset`` up to the last newline within the read limit (or beyond it,
    when a single line is longer); a torn last line is left for a later pass."""
    chunk = os.pread(fd, min(size - offset, READ_LIMIT), offset)
    end = chunk.rfind(b"\n")
    if end < 0 and len(chunk) == READ_LIMIT:
        chunk = os.pread(fd, size - offset, offset)
        end = chunk.rfind(b"\n")
    return chunk[: end + 1]


def _split(chunk: bytes, base: int) -> Iterator[IndexLine]:
    position = 0
    while position < len(chunk):
        end = chunk.index(b"\n", position)
        if chunk[position:end].strip():
            yield IndexLine(base + position, chunk[position:end])
        position = end + 1


def _line_session(line: IndexLine, state: IndexState) -> str | None:
    """The session a line names (recording its claims), or None when it names none."""
    value = _parse(line.data)
    if not isinstance(value, dict):
        return None
    session = value.get("session_id")
    if not isinstance(session, str) or not is_session_id(session):
        return None
    for key in ("request_file", "response_file"):
        named = value.get(key)
        if isinstance(named, str):
            name = named.replace("\\", "/").rsplit("/", 1)[-1]
            if parse_body_name(name) is not None:
                state.claim(name, session)
    return session


def _parse(data: bytes) -> object:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        pass
    try:
        return orjson.loads(data.decode("utf-8", errors="replace"))
    except orjson.JSONDecodeError:
        return None


def _reread(path: Path, held: list[tuple[int, int, str]], tally: Tally) -> list[IndexLine]:
    if not held:
        return []
    try:
        fd, _info = open_regular(path)
    except NotReadable as err:
        tally.errors.append(f"{path}: held lines cannot be read again: {err.why}")
        return []
    lines = []
    with os.fdopen(fd, "rb") as handle:
        for offset, length, digest in held:
            line = IndexLine(offset, os.pread(handle.fileno(), length, offset))
            if line.digest[:16] == digest:
                lines.append(line)
            else:
                tally.errors.append(f"{path}: the held line at byte {offset} changed; dropped")
    return lines


def _land(store: Store, session: str, lines: list[IndexLine], budget: int, tally: Tally) -> bool:
    """Lands a session's lines append-only: those above the highest offset it holds, in files
    within the budget. False (and the failure named) when they could not all land."""
    try:
        landed = store.open_session(session)
        problems = len(landed.problems)
        offsets = [line.offset for line in landed.index_lines() if isinstance(line.offset, int)]
        tally.errors += [f"damaged landed file skipped: {p}" for p in landed.problems[problems:]]
        highest = max(offsets, default=-1)
        writer = store.writer(session, store.batch())
        batch: list[IndexLine] = []
        size = _FILE_OVERHEAD

        def publish() -> None:
            records = [({"off": line.offset, "sha256": line.digest}, line.data) for line in batch]
            header = {"src": INDEX_NAME}
            written = writer.land(INDEX_KIND, index_dir(session), header, records)
            writer.batch.commit()
            tally.landed_file(session, len(batch), written.size)
            tally.index_lines += len(batch)
            tally.source_bytes += sum(len(line.data) + 1 for line in batch)

        for line in sorted(lines, key=lambda line: line.offset):
            if line.offset <= highest:
                continue
            cost = len(line.data) + _RECORD_OVERHEAD
            if batch and size + cost > budget:
                publish()
                batch, size = [], _FILE_OVERHEAD
            batch.append(line)
            size += cost
        if batch:
            publish()
        tally.errors += writer.errors
    except (OSError, LandedFileError) as err:
        tally.errors.append(f"session {session}: index lines not landed: {err}")
        return False
    return True
