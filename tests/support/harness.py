"""Proving harness: write a capture the way Claude Code does, crash the collector, check the root.

Shared by the crash, fault, bad-input and security tests and by ``bench/crash.py``. It only
drives the real ``asz`` executable in subprocesses and reads what landed through the store's
own readers, so what it proves is what a user's machine would see.

A capture comes from ``asz.synth``: its ``expected.json`` says which session every body belongs
to and which bodies no rule can claim. :func:`plan_writes` turns the capture's files into the
writes Claude Code makes (a body in one write with no temporary name, a transcript line appended
at a time and sometimes in two writes), in the order of their simulated times.
:func:`check_root` is the definition of "nothing lost, nothing twice".
"""

from __future__ import annotations

import contextlib
import http.client
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import orjson
from prometheus_client.parser import text_string_to_metric_families

from asz.adapters.provider_ledger import Ledger, State, ledger_path, open_ledger
from asz.adapters.transcript_cursors import cursor_path, load_cursor
from asz.bodykeys import is_session_id
from asz.crashpoints import ENV as CRASH_ENV
from asz.crashpoints import EXIT_CODE as CRASH_EXIT
from asz.crashpoints import GENERATION_POINTS, POINTS
from asz.store import BODY_KIND, Session, Store, open_store
from asz.store._root import Root
from asz.synth import SynthOptions, synthesize

__all__ = [
    "BODIES",
    "INDEX",
    "SERVICE_FLAGS",
    "Capture",
    "CrashPlan",
    "CrashReport",
    "Workspace",
    "Write",
    "apply_write",
    "asz_command",
    "check_root",
    "child_env",
    "crash_run",
    "halves",
    "http_get",
    "landed_records",
    "log_lines",
    "metrics",
    "plan_writes",
    "running",
    "service_port",
    "settle",
    "stale_temps",
    "wait_for",
]

BODIES = "asz/provider-bodies"
INDEX = f"{BODIES}/index.jsonl"
SERVICE_FLAGS = (
    "--batch-window",
    "0",
    "--settle-seconds",
    "0.05",
    "--rescan-interval",
    "1",
    "--listen",
    "127.0.0.1:0",
)


# -- running the real executable --------------------------------------------------------------


def asz_command() -> list[str]:
    """The installed console script next to this interpreter, else ``python -m asz``."""
    script = Path(sys.executable).with_name("asz")
    if script.exists():
        return [str(script)]
    found = shutil.which("asz")
    return [found] if found else [sys.executable, "-m", "asz"]


def child_env(home: Path, claude: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
    """A clean environment: a private HOME, the Claude Code directory, and of this process's
    own only ``PATH`` and ``PYTHONPATH`` (so a run can point at another copy of the code)."""
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "LANG": "C.UTF-8",
        "CLAUDE_CONFIG_DIR": str(claude),
    }
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    env.update(extra or {})
    return env


@dataclass
class Workspace:
    """A Claude Code directory, a storage root and a HOME under one temporary directory."""

    base: Path
    elsewhere: Path | None = None
    """A storage root that is not under ``base`` (on another filesystem, say)."""

    @property
    def claude(self) -> Path:
        return self.base / "claude"

    @property
    def root(self) -> Path:
        return self.elsewhere or self.base / "root"

    @property
    def bodies(self) -> Path:
        return self.claude / BODIES

    @property
    def projects(self) -> Path:
        return self.claude / "projects"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return child_env(self.base / "home", self.claude, extra)

    def run(
        self, *args: str, extra_env: dict[str, str] | None = None, timeout: float = 120
    ) -> subprocess.CompletedProcess[bytes]:
        """``asz <args> --root <root>``, run to its end."""
        return subprocess.run(
            [*asz_command(), *args, "--root", str(self.root)],
            env=self.env(extra_env),
            capture_output=True,
            timeout=timeout,
            check=False,
        )

    def collect_once(self, extra_env: dict[str, str] | None = None) -> tuple[int, dict[str, Any]]:
        """One ``asz collect --once --json`` pass: its exit code and its counts."""
        done = self.run("collect", "--once", "--json", extra_env=extra_env)
        counts = orjson.loads(done.stdout.splitlines()[-1]) if done.stdout.strip() else {}
        return done.returncode, counts

    def verify(self) -> tuple[int, dict[str, Any]]:
        done = self.run("verify", "--json")
        return done.returncode, orjson.loads(done.stdout) if done.stdout.strip() else {}

    def body(self, session: str, record_id: str) -> subprocess.CompletedProcess[bytes]:
        return self.run("body", session, record_id)

    def start_service(
        self, log: Path, extra_env: dict[str, str] | None = None
    ) -> subprocess.Popen[bytes]:
        """``asz collect`` with fast timings; its log goes to a file so a full pipe never
        stalls it."""
        with log.open("ab") as out:
            return subprocess.Popen(
                [*asz_command(), "collect", "--root", str(self.root), *SERVICE_FLAGS],
                env=self.env(extra_env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def start_once(self, log: Path, extra_env: dict[str, str] | None = None) -> subprocess.Popen:
        with log.open("ab") as out:
            return subprocess.Popen(
                [*asz_command(), "collect", "--once", "--json", "--root", str(self.root)],
                env=self.env(extra_env),
                stdout=out,
                stderr=subprocess.STDOUT,
            )


# -- a capture and the writes that make it ----------------------------------------------------


@dataclass
class Capture:
    """A synthesised capture on disk and its ground truth."""

    dir: Path
    expected: dict[str, Any]

    @classmethod
    def make(cls, directory: Path, **options: Any) -> Capture:
        options.setdefault("index", True)
        return cls(directory, synthesize(directory, SynthOptions(**options)))

    def claimable(self) -> list[dict[str, Any]]:
        return [body for body in self.expected["bodies"] if body["claim"] is not None]

    def unclaimable(self) -> list[dict[str, Any]]:
        return [body for body in self.expected["bodies"] if body["claim"] is None]

    def transcripts(self) -> list[tuple[str, str]]:
        """(session, path relative to the capture) of every append-only transcript."""
        return [
            (session["id"], path)
            for session in self.expected["sessions"]
            for path in session["transcripts"]
        ]

    def lines(self) -> int:
        return sum(
            (self.dir / path).read_bytes().count(b"\n") for _session, path in self.transcripts()
        )


@dataclass(frozen=True, slots=True)
class Write:
    """One write Claude Code makes: a whole body, or (part of) a line appended to a file."""

    at: int
    path: str
    data: bytes
    whole: bool


def plan_writes(capture: Path, rng: random.Random, split: float = 0.25) -> list[Write]:
    """Every file of the capture as the writes that make it, ordered by simulated time.

    A line is timed by its ``timestamp`` (a line without one follows the line before it);
    ``split`` is the share of lines written in two parts, the cut at a random byte.
    """
    writes: list[tuple[int, int, Write]] = []
    for path in sorted(capture.rglob("*")):
        if not path.is_file() or path.name == "expected.json":
            continue
        rel = path.relative_to(capture).as_posix()
        mtime = path.stat().st_mtime_ns
        if not rel.endswith(".jsonl"):
            writes.append((mtime, len(writes), Write(mtime, rel, path.read_bytes(), True)))
            continue
        at = 0
        for line in path.read_bytes().splitlines(keepends=True):
            at = max(at, _line_time(line) or at)
            if len(line) > 2 and rng.random() < split:
                cut = rng.randrange(1, len(line) - 1)
                parts = [line[:cut], line[cut:]]
            else:
                parts = [line]
            for part in parts:
                writes.append((at, len(writes), Write(at, rel, part, False)))
    return [write for _at, _n, write in sorted(writes, key=lambda item: item[:2])]


def halves(writes: list[Write], capture: Capture) -> tuple[list[Write], list[Write]]:
    """The writes split so that every session is half written, as when Claude Code sessions
    run side by side; a line is never split between the halves."""
    owners = _owners(writes, capture)
    total = Counter(owners)
    made: Counter[str] = Counter()
    first: list[Write] = []
    rest: list[Write] = []
    torn: set[str] = set()
    for write, owner in zip(writes, owners, strict=True):
        made[owner] += 1
        if made[owner] <= total[owner] // 2 or write.path in torn:
            first.append(write)
            torn.discard(write.path)
            if not write.whole and not write.data.endswith(b"\n"):
                torn.add(write.path)
        else:
            rest.append(write)
    return first, rest


def _owners(writes: list[Write], capture: Capture) -> list[str]:
    """The session each write belongs to: a body's from the ground truth, an index line's from
    the line, anything else's from its path."""
    bodies = {body["file"]: body["session"] for body in capture.expected["bodies"]}
    sessions = [session["id"] for session in capture.expected["sessions"]]
    owners: list[str] = []
    parts: list[int] = []
    for n, write in enumerate(writes):
        owner = bodies.get(write.path) or next((s for s in sessions if s in write.path), "")
        owners.append(owner)
        if write.path == INDEX:
            parts.append(n)
            if write.data.endswith(b"\n"):
                line = b"".join(writes[i].data for i in parts)
                named = orjson.loads(line).get("session_id", "")
                for i in parts:
                    owners[i] = named
                parts = []
    return owners


def _line_time(line: bytes) -> int | None:
    try:
        stamp = orjson.loads(line).get("timestamp")
        return int(datetime.fromisoformat(stamp).timestamp() * 1_000_000_000)
    except (orjson.JSONDecodeError, AttributeError, TypeError, ValueError):
        return None


def apply_write(claude: Path, write: Write) -> None:
    """Writes as Claude Code does: in place, no temporary name, one ``write`` call."""
    path = claude / write.path
    path.parent.mkdir(parents=True, exist_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if write.whole else os.O_APPEND)
    fd = os.open(path, flags, 0o644)
    try:
        os.write(fd, write.data)
    finally:
        os.close(fd)


# -- what a root must hold --------------------------------------------------------------------


def check_root(ws: Workspace, capture: Capture, body_samples: int = 4) -> list[str]:
    """Everything that is wrong with the root, given that every write of ``capture`` was made
    and a clean pass has run since: empty when nothing was lost and nothing landed twice."""
    problems: list[str] = []
    store = open_store(ws.root)
    code, report = ws.verify()
    if code != 0 or report.get("problems"):
        problems.append(f"asz verify exited {code}: {report.get('problems', [])[:5]}")
    problems += _check_bodies(ws, store, capture, body_samples)
    problems += _check_transcripts(ws, store, capture)
    problems += _check_index(ws, store)
    problems += _check_ledger(store, capture)
    problems += [f"a temporary file was left behind: {path}" for path in stale_temps(ws.root)]
    return problems


def stale_temps(root: Path) -> list[Path]:
    return sorted(path for path in root.rglob(".tmp-*"))


def landed_records(session: Session) -> list[dict[str, Any]]:
    """The manifests of every body record landed in a session, in landing order, repeats
    included (``Session.manifests`` keeps the first of each id)."""
    return [
        record.meta
        for _name, landed in session.files(session.landed(BODY_KIND))
        for record in landed.records
    ]


def _check_bodies(ws: Workspace, store: Store, capture: Capture, samples: int) -> list[str]:
    problems = []
    want = {(body["session"], body["id"]): body for body in capture.claimable()}
    seen: Counter[tuple[str, str]] = Counter()
    for session in store.sessions():
        for meta in landed_records(store.session(session)):
            seen[(session, meta.get("id"))] += 1
    for key, count in seen.items():
        if count > 1:
            problems.append(f"body {key[1]} landed {count} times in session {key[0]}")
        if key not in want:
            problems.append(f"body {key[1]} landed in session {key[0]}, where it does not belong")
    for key, body in want.items():
        if key not in seen:
            problems.append(f"body {body['id']} of session {key[0]} was lost")
            continue
        if store.session(key[0]).body(body["id"]) != (capture.dir / body["file"]).read_bytes():
            problems.append(f"body {body['id']} does not rebuild to its bytes")
    for body in random.Random(len(want)).sample(list(want.values()), min(samples, len(want))):
        done = ws.body(body["session"], body["id"])
        if done.returncode != 0 or done.stdout != (capture.dir / body["file"]).read_bytes():
            problems.append(f"asz body {body['id']} exited {done.returncode} or gave other bytes")
    return problems


def _check_transcripts(ws: Workspace, store: Store, capture: Capture) -> list[str]:
    problems = []
    for session, path in capture.transcripts():
        relpath = path.removeprefix("projects/")
        source = (ws.claude / path).read_bytes()
        lines = store.session(session).transcript_lines()
        got = [line for line in lines if line.source == relpath]
        numbers = [line.line for line in got]
        if numbers != list(range(1, len(numbers) + 1)):
            problems.append(f"{relpath}: landed line numbers are not 1..n once each")
        if b"".join(line.data for line in got) != source:
            problems.append(f"{relpath}: landed lines are not the source's {len(source)} bytes")
    for session_id in store.sessions():
        session = store.session(session_id)
        for directory in session.stream_dirs():
            problems += _check_stream(session, directory)
    return problems


def _check_stream(session: Session, directory: str) -> list[str]:
    """Each byte of an append-only source landed once, and the cursor where the windows end."""
    files = session.landed_in(directory)
    end, snapshot = 0, None
    problems = []
    for name, window in session.windows(files):
        if window.snapshot:
            if window.payload == snapshot:
                problems.append(f"{name.path}: the same sidecar bytes landed twice")
            snapshot = window.payload
        elif window.off != end:
            problems.append(f"{name.path}: a window at byte {window.off}, not {end}")
            end = max(end, window.end)
        else:
            end = window.end
    cursor = load_cursor(session, directory)
    if files and cursor is None:
        problems.append(f"{cursor_path(directory)} is missing")
    elif (
        cursor is not None
        and files
        and (cursor.last_seq != files[-1].seq or (snapshot is None and cursor.offset != end))
    ):
        problems.append(f"{cursor_path(directory)} does not match its landed files")
    return problems


def _check_index(ws: Workspace, store: Store) -> list[str]:
    """Every line of ``index.jsonl`` landed once, in the session it names."""
    path = ws.claude / INDEX
    if not path.exists():
        return []
    want: dict[str, set[int]] = {}
    offset = 0
    for line in path.read_bytes().splitlines(keepends=True):
        with contextlib.suppress(orjson.JSONDecodeError, AttributeError):
            want.setdefault(orjson.loads(line).get("session_id"), set()).add(offset)
        offset += len(line)
    problems = []
    for session in store.sessions():
        offsets: Counter[int | None] = Counter(
            line.offset for line in store.session(session).index_lines()
        )
        twice = sorted(off for off, count in offsets.items() if off is not None and count > 1)
        if twice:
            problems.append(f"index lines at {twice[:5]} landed twice in session {session}")
        if set(offsets) != want.get(session, set()):
            problems.append(f"session {session} does not hold exactly its index lines")
    return problems


def _check_ledger(store: Store, capture: Capture) -> list[str]:
    """The ledger says landed exactly for the bodies landed, with the digest that landed."""
    try:
        ledger = open_ledger(ledger_path(Root(Path(store.location))), readonly=True)
    except (sqlite3.Error, ValueError) as err:
        return [f"the ledger does not read: {err}"]
    with ledger:
        return _ledger_problems(ledger, store, capture)


def _ledger_problems(ledger: Ledger, store: Store, capture: Capture) -> list[str]:
    problems = []
    landed = {}
    for session in store.sessions():
        for meta in landed_records(store.session(session)):
            landed[meta["src"]] = (session, meta["sha256"])
    for entry in ledger:
        if entry.state is State.LANDED and landed.get(entry.name) != (entry.session, entry.sha256):
            problems.append(f"the ledger says {entry.name} landed, the landed files do not")
    for name, (session, _sha) in landed.items():
        entry = ledger.get(name)
        if entry is None or entry.state is not State.LANDED or entry.session != session:
            problems.append(f"{name} landed in {session} but the ledger says {entry}")
    for body in capture.unclaimable():
        entry = ledger.get(Path(body["file"]).name)
        if entry is None or entry.state is not State.WAITING:
            problems.append(f"{body['id']} can be claimed by no rule, but is not waiting")
    return problems


def settle(ws: Workspace, capture: Capture) -> list[str]:
    """The clean passes after the crashes: the first may land what was left, a second must
    land nothing more, and both must be complete."""
    problems = []
    for attempt in ("first", "second"):
        code, counts = ws.collect_once()
        if code != 0:
            problems.append(f"the {attempt} clean pass exited {code}: {counts.get('errors')}")
        if counts.get("bodies_waiting") != len(capture.unclaimable()):
            problems.append(f"the {attempt} clean pass left {counts.get('bodies_waiting')} waiting")
    if counts.get("landed"):
        problems.append(f"the second clean pass still landed {counts['landed']} files")
    return problems


# -- killing the collector --------------------------------------------------------------------


@dataclass
class CrashReport:
    """What a crash run did and found."""

    kills: int = 0
    """Collectors ended by SIGKILL while they ran."""
    repack_kills: int = 0
    """Repacks (``CrashPlan.repack``) ended by SIGKILL while they ran."""
    repacks: int = 0
    """Repacks that ran to their end."""
    points: Counter[str] = field(default_factory=Counter)
    """Collectors that ended themselves at a named crash point, by point."""
    runs: int = 0
    bodies: int = 0
    lines: int = 0
    index_lines: int = 0
    seconds: float = 0.0
    problems: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kills": self.kills,
            "repack_kills": self.repack_kills,
            "repacks": self.repacks,
            "crash_points": dict(sorted(self.points.items())),
            "collector_runs": self.runs,
            "bodies": self.bodies,
            "lines": self.lines,
            "index_lines": self.index_lines,
            "seconds": round(self.seconds, 1),
            "problems": self.problems,
        }


@dataclass
class CrashPlan:
    """How a crash run is shaped; lives are seconds a collector runs before it is killed."""

    kills: int
    service: bool = True
    seed: int = 1
    point_share: float = 0.3
    """Share of collectors started with a named crash point (``ASZ_CRASH_AT``)."""
    life: tuple[float, float] = (0.05, 1.2)
    repack: bool = False
    """Beside each collector, an ``asz repack`` of every session, killed at the same moment
    (or stopped at a generation crash point) when it is still running."""


def crash_run(ws: Workspace, capture: Capture, plan: CrashPlan, log: Path) -> CrashReport:
    """Writes the capture into the Claude Code directory over time while collectors run and are
    killed, until ``plan.kills`` kills happened and every write was made; then the clean passes
    and :func:`check_root`."""
    rng = random.Random(plan.seed)
    writes = plan_writes(capture.dir, rng)
    per_life = max(1, -(-len(writes) // plan.kills))
    report = CrashReport()
    started = time.monotonic()
    while report.kills < plan.kills or writes:
        extra = _crash_env(rng, plan.point_share)
        start = ws.start_service if plan.service else ws.start_once
        process = start(log, extra)
        report.runs += 1
        deadline = time.monotonic() + rng.uniform(*plan.life)
        repacker = _start_repack(ws, rng, plan.point_share, log) if plan.repack else None
        for write in writes[:per_life]:
            apply_write(ws.claude, write)
            time.sleep(rng.uniform(0, 0.02))
        del writes[:per_life]
        _sleep_until(deadline, process)
        if process.poll() is None:
            process.send_signal(signal.SIGKILL)
            report.kills += 1
        code = process.wait()
        if code == CRASH_EXIT:
            report.points[extra[CRASH_ENV].split(":")[0]] += 1
        if repacker is not None:
            _end_repack(repacker, report)
    report.problems = settle(ws, capture) + check_root(ws, capture)
    report.seconds = time.monotonic() - started
    report.bodies = len(capture.claimable())
    report.lines = capture.lines()
    index = ws.claude / INDEX
    report.index_lines = index.read_bytes().count(b"\n") if index.exists() else 0
    return report


def _start_repack(
    ws: Workspace, rng: random.Random, share: float, log: Path
) -> tuple[subprocess.Popen[bytes], str]:
    """``asz repack`` of every landed session, now and then with a generation crash point."""
    sessions = (
        [p.name for p in ws.root.iterdir() if is_session_id(p.name)] if ws.root.exists() else []
    )
    point = f"{rng.choice(GENERATION_POINTS)}:{rng.randint(1, 2)}" if rng.random() < share else ""
    with log.open("ab") as out:
        process = subprocess.Popen(
            [*asz_command(), "repack", "--root", str(ws.root), *sessions],
            env=ws.env({CRASH_ENV: point} if point else None),
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return process, point


def _end_repack(repacker: tuple[subprocess.Popen[bytes], str], report: CrashReport) -> None:
    process, point = repacker
    if process.poll() is None:
        process.send_signal(signal.SIGKILL)
        report.repack_kills += 1
    code = process.wait()
    if code == CRASH_EXIT:
        report.points[point.split(":")[0]] += 1
    elif code >= 0:
        report.repacks += 1


def _crash_env(rng: random.Random, share: float) -> dict[str, str]:
    if rng.random() >= share:
        return {}
    return {CRASH_ENV: f"{rng.choice(POINTS)}:{rng.randint(1, 3)}"}


def _sleep_until(deadline: float, process: subprocess.Popen[bytes]) -> None:
    while time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.01)


# -- the service, from outside ------------------------------------------------------------------


def log_lines(log: Path) -> list[dict[str, Any]]:
    """The JSON lines a service logged so far (anything else it wrote is left out)."""
    lines = []
    for raw in log.read_bytes().splitlines() if log.exists() else []:
        with contextlib.suppress(orjson.JSONDecodeError):
            value = orjson.loads(raw)
            if isinstance(value, dict):
                lines.append(value)
    return lines


def service_port(log: Path) -> int:
    """The port a service logged it listens on, once it did."""
    found: list[int] = []

    def listening() -> bool:
        found[:] = [line["port"] for line in log_lines(log) if line.get("event") == "listening"]
        return bool(found)

    wait_for(listening, what="the service to listen")
    return found[-1]


def http_get(port: int, path: str) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    try:
        connection.request("GET", path)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def metrics(port: int) -> dict[str, float]:
    """Every sample of ``/metrics``, keyed ``name{label=value,...}``."""
    status, body = http_get(port, "/metrics")
    assert status == 200
    values: dict[str, float] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            labels = ",".join(f"{key}={value}" for key, value in sorted(sample.labels.items()))
            values[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return values


# -- small helpers ------------------------------------------------------------------------------


@contextlib.contextmanager
def running(process: subprocess.Popen[bytes]) -> Iterator[subprocess.Popen[bytes]]:
    """Kills the process on the way out, whatever happened."""
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def wait_for(predicate: Any, timeout: float = 30.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
