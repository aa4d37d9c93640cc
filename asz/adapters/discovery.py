"""Finding Claude Code's transcripts under the projects directories, grouped by session.

Claude Code files a session under the directory named after its launch cwd::

    <project>/<session>.jsonl                                   the main transcript
    <project>/agent-<id>.jsonl                                  a subagent, 2.0.x layout
    <project>/<session>/subagents/agent-<id>.jsonl              a subagent, 2.1.2 and later
    <project>/<session>/subagents/agent-<id>.meta.json          its sidecar (a snapshot)
    <project>/<session>/subagents/workflows/<run>/agent-<id>.jsonl  (and .meta.json)

Up to 1.0.x subagent lines sit inline in the main transcript and land with it. A 2.0.x agent
file carries its parent's ``sessionId`` and belongs to the session its first line naming a
session in UUID form names; one naming none is counted as unattributed and not landed. One
session can span several project directories, so sources are grouped by id; the directory of
the main transcript is the session's primary one.

A user may have several projects directories (``~/.config/claude/projects`` and
``~/.claude/projects``, say): they are scanned in order and what they hold is one set of
sessions, so a session with files in both is one session. A file's path below its projects
directory names its landed stream, so when the same path is under two of them only the first
directory's copy is taken; the other is counted as shadowed and never landed, whatever it
holds, so it can never be mistaken for a rewrite of the first.

A projects directory itself may be a link the user chose; it is resolved once, and two names
of one directory are scanned once. Below it nothing is followed: a linked project dir or file
could lead anywhere, and only regular files are opened (a FIFO named like a transcript would
block the pass).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from asz.adapters.agent_files import AGENT_SIDECAR, AGENT_TRANSCRIPT
from asz.adapters.source_files import FileStat, open_regular
from asz.adapters.transcript_landing import TranscriptSource
from asz.bodykeys import is_session_id
from asz.store import MAIN_STREAM

__all__ = [
    "PEEK_BYTES",
    "TRANSCRIPT_SUFFIX",
    "DiscoveredSession",
    "Discovery",
    "ScannedDir",
    "discover",
    "first_session",
    "peek_cwds",
]

TRANSCRIPT_SUFFIX = ".jsonl"
PEEK_BYTES = 256 * 1024
_CHUNK = 1 << 20


@dataclass(slots=True)
class DiscoveredSession:
    """One session's sources as found in this pass."""

    session: str
    primary_dir: str | None = None
    dirs: set[str] = field(default_factory=set)
    sources: list[TranscriptSource] = field(default_factory=list)

    @property
    def size(self) -> int:
        """The bytes of its sources as this pass saw them (one stat each, already taken)."""
        return sum(source.seen.size for source in self.sources if source.seen is not None)

    def add(self, source: TranscriptSource) -> None:
        self.sources.append(source)
        self.dirs.add(source.project_dir)
        if source.stream == MAIN_STREAM and not source.snapshot:
            primary = self.primary_dir
            self.primary_dir = min(primary, source.project_dir) if primary else source.project_dir


@dataclass(slots=True)
class ScannedDir:
    """What one projects directory held, for ``asz sources``."""

    path: Path
    """As configured."""
    resolved: Path
    exists: bool = False
    same_as: Path | None = None
    """The earlier configured directory this one is another name of (then it is not scanned)."""
    files: int = 0
    """Transcript files taken from this directory."""
    sessions: set[str] = field(default_factory=set)
    shadowed: list[str] = field(default_factory=list)
    """Paths also under an earlier directory, whose copy here is not taken."""


@dataclass(slots=True)
class Discovery:
    """Everything one scan of the projects directories found."""

    dirs: list[ScannedDir] = field(default_factory=list)
    sessions: dict[str, DiscoveredSession] = field(default_factory=dict)
    unattributed: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _taken: set[str] = field(default_factory=set, init=False, repr=False)

    def take(self, relpath: str) -> bool:
        """Whether the file at ``relpath`` in the directory being scanned is taken: False,
        and counted as shadowed, when an earlier directory holds the same path."""
        if relpath in self._taken:
            self.dirs[-1].shadowed.append(relpath)
            return False
        self._taken.add(relpath)
        return True

    def add(self, source: TranscriptSource) -> None:
        found = self.sessions.get(source.session)
        if found is None:
            found = self.sessions[source.session] = DiscoveredSession(source.session)
        found.add(source)
        scanned = self.dirs[-1]
        scanned.files += 1
        scanned.sessions.add(source.session)


def discover(*projects_dirs: Path) -> Discovery:
    """Scans the projects directories in order; a missing one holds nothing and is no error."""
    found = Discovery()
    for projects_dir in projects_dirs:
        resolved = Path(os.path.realpath(projects_dir))
        earlier = next((seen for seen in found.dirs if seen.resolved == resolved), None)
        if earlier is not None:
            found.dirs.append(ScannedDir(projects_dir, resolved, earlier.exists, earlier.path))
        else:
            found.dirs.append(ScannedDir(projects_dir, resolved))
            _scan_projects(resolved, projects_dir, found)
    for session in found.sessions.values():
        session.sources.sort(key=lambda source: (source.stream != MAIN_STREAM, source.relpath))
    return found


def _scan_projects(resolved: Path, configured: Path, found: Discovery) -> None:
    try:
        entries = sorted(os.scandir(resolved), key=lambda entry: entry.name)
    except (FileNotFoundError, NotADirectoryError):
        return
    except OSError as err:
        found.dirs[-1].exists = True
        found.errors.append(f"{configured}: cannot be read: {err.strerror or err}")
        return
    found.dirs[-1].exists = True
    for entry in entries:
        if entry.is_dir(follow_symlinks=False) and _fit_name(entry.name, found, entry.name):
            _scan_project(Path(entry.path), entry.name, found)


def _fit_name(name: str, found: Discovery, where: str) -> bool:
    """Whether a directory name can be carried in a landed header (it must be UTF-8)."""
    try:
        name.encode()
    except UnicodeEncodeError:
        found.errors.append(f"{where.encode(errors='replace').decode()}: name is not UTF-8")
        return False
    return True


def _entries(directory: Path, relpath: str, found: Discovery) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(directory), key=lambda entry: entry.name)
    except FileNotFoundError:
        return []
    except OSError as err:
        found.errors.append(f"{relpath}: cannot be read: {err.strerror or err}")
        return []


def _regular(entry: os.DirEntry[str]) -> FileStat | None:
    """The entry's stat when it is a regular file (never through a link), else None."""
    try:
        result = entry.stat(follow_symlinks=False)
    except OSError:
        return None
    return FileStat.of(result) if stat.S_ISREG(result.st_mode) else None


def _real_dir(path: Path) -> bool:
    try:
        return stat.S_ISDIR(os.lstat(path).st_mode)
    except OSError:
        return False


def _scan_project(directory: Path, project: str, found: Discovery) -> None:
    for entry in _entries(directory, project, found):
        name = entry.name
        relpath = f"{project}/{name}"
        if name.endswith(TRANSCRIPT_SUFFIX) and is_session_id(name[: -len(TRANSCRIPT_SUFFIX)]):
            seen = _regular(entry)
            if seen is not None and found.take(relpath):
                session = name[: -len(TRANSCRIPT_SUFFIX)]
                found.add(
                    TranscriptSource(Path(entry.path), relpath, session, MAIN_STREAM, seen=seen)
                )
        elif agent := AGENT_TRANSCRIPT.match(name):
            seen = _regular(entry)
            if seen is None or not found.take(relpath):
                continue
            owner = first_session(Path(entry.path))
            if owner is None:
                if seen.size:
                    found.unattributed.append(relpath)
                continue
            found.add(TranscriptSource(Path(entry.path), relpath, owner, agent.group(1), seen=seen))
        elif is_session_id(name) and entry.is_dir(follow_symlinks=False):
            subagents = directory / name / "subagents"
            if _real_dir(subagents):
                _scan_agents(subagents, f"{relpath}/subagents", name, found)


def _scan_agents(
    directory: Path, relpath: str, session: str, found: Discovery, runs: bool = True
) -> None:
    """The agents of ``<session>/subagents/`` and, when ``runs``, of each workflow run."""
    for entry in _entries(directory, relpath, found):
        name = entry.name
        transcript = AGENT_TRANSCRIPT.match(name)
        sidecar = None if transcript else AGENT_SIDECAR.match(name)
        agent = transcript or sidecar
        if agent is not None:
            seen = _regular(entry)
            if seen is not None and found.take(f"{relpath}/{name}"):
                found.add(
                    TranscriptSource(
                        Path(entry.path),
                        f"{relpath}/{name}",
                        session,
                        agent.group(1),
                        snapshot=sidecar is not None,
                        seen=seen,
                    )
                )
        elif name == "workflows" and runs and entry.is_dir(follow_symlinks=False):
            for run in _entries(Path(entry.path), f"{relpath}/workflows", found):
                run_rel = f"{relpath}/workflows/{run.name}"
                if run.is_dir(follow_symlinks=False) and _fit_name(run.name, found, run_rel):
                    _scan_agents(Path(run.path), run_rel, session, found, runs=False)


def _complete_lines(path: Path, limit: int | None) -> Iterator[bytes]:
    """The complete lines at the start of a regular file, reading at most ``limit`` bytes."""
    fd, _info = open_regular(path)
    try:
        pending = b""
        offset = 0
        while limit is None or offset < limit:
            chunk = os.pread(fd, _CHUNK if limit is None else min(_CHUNK, limit - offset), offset)
            if not chunk:
                return
            offset += len(chunk)
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            yield from lines
    finally:
        os.close(fd)


def _line_object(line: bytes) -> dict[str, object] | None:
    try:
        value = orjson.loads(line)
    except orjson.JSONDecodeError:
        return None
    return value if isinstance(value, dict) else None


def first_session(path: Path) -> str | None:
    """The session a 2.0.x agent file belongs to: its first line's UUID-form ``sessionId``."""
    try:
        for line in _complete_lines(path, None):
            if b'"sessionId"' not in line:
                continue
            value = _line_object(line)
            session = value.get("sessionId") if value else None
            if isinstance(session, str) and is_session_id(session):
                return session
    except OSError:
        return None
    return None


def peek_cwds(sources: list[TranscriptSource], limit: int = PEEK_BYTES) -> set[str]:
    """The ``cwd`` values on the first complete lines of a session's transcripts.

    Lets the session filter judge a session by its cwd before anything of it has landed.
    """
    cwds: set[str] = set()
    for source in sources:
        if source.snapshot:
            continue
        try:
            for line in _complete_lines(source.path, limit):
                value = _line_object(line) if b'"cwd"' in line else None
                cwd = value.get("cwd") if value else None
                if isinstance(cwd, str):
                    cwds.add(cwd)
        except OSError:
            continue
    return cwds
