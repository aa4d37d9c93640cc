"""The redacted counterpart of a root: what a push sends while the redaction policy is on.

Under ``_state/redacted/<policy fingerprint>/`` (private, like all of ``_state``) each landed
file of the root has, once a push needed it, a counterpart of the same path and sequence
number: a landed file in the store's own format whose records hold what the root's hold,
redacted (``asz.redact.Redactor``), and whose digests are those of the redacted bytes, so
that it verifies as any landed file does. Beside it, ``<name>.asz.redactions.json`` says
which rules fired at which JSON paths (never a value).

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

Generations (``asz.store._generation``) have counterparts too, whose manifests name the
counterparts' sizes and digests, never the landed files':

- a repacked session's generation is *mirrored*: its files' counterparts are made like any
  file's, at the same paths, and once they all are, the root's manifest is written beside
  them with each file's size and SHA-256 replaced by its counterpart's (and ``redacted``
  naming the policy), so the counterpart reads as the session does;
- a session the archive holds under another policy is *re-redacted* (``reredact``): the
  counterparts of every file the session counts now are written again, renumbered 1 to m,
  as a generation of their own replacing the session's numbers up to its highest, which the
  archive then counts in place of what went before. It is a *revision* of those numbers
  (``asz.store.GenerationId``) above any the archive holds, so it goes beside a generation
  of the same numbers there, and never revision 0: that is the root's own generation's,
  whose mirror is made at its name. The counterparts it was made from stay,
  since making the session's later files follows them.
"""

from __future__ import annotations

import collections
import contextlib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from asz.atomic import private_dir, remove_stale_temps
from asz.config import PROJECTS, Config
from asz.redact import Hit, Redactor, configured_redactor
from asz.store import (
    BODY_KIND,
    INDEX_KIND,
    MAX_CONTENT_BYTES,
    MAX_MANIFEST_BYTES,
    PACK_STREAMS,
    REDACT_KEY_FILE,
    REDACTED_DIR,
    STATE_DIR,
    TRANSCRIPT_KIND,
    Batch,
    BodyKeys,
    Generation,
    GenerationWriter,
    HeldBodies,
    LandedFile,
    LandedFileError,
    LandedName,
    LocalBackend,
    Record,
    Repeat,
    Session,
    SessionBodies,
    SessionMoved,
    SessionWriter,
    Store,
    is_stream_key,
    parse_generation_dir,
    parse_generation_file,
    parse_landed,
    redactions_path,
    remove_unpublished,
    windows_of,
)

__all__ = [
    "BUCKET_RECORDS",
    "RECORD_FORMAT",
    "Made",
    "RedactedRoot",
    "bucket_record",
    "redacted_root",
    "root_redactor",
]

RECORD_FORMAT = "asz.redactions/1"
BUCKET_RECORDS = "_archive/redactions"
"""Where the archive keeps each pushed file's redaction record: beside the sessions, under a
name no reader of sessions lists."""
BATCH_FILES = 64
BATCH_BYTES = 32 << 20
"""Counterparts published together after one flush, at most, as transcript windows land."""
_KEEP_HEADER = ("source", "stream", "shape", "src", "lost", PACK_STREAMS)
"""What a counterpart's header keeps of its file's (besides kind, session, sequence)."""


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
class _Staged:
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
                made.failed = (name.path, _said(err))
            return
        for made, name, rules in pending:
            made.ready.append(name)
            if rules is not None:
                made.made += 1
                made.rules.update(rules)


class RedactedRoot:
    """The counterpart of the root ``store`` reads, kept in ``path`` (a private directory
    of one policy's), made with one redactor (see the module)."""

    def __init__(self, path: Path, store: Store, redactor: Redactor) -> None:
        self.store = store
        self.redactor = redactor
        self.fingerprint = redactor.policy.fingerprint
        self.path = path
        self.shadow = Store(LocalBackend(self.path))
        self._swept = False

    def holds(self, path: str) -> bool:
        """Whether the counterpart of ``path`` is made (its record is written before it)."""
        return self.shadow.backend.exists(path)

    def read(self, path: str) -> bytes:
        return self.shadow.backend.read(path, MAX_CONTENT_BYTES)

    def size(self, path: str) -> int:
        return self.shadow.size_of(path)

    def record(self, path: str) -> bytes:
        """The redaction record of the counterpart of ``path``."""
        return self.shadow.backend.read(redactions_path(path), MAX_CONTENT_BYTES)

    def rules(self, path: str) -> collections.Counter[str]:
        """How many markers each rule left in the counterpart of ``path``."""
        counts: collections.Counter[str] = collections.Counter()
        with contextlib.suppress(OSError, orjson.JSONDecodeError, AttributeError, TypeError):
            counts.update(orjson.loads(self.record(path)).get("rules", {}))
        return counts

    def make(self, session_id: str, upto: LandedName) -> Made:
        """Makes every missing counterpart of the session's files up to ``upto``."""
        return self.make_all([(session_id, upto)])[session_id]

    def make_all(self, wanted: list[tuple[str, LandedName]]) -> dict[str, Made]:
        """Makes every missing counterpart of each session's files up to the file named
        with it, in sequence order, each session stopping at its first file that fails (see
        the module). Files are published a batch at a time, across sessions."""
        if not self._swept:
            # Only the holder of the push lock writes here: a temporary file is a dead one's.
            private_dir(self.path)
            remove_stale_temps(self.path)
            self._swept = True
        staged = _Staged(self.shadow.batch())
        made = {session: self._make_session(session, upto, staged) for session, upto in wanted}
        staged.publish()
        for session, outcome in made.items():
            try:
                self.mirror(session)
            except Exception as err:  # its files are made; the manifest waits for the next
                outcome.failed = outcome.failed or (session, _said(err))
        return made

    def landed(self, session_id: str) -> list[LandedName]:
        """The counterpart's files of the session as a reader counts them: its newest
        generation's (mirrored or re-redacted) and the files after it."""
        return self.shadow.open_session(session_id).landed(checked=False)

    def generation(self, session_id: str) -> Generation | None:
        """The newest generation of the session's counterpart, None when it has none."""
        return self.shadow.open_session(session_id).generation()

    def mirror(self, session_id: str) -> None:
        """Writes the counterpart of the session's generation manifest once every file it
        names has its counterpart (see the module); nothing when it has none or it is
        written."""
        generation = self.store.open_session(session_id).generation()
        if generation is None or self.holds(generation.path):
            return
        if not all(self.holds(name.path) for name in generation.files):
            return
        manifest = orjson.loads(self.store.backend.read(generation.path, MAX_MANIFEST_BYTES))
        for item in manifest["files"]:
            data = self.read(item["path"])
            item["size"], item["sha256"] = len(data), hashlib.sha256(data).hexdigest()
        manifest["redacted"] = self.fingerprint
        backend = self.shadow.backend
        temp = backend.write_temp(generation.path, orjson.dumps(manifest) + b"\n")
        try:
            backend.publish([temp], None, lambda _i: None)
        finally:
            backend.remove_temp(temp)

    def reredact(self, session_id: str, replaces: int, *, above: int = 0) -> Generation:
        """Publishes in the counterpart a generation replacing the session's numbers 1 to
        ``replaces``: the counterparts of every file the session counts now, in order, each
        written again with the same records (see the module). They must all be made. Its
        revision is above ``above`` (the archive's highest of those numbers) and above every
        one the counterpart has, and never 0, the revision of the root's own generations,
        whose mirrors stand at their names: a repack of the root at the same number later
        never meets it."""
        # A generation directory without its manifest here is a re-redaction killed half way
        # (a mirror's is complete before its files are all made, which they are by now).
        backend = self.shadow.backend
        remove_unpublished(backend, session_id)
        held = (
            parse_generation_dir(e.name) if e.is_dir else parse_generation_file(e.name)
            for e in backend.list(session_id)
        )
        revisions = [g.revision for g in held if g is not None and g.replaces == replaces]
        session = self.store.open_session(session_id)
        writer = GenerationWriter(
            backend,
            session_id,
            replaces,
            origin=session.origin(),
            compression=self.shadow.compression,
            revision=max(above, *revisions, 0) + 1,
        )
        for name in session.landed():
            landed = self._of(name)
            header = {
                key: landed.header[key]
                for key in (*_KEEP_HEADER, "stream_dir", "redacted")
                if key in landed.header and key != "lost"
            }
            records = [(row.meta, row.payload) for row in landed.records]
            written = writer.land(name.kind, _ordinary_dir(name), header, records)
            said = {**orjson.loads(self.record(name.path)), "path": written.path}
            self.shadow.backend.replace_derived(
                redactions_path(written.path), orjson.dumps(said) + b"\n"
            )
        return writer.publish()

    def differs(self, path: str, policy: str) -> bool:
        """Whether what the counterpart holds at ``path`` differs from what went under
        ``policy`` ("": raw), record by record: True when either cannot be read here (the
        other policy's counterpart is no longer kept)."""
        old = self.store if not policy else Store(LocalBackend(self.path.parent / policy))
        directory, _, name = path.rpartition("/")
        landed = parse_landed(directory, name)
        if landed is None:
            return True
        session = path.split("/", 1)[0]
        try:
            ours = self.shadow.open_session(session).read(landed).records
            theirs = old.open_session(session).read(landed).records
        except Exception:  # not kept, or does not read: it may differ
            return True
        return [(r.meta, r.payload) for r in ours] != [(r.meta, r.payload) for r in theirs]

    def _make_session(self, session_id: str, upto: LandedName, staged: _Staged) -> Made:
        """The session's counterpart made up to ``upto``; made again from the session's new
        generation when a repack retires the files it was made from meanwhile (what was
        staged of those stays: the counterparts of files no reader counts any more)."""
        session = self.store.open_session(session_id)
        return session.again_when_moved(lambda: self._make_from(session, upto, staged))

    def _make_from(self, session: Session, upto: LandedName, staged: _Staged) -> Made:
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
                made.failed = (name.path, _said(err))
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

    def _of(self, name: LandedName) -> LandedFile:
        return self.shadow.open_session(name.path.split("/", 1)[0]).read(name)

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
        header = {key: landed.header[key] for key in _KEEP_HEADER if key in landed.header}
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
        written = state.writer.land(name.kind, directory, header, records, stamp=stamp)
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


def root_redactor(config: Config, key_file: Path) -> Redactor | None:
    """The config's redactor (``asz.redact.configured_redactor``, the key kept in
    ``key_file`` when none is given); None when the policy is off and files go raw, and then
    no key is looked for or made."""
    if not config.redact.enabled:
        return None
    return configured_redactor(config, key_file)


def redacted_root(config: Config, root: Path, store: Store) -> RedactedRoot | None:
    """What a push from ``root`` sends under the config's policy; None: the files go raw."""
    redactor = root_redactor(config, root / STATE_DIR / REDACT_KEY_FILE)
    if redactor is None:
        return None
    return RedactedRoot(
        root / STATE_DIR / REDACTED_DIR / redactor.policy.fingerprint, store, redactor
    )


def bucket_record(path: str) -> str:
    """The archive's path of the redaction record of the landed file at ``path``."""
    return f"{BUCKET_RECORDS}/{path}.json"


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


def _ordinary_dir(name: LandedName) -> str:
    """The session's ordinary directory a landed file stands for (a generation's file: its
    directory with the generation's taken out)."""
    parts = name.path.split("/")[:-1]
    if len(parts) > 1 and parse_generation_dir(parts[1]) is not None:
        del parts[1]
    return "/".join(parts)


def _hits(where: str, hits: tuple[Hit, ...]) -> list[dict[str, Any]]:
    return [{"at": where, "rule": hit.rule, "path": hit.path} for hit in hits]


def _said(err: Exception) -> str:
    """Why a file was not made, in words that never carry what was being redacted: the
    exception's kind, and its message only when it is one of ours."""
    kind = type(err).__name__
    if type(err).__module__.startswith("asz.") and str(err):
        return f"{kind}: {err}"
    return kind
