"""One pass of call facts into a target: the rows of the sessions that changed, as new files.

Sessions are walked as ``asz export otlp`` walks them: a session whose landed files are
those at which every one of its rows was written is not read; any other gets its report and
the facts kept beside it (:mod:`.rows`; the kept ones while they hold, so a session the
collector reported is written without reading a transcript or a body), and its final rows
that were not written yet go into the pass's files, one per table and UTC day
(``part-<machine>-<pass>.parquet``, :mod:`.names`). A session whose reading met problems is
left for the next pass, so its problems are said again rather
than its rows written wrong.

Then a day's small files of this machine are compacted into one (a day before today, or one
holding many files): the new file is written, then the ones it covers removed; a reader
counts the covering file only, so the rows are never counted twice nor missed. Files of other
machines are never read, rewritten or removed.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from asz.analytics.files import parquet_bytes, read_parquet
from asz.analytics.names import NO_DAY, Part, counted, parse_part, part_path
from asz.analytics.place import Place
from asz.analytics.rows import final_keys, row_key, session_rows
from asz.analytics.state import FactsState, Written, root_id
from asz.crashpoints import crash_point
from asz.redact import Redactor
from asz.store import Store, UnknownSession
from asz.view.kept import reported
from asz.view.prices import PriceTable
from asz.zones import IN_UTC

__all__ = ["COMPACT_AT", "FactsExport", "FactsTally"]

COMPACT_AT = 16
"""Today's files of one machine are compacted once there are this many; an earlier day's as
soon as there are two."""


@dataclass(slots=True)
class FactsTally:
    sessions: int = 0
    sessions_unchanged: int = 0
    calls: int = 0
    breaks: int = 0
    session_rows: int = 0
    waiting: int = 0
    """Rows not final yet: their session is still landing."""
    files_written: int = 0
    files_compacted: int = 0
    """Files replaced by a compacted one (and removed)."""
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)
    unfinished: set[str] = field(default_factory=set)
    """Sessions with rows waiting or problems: the service writes them again after a later
    pass, landed or not."""

    def as_dict(self) -> dict[str, Any]:
        found = {name: getattr(self, name) for name in self.__slots__}
        found["seconds"] = round(self.seconds, 3)
        found["unfinished"] = len(self.unfinished)
        return found


@dataclass(slots=True)
class _Pass:
    number: int
    priced_by: str
    redact: Callable[[str], str]
    """The ``[redact]`` policy's, remembering each text: a session's details repeat ("the
    history only grew") across its calls and across sessions."""
    tables: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    written: dict[str, Written] = field(default_factory=dict)
    in_target: dict[str, set[str]] | None = None
    """The keys of the rows in this machine's own files, by session: read once a pass, when a
    session's key file does not read (after a power cut, most of them may not)."""

    def add(self, table: str, day: str, row: dict[str, Any]) -> None:
        self.tables.setdefault((table, day), []).append(row)


class FactsExport:
    """Writes the facts of ``store`` (a local root at ``root``) to ``place``."""

    def __init__(
        self,
        store: Store,
        root: Path,
        place: Place,
        prices: PriceTable,
        redactor: Redactor,
        *,
        quiet_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.root = root
        self.place = place
        self.prices = prices
        self.redactor = redactor
        self.quiet_seconds = quiet_seconds
        self.clock = clock

    def run(self, sessions: Iterable[str]) -> FactsTally:
        tally = FactsTally()
        started = time.perf_counter()
        machine = root_id(self.root)
        state = FactsState.load(self.root, self.place.shown, machine)
        own = [
            part
            for path in self.place.list()
            if (part := parse_part(path)) is not None and part.machine == machine
        ]
        rebuilt = set() if state.found else _rebuild(state, self.place, own)
        if state.open is not None:
            # A pass that stopped before closing: no record counts its files.
            for part in own:
                if part.first == part.last == state.open:
                    self.place.remove(part.path)
            own = [part for part in own if not (part.first == part.last == state.open)]
            state.next = max(state.next, state.open + 1)
        state.sweep_keys()
        this = _Pass(state.next, self.prices.fingerprint(), functools.cache(self.redactor.text))
        this.written.update((session, state.sessions[session]) for session in rebuilt)
        state.open, state.next = this.number, this.number + 1
        state.save()
        crash_point("analytics.opened")
        for session_id in sessions:
            self._session(session_id, state, this, own, tally)
        files = [
            (part_path(table, day, machine, this.number), parquet_bytes(table, rows))
            for (table, day), rows in sorted(this.tables.items())
        ]
        if files:
            self.place.create_all(files)
            tally.files_written += len(files)
        state.write_keys(this.number, this.written)
        crash_point("analytics.keyed")
        state.sessions.update(this.written)
        state.open = None
        state.save()
        crash_point("analytics.closed")
        state.sweep_keys()
        self._compact(own, tally)
        tally.seconds = time.perf_counter() - started
        return tally

    def _session(
        self, session_id: str, state: FactsState, this: _Pass, own: list[Part], tally: FactsTally
    ) -> None:
        try:
            session = self.store.session(session_id)
        except UnknownSession:
            return
        names = session.landed()
        landed = len(names)
        before = state.sessions.get(session_id) or Written()
        if before.files == landed:
            tally.sessions_unchanged += 1
            return
        tally.sessions += 1
        summary = session.summary(names)
        found = reported(session, self.prices, landed=names)
        report = found.report
        problems = list(dict.fromkeys([*map(str, session.problems), *report["problems"]]))
        if problems:
            tally.problems += problems
            tally.unfinished.add(session_id)
            return
        now = self.clock()
        last = IN_UTC.moment(found.facts["last_time"])
        quiet = last is None or now - last.timestamp() >= self.quiet_seconds
        rows = session_rows(
            summary,
            report,
            found.facts,
            machine=state.machine,
            landed_files=landed,
            priced_by=this.priced_by,
            updated=datetime.fromtimestamp(now, UTC),
            redact=this.redact,
        )
        final = final_keys(rows, quiet)
        found_keys = state.keys_of(session_id)
        if found_keys is None:
            if this.in_target is None:
                this.in_target = _keys_by_session(self.place, counted(own))
            found_keys = this.in_target.get(session_id, set())
        keys = set(found_keys)
        for key, fact in rows.calls:
            if key in keys:
                continue
            if key not in final:
                tally.waiting += 1
                tally.unfinished.add(session_id)
                continue
            keys.add(key)
            day = _day(fact["time"])
            this.add("calls", day, fact)
            tally.calls += 1
            if key in rows.breaks:
                this.add("breaks", day, rows.breaks[key])
                tally.breaks += 1
        written = Written(keys=keys)
        if len(final) == len(rows.calls):
            written.files = landed
            this.add("sessions", _day(rows.session["first_activity"]), rows.session)
            tally.session_rows += 1
        this.written[session_id] = written

    def _compact(self, own: list[Part], tally: FactsTally) -> None:
        """Compacts each day of this machine with files enough, and removes the files a
        compacted one covers (left by a compaction that stopped before removing them)."""
        shown = counted(own)
        for part in set(own) - set(shown):
            self.place.remove(part.path)
        today = datetime.fromtimestamp(self.clock(), UTC).date().isoformat()
        by_day: dict[tuple[str, str], list[Part]] = {}
        for part in shown:
            by_day.setdefault((part.table, part.day), []).append(part)
        for (table, day), parts in sorted(by_day.items()):
            if len(parts) < 2 or (day >= today and len(parts) < COMPACT_AT):
                continue
            tables = [read_parquet(table, self.place.read(part.path)) for part in parts]
            merged = pa.concat_tables(tables, promote_options="default")
            if table == "sessions":
                merged = _latest_sessions(merged)
            first = min(part.first for part in parts)
            last = max(part.last for part in parts)
            self.place.create(
                part_path(table, day, parts[0].machine, first, last), parquet_bytes(table, merged)
            )
            crash_point("analytics.compacted")
            for part in parts:
                self.place.remove(part.path)
            tally.files_compacted += len(parts)


def _day(moment: datetime | None) -> str:
    return moment.date().isoformat() if moment is not None else NO_DAY


def _latest_sessions(table: pa.Table) -> pa.Table:
    """One row per session: its latest."""
    order = table.sort_by([("session", "ascending"), ("updated", "descending")])
    sessions = order.column("session").to_pylist()
    keep = [i for i, session in enumerate(sessions) if i == 0 or sessions[i - 1] != session]
    return order.take(pa.array(keep, pa.int64()))


def _rebuild(state: FactsState, place: Place, own: list[Part]) -> set[str]:
    """The record, from this machine's own files in the target: the keys of the rows they
    hold and, per session, the landed files of its latest sessions row. Returns the sessions
    found, whose key files the pass writes."""
    parts = counted(own)
    state.next = max((part.last for part in own), default=0) + 1
    found_keys = _keys_by_session(place, parts).items()
    state.sessions.update((session, Written(keys=keys)) for session, keys in found_keys)
    latest: dict[str, tuple[datetime, int]] = {}
    for part in parts:
        if part.table == "sessions":
            found = read_parquet(
                "sessions", place.read(part.path), ["session", "landed_files", "updated"]
            )
            for row in found.to_pylist():
                seen = latest.get(row["session"])
                if seen is None or row["updated"] > seen[0]:
                    latest[row["session"]] = (row["updated"], row["landed_files"])
    for session, (_, files) in latest.items():
        state.sessions.setdefault(session, Written(keys=set())).files = files
    return set(state.sessions)


def _keys_by_session(place: Place, parts: Iterable[Part]) -> dict[str, set[str]]:
    """The keys of the rows in this machine's own files ``parts``, by session."""
    keys: dict[str, set[str]] = {}
    for part in parts:
        if part.table == "calls":
            found = read_parquet(
                "calls", place.read(part.path), ["session", "message_id", "request_body", "side"]
            )
            for row in found.to_pylist():
                keys.setdefault(row["session"], set()).add(row_key(row))
    return keys
