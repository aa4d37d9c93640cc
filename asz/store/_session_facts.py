"""Facts about a session derived from its landed transcripts: calls, directories, cwds,
models, activity and line count.

Claiming a response needs to know which message ids a session's transcripts hold, the
session filter needs the directories and cwds its transcripts name even after Claude Code
pruned them, and a listing of sessions needs when each was active, with which models, and how
many lines landed, without reading every transcript again. Everything here is rebuilt from
the landed files alone; a derived file (``<session>/transcripts/facts.json``,
``asz.store._derived``) keeps the result together with the highest sequence number it covers
(its watermark) and the mark of the landed transcript files at or below it. Landing feeds each
new window straight in; a reader whose file is missing or behind reads only the files it
lacks, and one whose covered files are not the ones it was made from (one rewritten, say)
starts over.

Windows are read in landing order and each byte of a source counts once, so a window landed
twice (a crash between landing and moving the cursor) changes nothing.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import orjson

from asz.store._cached import optional_text
from asz.store._derived import DerivedFile
from asz.store._layout import TRANSCRIPT_KIND, facts_path
from asz.store._streams import MAIN_STREAM, LandedWindow, StreamReader
from asz.synthetic import SYNTHETIC_MODEL

if TYPE_CHECKING:
    from asz.store._layout import LandedName
    from asz.store._session_files import SessionFiles

__all__ = [
    "FACTS",
    "CallFact",
    "FactsBuilder",
    "SessionFacts",
    "load_facts",
    "open_facts",
    "save_facts",
]

FACTS = DerivedFile(facts_path, schema=3, limit=1 << 30)
_ASSISTANT = b'"assistant"'
_PROMPT_ID = b'"promptId"'
_CWD_KEY = b'"cwd"'
_COMPARED_CWDS = 8
_CWD_VALUE = re.compile(rb'"cwd"\s*:\s*"((?:[^"\\\n]|\\.)*)"')
_TIMESTAMP = re.compile(rb'"timestamp"\s*:\s*"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"')
"""A time as Claude Code writes it (UTC, milliseconds, ``Z``): of one fixed form, so the
earliest and latest compare as text."""


@dataclass(slots=True)
class CallFact:
    message_id: str
    request_id: str | None
    stream: str
    prompt_id: str | None


@dataclass(slots=True)
class SessionFacts:
    session: str
    calls: dict[str, CallFact] = field(default_factory=dict)
    """Message id -> the facts of the first assistant line carrying it."""
    primary_dir: str | None = None
    """The project dir (its name under the projects dir) of the main transcript."""
    project_dirs: set[str] = field(default_factory=set)
    cwds: set[str] = field(default_factory=set)
    first_cwd: str | None = None
    """The first cwd the landed lines carry, in landing order: where the session started."""
    models: set[str] = field(default_factory=set)
    """Every model an assistant line names (``<synthetic>`` excluded)."""
    first_activity: str | None = None
    """The earliest ``timestamp`` of the landed lines (see ``_TIMESTAMP``), None without one."""
    last_activity: str | None = None
    lines: int = 0
    """Transcript lines landed, each counted once (sidecar snapshots are not lines)."""


@dataclass(slots=True)
class _SourceState:
    reader: StreamReader = field(default_factory=StreamReader)
    prompt: str | None = None


class FactsBuilder:
    """A session's facts grown window by window, in the order the windows landed."""

    def __init__(self, session: str) -> None:
        self.facts = SessionFacts(session)
        self.watermark = 0
        self.files = 0
        self.changed = False
        self._sources: dict[str, _SourceState] = {}
        self._known_cwds: dict[bytes, bytes] = {}
        """Each known cwd as spelled inside a JSON string -> as its whole ``"cwd"`` field."""

    def add_file(self, seq: int, windows: list[LandedWindow]) -> None:
        """Takes in the windows of one landed file; files come in sequence order."""
        self.files += 1
        self.watermark = max(self.watermark, seq)
        self.changed = True
        for window in windows:
            if not window.snapshot:
                self._window(window)

    def _window(self, window: LandedWindow) -> None:
        facts = self.facts
        directory = window.source.split("/", 1)[0]
        facts.project_dirs.add(directory)
        if window.stream == MAIN_STREAM:
            primary = facts.primary_dir
            facts.primary_dir = min(primary, directory) if primary else directory
        state = self._sources.get(window.source)
        if state is None:
            state = self._sources[window.source] = _SourceState()
        fresh = state.reader.take(window).data
        # A window read whole has its line count in its meta: no second count of its bytes.
        whole = len(fresh) == len(window.payload)
        facts.lines += window.lines if whole else fresh.count(b"\n")
        self._activity(fresh)
        for start, end in self._lines_to_read(fresh):
            self._line(fresh[start:end], window.stream, state)

    def _activity(self, data: bytes) -> None:
        """Moves the first and last activity out to the times ``data`` holds: every one, as
        lines are not in time order (a file snapshot line carries an earlier time than the
        line before it), found by one search rather than by parsing the lines."""
        times = _TIMESTAMP.findall(data)
        if not times:
            return
        first, last = min(times).decode(), max(times).decode()
        facts = self.facts
        if facts.first_activity is None or first < facts.first_activity:
            facts.first_activity = first
        if facts.last_activity is None or last > facts.last_activity:
            facts.last_activity = last

    def _lines_to_read(self, data: bytes) -> Iterator[tuple[int, int]]:
        """(start, end) of each line that may hold a fact, in order.

        Most lines hold none (progress lines, tool results, a cwd already known), so the
        window is searched for the few words a fact needs and only the lines holding them
        are parsed; each search resumes past the last line parsed. A ``"cwd"`` is checked
        against the known cwds as the search reaches it (the one met last first, as most
        lines repeat it), so a new cwd is parsed from its first line only and a known one
        costs a comparison.
        """
        size = len(data)
        assistant = _find(data, _ASSISTANT, 0, size)
        prompt = _find(data, _PROMPT_ID, 0, size)
        cwd = data.find(_CWD_KEY)
        recent = b"\n"  # never at a "cwd"
        done = 0
        while True:
            if assistant < done:
                assistant = _find(data, _ASSISTANT, done, size)
            if prompt < done:
                prompt = _find(data, _PROMPT_ID, done, size)
            word = assistant if assistant < prompt else prompt
            if 0 <= cwd < done:
                cwd = data.find(_CWD_KEY, done)
            if 0 <= cwd < word:
                if data.startswith(recent, cwd):
                    cwd = data.find(_CWD_KEY, cwd + len(_CWD_KEY))
                    continue
                spelled = self._known_cwd_at(data, cwd)
                if spelled is not None:
                    recent = spelled or recent
                    cwd = data.find(_CWD_KEY, cwd + len(_CWD_KEY))
                    continue
                pos = cwd
            elif word < size:
                pos = word
            else:
                return
            start = data.rfind(b"\n", 0, pos) + 1
            end = data.find(b"\n", pos)
            done = size if end < 0 else end + 1
            yield start, done

    def _known_cwd_at(self, data: bytes, pos: int) -> bytes | None:
        """The field a known cwd is spelled as when the ``"cwd"`` at ``pos`` starts it, empty
        when it has no cwd value at all (nothing to learn there either), else None."""
        if len(self._known_cwds) <= _COMPARED_CWDS:
            for spelled in self._known_cwds.values():
                if data.startswith(spelled, pos):
                    return spelled
        match = _CWD_VALUE.match(data, pos)
        if match is None:
            return b""
        return self._known_cwds.get(match.group(1))

    def _know_cwd(self, cwd: str) -> None:
        raw = orjson.dumps(cwd)[1:-1]
        self._known_cwds[raw] = _CWD_KEY + b':"' + raw + b'"'

    def _line(self, data: bytes, stream: str, state: _SourceState) -> None:
        try:
            value = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        if not isinstance(value, dict):
            return
        cwd = value.get("cwd")
        if isinstance(cwd, str) and cwd not in self.facts.cwds:
            self.facts.cwds.add(cwd)
            self.facts.first_cwd = self.facts.first_cwd or cwd
            self._know_cwd(cwd)
        kind = value.get("type")
        if kind == "user":
            prompt = value.get("promptId")
            if isinstance(prompt, str):
                state.prompt = prompt
        elif kind == "assistant":
            self._call(value, stream, state)

    def _call(self, value: dict[str, Any], stream: str, state: _SourceState) -> None:
        message = value.get("message")
        if not isinstance(message, dict) or message.get("model") == SYNTHETIC_MODEL:
            return
        model = message.get("model")
        if isinstance(model, str) and model:
            self.facts.models.add(model)
        message_id = message.get("id")
        if not isinstance(message_id, str) or not message_id:
            return
        if message_id not in self.facts.calls:
            request = value.get("requestId")
            self.facts.calls[message_id] = CallFact(
                message_id, request if isinstance(request, str) else None, stream, state.prompt
            )

    def to_value(self) -> dict[str, Any]:
        facts = self.facts
        return {
            "watermark": self.watermark,
            "files": self.files,
            "primary_dir": facts.primary_dir,
            "project_dirs": sorted(facts.project_dirs),
            "cwds": sorted(facts.cwds),
            "first_cwd": facts.first_cwd,
            "models": sorted(facts.models),
            "activity": [facts.first_activity, facts.last_activity],
            "lines": facts.lines,
            "calls": {
                key: [call.request_id, call.stream, call.prompt_id]
                for key, call in facts.calls.items()
            },
            "sources": {
                source: [state.reader.end, state.reader.line, state.prompt]
                for source, state in self._sources.items()
            },
        }

    @classmethod
    def from_value(cls, session: str, value: Any) -> FactsBuilder | None:
        """A builder restored from what its derived file kept, or None when that is not
        usable."""
        try:
            builder = cls(session)
            builder.watermark = int(value["watermark"])
            builder.files = int(value["files"])
            facts = builder.facts
            facts.primary_dir = value["primary_dir"]
            facts.project_dirs = set(value["project_dirs"])
            facts.cwds = set(value["cwds"])
            facts.first_cwd = optional_text(value["first_cwd"])
            facts.models = set(value["models"])
            first, last = value["activity"]
            facts.first_activity, facts.last_activity = optional_text(first), optional_text(last)
            facts.lines = int(value["lines"])
            for cwd in facts.cwds:
                builder._know_cwd(cwd)
            facts.calls = {
                key: CallFact(key, request, stream, prompt)
                for key, (request, stream, prompt) in value["calls"].items()
            }
            for source, (end, line, prompt) in value["sources"].items():
                reader = StreamReader.resumed(int(end), int(line))
                builder._sources[source] = _SourceState(reader, prompt)
        except (AttributeError, KeyError, TypeError, ValueError):
            return None
        return builder


def _find(data: bytes, word: bytes, start: int, size: int) -> int:
    """Where ``word`` is next from ``start``, or ``size`` when it is not."""
    found = data.find(word, start)
    return size if found < 0 else found


def open_facts(session: SessionFiles) -> FactsBuilder:
    """A session's facts caught up with every landed transcript file.

    Reads the derived file, then only the files above its watermark; starts over when it is
    missing or not whole, or the files at or below its watermark are not the ones it was made
    from.
    """
    landed = session.landed(TRANSCRIPT_KIND)
    kept = FACTS.read(session) if session.trusts_derived else None
    builder = None if kept is None else FactsBuilder.from_value(session.id, kept.value)
    if kept and builder and kept.mark != session.landed_mark(_covered(landed, builder)):
        builder = None
    if builder is None:
        builder = FactsBuilder(session.id)
        builder.changed = True
    newer = [item for item in landed if item.seq > builder.watermark]
    windows: dict[int, list[LandedWindow]] = {item.seq: [] for item in newer}
    for name, window in session.windows(newer, problems=[]):
        windows[name.seq].append(window)
    for seq, held in windows.items():
        builder.add_file(seq, held)
    return builder


def _covered(landed: list[LandedName], builder: FactsBuilder) -> list[LandedName]:
    """The landed transcript files the builder has taken in: those up to its watermark."""
    return [item for item in landed if item.seq <= builder.watermark]


def save_facts(session: SessionFiles, builder: FactsBuilder) -> None:
    """Writes the derived file; only where the session already has landed transcripts."""
    if session.stream_dirs():
        landed = session.landed(TRANSCRIPT_KIND)
        FACTS.write(session, session.landed_mark(_covered(landed, builder)), builder.to_value())


def load_facts(session: SessionFiles) -> SessionFacts:
    """The session's facts, as of every transcript file landed so far."""
    builder = open_facts(session)
    if builder.changed and builder.files:
        # A reader may not be able to write (a read-only root); the facts hold regardless.
        with contextlib.suppress(OSError):
            save_facts(session, builder)
    return builder.facts
