"""How a redacted root's counterparts (``asz.archive.redacted``) are made, file by file.

- Bodies are rebuilt from the root, each through ``Redactor.body``, and cut again with the
  store's codec against what the counterpart's earlier files hold: the cut state of a session
  (its pieces, its copy bases) carries from one file to the next, as it does when landing.
- Transcript windows are redacted line by line (``Redactor.line``; a sidecar snapshot as one
  document), at offsets of the redacted stream: each window starts where the redacted bytes
  of the window it follows in the root ended.
- Index lines are redacted each through ``Redactor.line``, keeping their offsets.

A counterpart carries the time and writer of the file it stands for and names the policy
in its header (``redacted``), so that making it again (the directory lost) gives the same
bytes, which the bucket then already holds. It is made through ``SessionWriter`` like any
landed file: written under a temporary name, read back, flushed and published without
replacing anything (up to ``BATCH_FILES`` of a session together, after one flush), its
record written just before it is staged; a crash at any instant leaves files
that are whole, each with its record, and temporary files the next push removes. A push
that resumes makes only the files the counterpart lacks, reading (never redacting again)
the ones it has: redaction costs what lands, once.

A file whose redaction fails (``ScannerFailed``, or any error while it is made) is not made,
and neither is any later file of its session, which may name its pieces: nothing of them
goes, and never raw.
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import orjson

from asz.archive.redacted_files import KEEP_HEADER, Counterpart
from asz.config import PROJECTS
from asz.redact import Hit
from asz.store import (
    BODY_KIND,
    INDEX_KIND,
    PACK_STREAMS,
    REPACK_LEVELS,
    TRANSCRIPT_KIND,
    Batch,
    BodyKeys,
    Generation,
    HeldBodies,
    LandedFile,
    LandedFileError,
    LandedName,
    Record,
    Repeat,
    Session,
    SessionBodies,
    SessionMoved,
    SessionWriter,
    is_stream_key,
    redactions_path,
    windows_of,
)

__all__ = ["BATCH_BYTES", "BATCH_FILES", "RECORD_FORMAT", "Made", "Making", "Staged", "said"]

RECORD_FORMAT = "asz.redactions/1"
BATCH_FILES = 64
BATCH_BYTES = 32 << 20
"""Counterparts published together after one flush, at most, as transcript windows land."""


@dataclass(slots=True)
class Made:
    """How far a session's counterpart goes: its files up to the first that could not be
    made (``failed``: its path and why), and the hits of the files made now."""

    ready: list[LandedName] = field(default_factory=list)
    failed: tuple[str, str] | None = None
    made: int = 0
    rules: collections.Counter[str] = field(default_factory=collections.Counter)


@dataclass(slots=True)
class _State:
    """What making the next file of a session needs of the files before it."""

    source: HeldBodies = field(default_factory=HeldBodies)
    redacted: SessionBodies = field(default_factory=SessionBodies)
    offsets: dict[str, dict[int, int]] = field(default_factory=dict)
    """Per stream, by its key (a generation's windows, a pack's windows of the stream and the
    windows landed after them are one stream): a window's start or end in the root -> the
    same in the counterpart."""
    writer: SessionWriter | None = None
    """The writer of the session's counterparts in a row, and the number it gives next: one
    writer remembers the session's highest number once a batch, not once a file."""
    next_seq: int = 0


@dataclass(slots=True)
class Staged:
    """Counterparts staged in one batch, across sessions: each is made once published."""

    batch: Batch
    pending: list[tuple[Made, LandedName, collections.Counter[str] | None]] = field(
        default_factory=list
    )
    """Each file in order, its session's outcome, and its hits (None: it was made before)."""

    def publish(self) -> None:
        """Publishes what is staged after one flush of it all; when that fails, each session
        with a file in it fails at its first one."""
        pending, self.pending = self.pending, []
        try:
            self.batch.commit()
        except Exception as err:
            for made, name, _rules in reversed(pending):
                made.failed = (name.path, said(err))
            return
        for made, name, rules in pending:
            made.ready.append(name)
            if rules is not None:
                made.made += 1
                made.rules.update(rules)


class Making(Counterpart):
    """The part of a redacted root that makes its counterparts."""

    def _make_session(self, session_id: str, upto: LandedName, staged: Staged) -> Made:
        """The session's counterpart made up to ``upto``; made again from the session's new
        generation when a repack retires the files it was made from meanwhile (what was
        staged of those stays: the counterparts of files no reader counts any more)."""
        session = self.store.open_session(session_id)
        return session.again_when_moved(lambda: self._make_from(session, upto, staged))

    def _make_from(self, session: Session, upto: LandedName, staged: Staged) -> Made:
        names = [name for name in session.landed() if name.seq <= upto.seq]
        made = Made()
        generation = session.generation()
        if generation is not None and self._reredacted(generation):
            made.failed = (
                generation.path,
                "the counterpart holds a re-redacted generation of the same numbers; "
                "it waits for the session to be repacked again",
            )
            return made
        missing = [name for name in names if not self.holds(name.path)]
        if not missing:
            made.ready = names
            return made
        first = missing[0].seq
        kinds = {name.kind for name in missing}
        streams = {
            key
            for name in missing
            if name.kind == TRANSCRIPT_KIND
            for key in _stream_keys(session, name)
        }
        state = _State()
        for name in names:
            if name.seq < first:
                if name.kind == BODY_KIND and BODY_KIND in kinds:
                    self._follow_bodies(session, name, state)
                elif name.kind == TRANSCRIPT_KIND and _stream_keys(session, name) & streams:
                    self._follow_windows(session, name, state)
                made.ready.append(name)
                continue
            rules = None
            try:
                if self.holds(name.path):
                    self._follow(session, name, state)
                else:
                    rules = self._make(session, name, state, staged.batch)
            except SessionMoved:
                raise
            except Exception as err:  # anything: the file goes redacted or not at all
                made.failed = (name.path, said(err))
                break
            staged.pending.append((made, name, rules))
            if len(staged.batch) >= BATCH_FILES or staged.batch.size >= BATCH_BYTES:
                staged.publish()
                if made.failed is not None:
                    break
        return made

    # -- following what is made ---------------------------------------------------------------

    def _follow(self, session: Session, name: LandedName, state: _State) -> None:
        if name.kind == BODY_KIND:
            self._follow_bodies(session, name, state)
        elif name.kind == TRANSCRIPT_KIND:
            self._follow_windows(session, name, state)

    def _follow_bodies(self, session: Session, name: LandedName, state: _State) -> None:
        """Holds a body file's records and its counterpart's, as making the next needs."""
        for held, landed in ((state.source, session.read(name)), (state.redacted, self._of(name))):
            for record in landed.records:
                try:
                    held.add(Record(meta=record.meta, payload=record.payload))
                except Repeat:
                    continue

    def _follow_windows(self, session: Session, name: LandedName, state: _State) -> None:
        """Maps a transcript file's windows to its counterpart's."""
        landed = session.read(name)
        records = zip(landed.records, self._of(name).records, windows_of(landed), strict=True)
        for raw, red, window in records:
            offsets = state.offsets.setdefault(window.key, {0: 0})
            offsets[raw.meta["off"]] = red.meta["off"]
            offsets[raw.meta["off"] + len(raw.payload)] = red.meta["off"] + len(red.payload)

    def _reredacted(self, generation: Generation) -> bool:
        """Whether the counterpart's generation at ``generation``'s name is a re-redacted
        one rather than its mirror: then its files are not the counterparts of the root's.
        Only a counterpart made before re-redactions took a revision of their own (above 0,
        which a root's generation never has) holds one there."""
        if not self.holds(generation.path):
            return False
        manifest = orjson.loads(self.read(generation.path))
        return not isinstance(manifest, dict) or "redacted" not in manifest

    # -- making ---------------------------------------------------------------------------------

    def _make(
        self, session: Session, name: LandedName, state: _State, batch: Batch
    ) -> collections.Counter[str]:
        """Stages the counterpart of ``name`` in ``batch``, its record written first."""
        landed = session.read(name)
        hits: list[dict[str, Any]] = []
        if name.kind == BODY_KIND:
            records = list(self._bodies(landed, state, hits))
        elif name.kind == TRANSCRIPT_KIND:
            records = list(self._windows(landed, state, hits))
        elif name.kind == INDEX_KIND:
            records = list(self._index(landed, hits))
        else:
            raise ValueError(f"{name.kind} is not a kind of landed file")
        rules = collections.Counter(str(hit["rule"]) for hit in hits)
        record = {
            "format": RECORD_FORMAT,
            "path": name.path,
            "policy": self.fingerprint,
            "rules": dict(sorted(rules.items())),
            "hits": hits,
        }
        backend = self.shadow.backend
        backend.replace_derived(redactions_path(name.path), orjson.dumps(record) + b"\n")
        header = {key: landed.header[key] for key in KEEP_HEADER if key in landed.header}
        if name.kind == TRANSCRIPT_KIND and isinstance(source := header.get("source"), str):
            # The source's project folder names the user (-Users-<name>-...); its stream
            # directory, named from the original, is said beside it for readers to check.
            header["source"] = self._source(source)
            if header["source"] != source:
                header["stream_dir"] = name.path.rsplit("/", 2)[-2]
        if name.kind == TRANSCRIPT_KIND and isinstance(listed := header.get(PACK_STREAMS), list):
            # A pack names each stream's directory already (``key``), beside its source.
            header[PACK_STREAMS] = [
                {**item, "source": self._source(item["source"])} for item in listed
            ]
        header["redacted"] = self.fingerprint
        stamp = {key: landed.header.get(key) for key in ("at", "writer")}
        if state.writer is None or state.next_seq != name.seq:
            state.writer = SessionWriter(
                backend,
                session.id,
                batch,
                compression=self.shadow.compression,
                numbered=lambda: (name.seq - 1, 0),
            )
        directory = name.path.rsplit("/", 1)[0]
        # Compressed as the file it stands for: a repacked file at the repack's level.
        level = REPACK_LEVELS.get(name.kind) if "generation" in landed.header else None
        written = state.writer.land(name.kind, directory, header, records, stamp=stamp, level=level)
        state.next_seq = written.seq + 1
        return rules

    def _source(self, source: str) -> str:
        """A transcript's path under the projects directory, redacted as the rest of the
        text is (``-Users-<name>-code-app/...``: the user's name)."""
        within = f"/{PROJECTS}/"
        return self.redactor.text(within + source).removeprefix(within)

    def _bodies(
        self, landed: LandedFile, state: _State, hits: list[dict[str, Any]]
    ) -> Iterator[tuple[dict[str, Any], bytes]]:
        for row in landed.records:
            meta = row.meta
            try:
                state.source.add(Record(meta=meta, payload=row.payload))
            except Repeat:
                continue
            record_id = str(meta["id"])
            redacted = self.redactor.body(state.source.rebuild(record_id))
            hits += _hits(record_id, redacted.hits)
            try:
                record = state.redacted.take(
                    record_id,
                    str(meta["role"]),
                    str(meta["src"]),
                    redacted.data,
                    BodyKeys.from_dict(meta.get("keys")),
                    json_object=redacted.json_object,
                )
            except Repeat:
                continue
            yield record.meta, record.payload

    def _windows(
        self, landed: LandedFile, state: _State, hits: list[dict[str, Any]]
    ) -> Iterator[tuple[dict[str, Any], bytes]]:
        for row, window in zip(landed.records, windows_of(landed), strict=True):
            offsets = state.offsets.setdefault(window.key, {0: 0})
            snapshot = window.snapshot
            meta = row.meta
            off, line = meta["off"], meta["line"]
            if off not in offsets:
                raise ValueError(f"a window at byte {off} follows no window of its stream")
            if snapshot:
                redacted = self.redactor.body(row.payload)
                hits += _hits(f"line {line}", redacted.hits)
                payload = redacted.data
            else:
                if row.payload and not row.payload.endswith(b"\n"):
                    raise ValueError(f"the window at byte {off} does not end with a whole line")
                parts: list[bytes] = []
                for n, text in enumerate(row.payload.split(b"\n")[:-1], line):
                    body = text.rstrip(b"\r")
                    redacted = self.redactor.line(body)
                    hits += _hits(f"line {n}", redacted.hits)
                    parts += (redacted.data, text[len(body) :], b"\n")
                payload = b"".join(parts)
            start = offsets[off]
            offsets[off + len(row.payload)] = start + len(payload)
            yield (
                {**meta, "off": start, "sha256": hashlib.sha256(payload).hexdigest()},
                payload,
            )

    def _index(
        self, landed: LandedFile, hits: list[dict[str, Any]]
    ) -> Iterator[tuple[dict[str, Any], bytes]]:
        for row in landed.records:
            redacted = self.redactor.line(row.payload)
            hits += _hits(f"index line at byte {row.meta.get('off')}", redacted.hits)
            yield {**row.meta, "sha256": hashlib.sha256(redacted.data).hexdigest()}, redacted.data


def _stream_keys(session: Session, name: LandedName) -> set[str]:
    """The stream directories (by name) a transcript file has windows of: its own, or a
    pack's (none when it does not read, which making it says)."""
    key = name.path.rsplit("/", 2)[-2]
    if is_stream_key(key):
        return {key}
    try:
        return {window.key for window in windows_of(session.read(name))}
    except LandedFileError:
        return set()


def _hits(where: str, hits: tuple[Hit, ...]) -> list[dict[str, Any]]:
    return [{"at": where, "rule": hit.rule, "path": hit.path} for hit in hits]


def said(err: Exception) -> str:
    """Why a file was not made, in words that never carry what was being redacted: the
    exception's kind, and its message only when it is one of ours."""
    kind = type(err).__name__
    if type(err).__module__.startswith("asz.") and str(err):
        return f"{kind}: {err}"
    return kind
