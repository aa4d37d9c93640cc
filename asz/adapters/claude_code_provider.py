"""The claude-code-provider adapter: every provider body landed in the session it belongs to.

One pass, run after the transcripts landed so that a response only a transcript names finds
its session in the same pass:

1. ``index.jsonl``, when Claude Code writes one: its new lines land and it says which session
   each file it names belongs to.
2. Every file named like a body is looked at with one ``lstat``. One the ledger already judged
   at that size and time is answered from the ledger (landed, unreadable, conflicting, too
   large) or judged again from its stored keys (waiting, excluded). Any other is read once,
   digested, checked to be one JSON value, and its keys read.
3. Each body is claimed for a session (``asz.adapters.claims``), then the session filter says
   whether the session is collected, left out, or cannot be judged yet.
4. Each collected session's new bodies land through the store in one call, oldest first; the
   ledger records every outcome, and is written only when it changed.

Several bodies directories are listed as one (see ``asz.adapters.provider_source``): a body
is read from the directory its listing found it in, and ``index.jsonl`` is read from the first
directory that holds one.

Waiting, settling and unreadable bodies never fail a pass; conflicts and errors do.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Collection, Iterable
from dataclasses import replace
from pathlib import Path

from asz.adapters.claims import Claimer, RequestBook
from asz.adapters.provider_index import INDEX_NAME, sync_index
from asz.adapters.provider_landing import ClaimedLanding
from asz.adapters.provider_ledger import (
    CONFLICTING,
    Ledger,
    LedgerEntry,
    State,
)
from asz.adapters.provider_source import (
    SourceFile,
    TooLarge,
    list_sources,
    look_at_json,
    read_body,
)
from asz.adapters.provider_state import QUIET_NS, ProviderState, look_again, marks_of
from asz.adapters.session_filter import SessionJudge, Verdict
from asz.adapters.source_files import NotReadable
from asz.atomic import DirSyncs
from asz.bodykeys import is_session_id, keys_of, read_keys
from asz.config import Config
from asz.crashpoints import crash_point
from asz.store import BODY_KIND, BodyLander, Root, facts_path
from asz.tally import Tally

__all__ = ["KEEP_BYTES", "SEARCH_AGAIN_NS", "collect_bodies"]

KEEP_BYTES = 64 * 1024 * 1024
"""Bodies read while judging that are kept for landing instead of being read a second time."""
SEARCH_AGAIN_NS = 24 * 3600 * 1_000_000_000
"""How long an unclaimed response goes without its transcripts searched again, at most."""


def collect_bodies(
    config: Config,
    root: Root,
    bodies: BodyLander,
    judge: SessionJudge,
    now: float | None = None,
    *,
    state: ProviderState | None = None,
    changed: Collection[str] | None = None,
    rescan: bool = False,
) -> Tally:
    """One pass over the bodies directories; the caller holds the root's collector lock.

    ``changed``: the names of the files that may have changed since the last pass with this
    ``state`` (events are hints): only those and the files it left unsettled are looked at.
    Without it, or before any pass of ``state`` listed the directories, they are listed.
    ``rescan``: the hints come from a watcher that reported no loss, and are checked against
    the directories themselves: they are listed unless :meth:`ProviderState.unmoved` holds.
    """
    own = state is None
    state = state or ProviderState()
    try:
        return _collect(
            config, root, bodies, judge, now=now, state=state, changed=changed, rescan=rescan
        )
    except BaseException:
        state.close()
        raise
    finally:
        if own:
            state.close()


def _collect(
    config: Config,
    root: Root,
    bodies: BodyLander,
    judge: SessionJudge,
    *,
    now: float | None,
    state: ProviderState,
    changed: Collection[str] | None,
    rescan: bool,
) -> Tally:
    directories = config.bodies_dirs
    state.check(root)
    if (
        changed is None
        or state.unsettled is None
        or (rescan and not state.unmoved(directories, bodies, root))
    ):
        listed_at, marks = time.time_ns(), marks_of(directories)
        listing = list_sources(*directories)
        looked_for = None
        # A directory whose entries changed within the clock's grain of its listing could
        # change again without its mtime showing it: it is only trusted when it was quiet.
        quiet = all(mark is None or listed_at - mark[3] >= QUIET_NS for mark in marks)
        state.listed = marks if listing.exists and quiet else None
    else:
        looked_for = state.unsettled.keys() | changed
        listing = look_again(directories, looked_for)
    result = Tally(errors=list(listing.errors))
    if not listing.exists:
        state.unsettled = None
        return result
    ledger = state.ledger(bodies, root)
    result.errors += ledger.problems
    ledger.problems = []
    present = {source.name for source in listing.files}
    run = _Pass(config, root, bodies, judge, ledger, now=now, result=result)
    try:
        run.index(_index_dir(listing.present))
        run.look(listing.files, (ledger.names() if looked_for is None else looked_for) - present)
        run.claim_and_land()
    finally:
        # The new entries of every directory a body file landed in, durable before the
        # ledger says the bodies landed.
        run.syncs.flush()
    crash_point("provider.landed")
    if ledger.save():
        state.saved(root)
    crash_point("provider.ledger")
    state.unsettled = {source.name: source for source in run.unsettled if not run.settled(source)}
    return result


class _Pass:
    """One pass's view: what the ledger said, what was read, and what is known about each
    session, each asked once."""

    def __init__(
        self,
        config: Config,
        root: Root,
        bodies: BodyLander,
        judge: SessionJudge,
        ledger: Ledger,
        *,
        now: float | None,
        result: Tally,
    ) -> None:
        self.config = config
        self.root = root
        self.bodies = bodies
        self.judge = judge
        self.result = result
        self.budget = config.adapters.claude_code_provider.max_delta_bytes
        self.syncs = DirSyncs()
        self.now_ns = int((time.time() if now is None else now) * 1_000_000_000)
        self.settle_ns = int(config.service.unreadable_after * 1_000_000_000)
        self.ledger = ledger
        self.index_claims: dict[str, str] = {}
        self.candidates: list[str] = []
        """Files to claim this pass; the ledger holds what was judged of each."""
        self.searched_before: set[str] = set()
        self.fresh_sessions: set[str] = set()
        """Sessions named by a request read this pass."""
        self.kept: dict[str, bytes] = {}
        self.kept_bytes = 0
        self.objects: set[str] = set()
        """Digests of the bodies orjson parsed as JSON objects this pass: landing them need
        not parse them again."""
        self.unsettled: list[SourceFile] = []
        """Files looked at that were not landed at their stat."""
        self.where: dict[str, Path] = {}
        """The directory each of them is in, for reading it again to land it."""
        self._has_bodies: dict[str, bool] = {}
        self._facts_checked: dict[str, bool] = {}
        self.requests_dropped = False

    # What is known about sessions, asked at most once per pass (the judge keeps its own).

    def has_bodies(self, session: str) -> bool:
        """Whether a landed entry of ``session`` is still trusted: its bodies are still there."""
        if session not in self._has_bodies:
            self._has_bodies[session] = is_session_id(session) and (
                (self.root.session_dir(session) / BODY_KIND).is_dir()
            )
        return self._has_bodies[session]

    def calls_of(self, session: str) -> Iterable[str]:
        """The message ids the session's landed transcripts record (asked once per session)."""
        return self.bodies.store.open_session(session).facts().calls

    # The steps of a pass.

    def index(self, directory: Path) -> None:
        found = sync_index(directory, self.bodies.store, self.judge.judge, self.budget)
        self.index_claims = found.claims
        self.result.add(found.tally)

    def look(self, files: list[SourceFile], gone: set[str]) -> None:
        """Answers each file from the ledger where its stat allows, else reads it, and forgets
        the files of ``gone``. A file landed at its stat needs nothing more, so it is passed
        over first (an idle pass over a large directory is mostly that)."""
        judged_at, has_bodies, unsettled = self.ledger.judged_at, self.has_bodies, self.unsettled
        for source in files:
            seen = judged_at(source.name, source.size, source.mtime_ns)
            if seen is not None and seen[0] == State.LANDED and has_bodies(seen[1]):
                continue
            unsettled.append(source)
            self.where[source.name] = source.directory
            if seen is None or not self._answer(source.name, *seen):
                self._read(source, self.ledger.get(source.name))
        self._prune(gone)

    def settled(self, source: SourceFile) -> bool:
        """Whether the file is landed at the stat it was looked at with."""
        seen = self.ledger.judged_at(source.name, source.size, source.mtime_ns)
        return seen is not None and seen[0] == State.LANDED

    def _answer(self, name: str, state: str, session: str) -> bool:
        """Counts an unchanged file from the ledger; False when it must be read again."""
        if state == State.LANDED:
            return self.has_bodies(session)
        if state == State.UNREADABLE:
            self.result.bodies_unreadable += 1
        elif state in CONFLICTING:
            self._conflict(name, state, session)
        elif state in (State.WAITING, State.EXCLUDED):
            self.candidates.append(name)
            if state == State.WAITING and not session:
                self.searched_before.add(name)
        return True

    def _read(self, source: SourceFile, entry: LedgerEntry | None) -> None:
        try:
            read = read_body(source.directory, source.name)
        except TooLarge as err:
            if entry is None or entry.state is not State.TOO_LARGE:
                self.result.errors.append(f"{source.name} {err}; it is not read")
            self.ledger.put(LedgerEntry(source.name, err.size, err.mtime_ns, "", State.TOO_LARGE))
            return
        except NotReadable as err:
            if err.kind == "changing":
                self.result.bodies_settling += 1
            elif err.kind == "failed":
                self.result.errors.append(f"{source.name} {err.why}")
            return
        data, mtime_ns = read.data, read.mtime_ns
        sha256 = hashlib.sha256(data).hexdigest()
        if entry is not None and self._judged_before(entry, len(data), mtime_ns, sha256):
            return
        look = look_at_json(data)
        if not look.whole:
            if self.now_ns - mtime_ns < self.settle_ns:
                # Probably still being written: left alone, and looked at again next pass.
                # Settling, not waiting: waiting means no session claims it.
                self.ledger.drop(source.name)
                self.result.bodies_settling += 1
            else:
                self.ledger.put(
                    LedgerEntry(source.name, len(data), mtime_ns, sha256, State.UNREADABLE)
                )
                self.result.bodies_unreadable += 1
            return
        if look.parsed:
            keys = keys_of(source.role, source.stem, look.value)
            if isinstance(look.value, dict):
                self.objects.add(sha256)
        else:
            keys = read_keys(source.role, source.stem, data)
        # Recorded as waiting until its claim is decided below in this pass.
        self.ledger.put(
            LedgerEntry(source.name, len(data), mtime_ns, sha256, State.WAITING, "", keys)
        )
        self.candidates.append(source.name)
        if source.role == "request" and keys.session:
            self.fresh_sessions.add(keys.session)
        if self.kept_bytes + len(data) <= KEEP_BYTES:
            self.kept[source.name] = data
            self.kept_bytes += len(data)

    def _judged_before(self, entry: LedgerEntry, size: int, mtime_ns: int, sha256: str) -> bool:
        """Settles a re-read file whose entry already decides it: a landed file (back to its
        landed bytes, or changed after landing) or one still conflicting with the same bytes."""
        landed = entry.state in (State.LANDED, State.CHANGED) and self.has_bodies(entry.session)
        conflicting = entry.state is State.CONFLICT and entry.sha256 == sha256
        if not (landed or conflicting):
            return False
        state = entry.state
        if landed:
            state = State.LANDED if sha256 == entry.sha256 else State.CHANGED
        self.ledger.put(replace(entry, size=size, mtime_ns=mtime_ns, state=state))
        if state in CONFLICTING:
            self._conflict(entry.name, state, entry.session)
        return True

    def _conflict(self, name: str, state: str, session: str) -> None:
        if state == State.CHANGED:
            why = (
                f"changed after it landed in session {session}; nothing more lands from it "
                "until its landed bytes are back"
            )
        else:
            why = f"session {session} already holds this body with other bytes"
        self.result.conflict_sources.append(f"{name}: {why}")

    def _prune(self, gone: set[str]) -> None:
        """Forgets files that are gone, except what is still landed: a landed request keeps
        naming the call before it, and a changed file that is gone leaves its landed bytes."""
        for name in gone:
            entry = self.ledger.get(name)
            if entry is None:
                continue
            if entry.state in (State.LANDED, State.CHANGED) and self.has_bodies(entry.session):
                self.ledger.put(replace(entry, state=State.LANDED))
            else:
                self.ledger.drop(entry.name)
                self.requests_dropped |= entry.role == "request"

    def claim_and_land(self) -> None:
        if not self.candidates:
            return
        # Nothing new anywhere: a body no session claimed before is claimed by none now.
        unchanged = self._nothing_new()
        claimer: Claimer | None = None
        batches: dict[str, list[tuple[int, str, int]]] = {}
        result = self.result
        for name in self.candidates:
            if unchanged and name in self.searched_before and name not in self.index_claims:
                result.bodies_waiting += 1
                continue
            entry = self.ledger.get(name)
            if entry is None:
                continue
            claimer = claimer or self._claimer()
            claim = claimer.claim(
                name, entry.role, entry.keys, entry.mtime_ns, name in self.searched_before
            )
            session = claim.session or ""
            verdict = self.judge.judge(session) if session else Verdict.WAIT
            if verdict is Verdict.COLLECT:
                batches.setdefault(session, []).append((entry.mtime_ns, name, entry.size))
                continue
            self.kept.pop(name, None)
            if verdict is Verdict.EXCLUDE:
                self.ledger.put(replace(entry, state=State.EXCLUDED, session=session))
                result.bodies_excluded += 1
            else:
                self.ledger.put(replace(entry, state=State.WAITING, session=session))
                result.bodies_waiting += 1
        landing = ClaimedLanding(
            self.where,
            self.bodies,
            self.ledger,
            self.result,
            budget=self.budget,
            syncs=self.syncs,
            kept=self.kept,
            objects=self.objects,
            has_bodies=self._has_bodies,
        )
        for session in sorted(batches):
            landing.land(session, sorted(batches[session]))

    def _claimer(self) -> Claimer:
        """The claim rules over every request known (landed, judged before, or read now)."""
        book = RequestBook(self.ledger.requests)
        return Claimer(
            book,
            self.index_claims,
            self.calls_of,
            lambda: self.fresh_sessions | self._facts_changed(book.sessions()),
        )

    def _nothing_new(self) -> bool:
        """No request read or forgotten this pass, and no session searched before has new
        transcript facts: every claim made before would be made again."""
        if not self.searched_before or self.fresh_sessions or self.requests_dropped:
            return False
        return not self._facts_changed(list(self.ledger.facts_marks()))

    def _facts_changed(self, sessions: Iterable[str]) -> set[str]:
        """Those of ``sessions`` whose transcript facts changed since responses were last
        searched for in them, or were searched longer than ``SEARCH_AGAIN_NS`` ago (so that
        facts a crash left unsaved are found in the end); their new marks are recorded."""
        marks = self.ledger.facts_marks()
        changed = set()
        for session in sessions:
            if session not in self._facts_checked:
                mark = _facts_mark(self.root, session)
                known = marks.get(session)
                stale = known is None or known[0] != mark
                aged = known is not None and self.now_ns - known[1] > SEARCH_AGAIN_NS
                self._facts_checked[session] = stale or aged
                if self._facts_checked[session]:
                    self.ledger.set_facts_mark(session, mark, self.now_ns)
            if self._facts_checked[session]:
                changed.add(session)
        return changed


def _index_dir(present: list[Path]) -> Path:
    """Where ``index.jsonl`` is read: the first bodies directory holding one, else the first
    there is (whose file may appear later). One file only, since its state is one offset."""
    return next((d for d in present if (d / INDEX_NAME).exists()), present[0])


def _facts_mark(root: Root, session: str) -> str:
    """What changes whenever the session's transcript facts are saved again."""
    try:
        info = (root.path / facts_path(session)).stat()
    except FileNotFoundError:
        return ""
    return f"{info.st_ino}:{info.st_size}:{info.st_mtime_ns}"
