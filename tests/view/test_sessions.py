"""``asz sessions`` and ids as people paste them, run as the real ``asz`` on real roots.

Every figure the listing prints is checked against what Claude Code wrote (the capture's own
files and ground truth), not against the store that computed it; the table is read the way a
person reads it, on a pipe and on a terminal of a given width, and the ids it shows are pasted
back into the other commands.
"""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import termios
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from itertools import pairwise
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import asz_executable

from asz.commands.args import parse_since
from asz.store import LandedWindow
from asz.store._resolve import sessions_starting, unique_prefixes
from asz.store._session_facts import FactsBuilder
from asz.synth import SynthOptions, synthesize

CANONICAL_TIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z")
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
A = "abcdef01-2345-4678-9abc-def012345678"
B = "abcdef01-2399-4678-9abc-def012345678"
UPPER = "FEDCBA98-7654-4321-8FED-CBA987654321"
PROJECT = "-work-proj"


# -- running the real asz -------------------------------------------------------------------------


def child_env(home: Path) -> dict[str, str]:
    """A private HOME, UTC, and of this process's own only ``PATH`` and ``PYTHONPATH`` (so a
    run can point at another copy of the code)."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "TZ": "UTC"}
    if os.environ.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.environ["PYTHONPATH"]
    return env


def asz(home: Path, *args: str, claude: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real ``asz`` with a private HOME, stdout a pipe (not a terminal)."""
    env = child_env(home)
    if claude is not None:
        env["CLAUDE_CONFIG_DIR"] = str(claude)
    return subprocess.run(
        [*asz_executable(), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def asz_on_terminal(home: Path, columns: int, *args: str) -> tuple[int, list[str]]:
    """The real ``asz`` with stdout a terminal ``columns`` wide: (exit code, lines seen)."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen(
        [*asz_executable(), *args], stdout=slave, stderr=subprocess.PIPE, env=child_env(home)
    )
    os.close(slave)
    seen = bytearray()
    while True:
        try:
            data = os.read(master, 65536)
        except OSError:  # the terminal closes when the command ends
            break
        if not data:
            break
        seen += data
    os.close(master)
    assert proc.stderr is not None
    proc.stderr.read()
    code = proc.wait(timeout=60)
    text = ANSI.sub("", seen.decode()).replace("\r", "")
    return code, text.splitlines()


def collect(home: Path, claude: Path, root: Path) -> None:
    done = asz(home, "collect", "--once", "--root", str(root), claude=claude)
    assert done.returncode == 0, done.stderr


def listing(home: Path, root: Path, *args: str) -> list[dict[str, Any]]:
    """The sessions ``--json`` lists; a filter that picks none is exit 2, with ``[]``."""
    done = asz(home, "sessions", "--json", "--root", str(root), *args)
    listed = json.loads(done.stdout)
    assert done.returncode == (2 if listed == [] and args else 0), done.stderr
    return listed


# -- a synthetic capture, and sessions written by hand --------------------------------------------


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path, dict[str, Any]]:
    """(home, Claude Code dir, root, ground truth) of a synthetic capture, collected once."""
    base = tmp_path_factory.mktemp("capture")
    claude = base / "claude"
    expected = synthesize(claude, SynthOptions(seed=13, sessions=3, turns=3, index=True))
    home, root = base / "home", base / "root"
    home.mkdir()
    collect(home, claude, root)
    return home, claude, root, expected


def jline(session: str, n: int, when: str, **extra: Any) -> bytes:
    line = {"type": "user", "sessionId": session, "cwd": "/work/proj", "timestamp": when}
    return orjson.dumps({**line, "uuid": f"u{n}", **extra}) + b"\n"


def assistant(session: str, n: int, when: str, model: str) -> bytes:
    message = {"id": f"msg_{session[:4]}_{n}", "model": model, "content": []}
    return jline(session, n, when, type="assistant", message=message, requestId=f"req_{n}")


def write_session(claude: Path, session: str, lines: list[bytes]) -> Path:
    path = claude / "projects" / PROJECT / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    (claude / "asz" / "provider-bodies").mkdir(parents=True, exist_ok=True)
    with path.open("ab") as out:
        out.write(b"".join(lines))
    return path


@pytest.fixture
def by_hand(tmp_path: Path) -> tuple[Path, Path, Path]:
    """(home, Claude Code dir, root) of three sessions written by hand, collected: two whose
    ids share their first 11 characters, and one whose id is in capitals."""
    claude, home, root = tmp_path / "claude", tmp_path / "home", tmp_path / "root"
    home.mkdir()
    for n, session in enumerate([A, B, UPPER]):
        write_session(
            claude,
            session,
            [
                jline(session, 1, f"2026-03-0{n + 1}T10:00:00.000Z"),
                assistant(session, 2, f"2026-03-0{n + 1}T10:00:05.000Z", "claude-opus-4-6"),
                jline(session, 3, f"2026-03-0{n + 1}T10:00:09.000Z", cwd="/work/proj/sub"),
            ],
        )
    collect(home, claude, root)
    return home, claude, root


# -- what Claude Code wrote, read independently of asz --------------------------------------------


def times_in(value: object) -> Iterator[str]:
    """Every ``timestamp`` field at any depth that holds a time in Claude Code's form."""
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "timestamp" and isinstance(item, str) and CANONICAL_TIME.fullmatch(item):
                yield item
            else:
                yield from times_in(item)
    elif isinstance(value, list):
        for item in value:
            yield from times_in(item)


def truth(claude: Path, expected: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """What ``asz sessions`` should say of each session, from the capture's files alone."""
    bodies_dir = claude / "asz" / "provider-bodies"
    found = {}
    for session in expected["sessions"]:
        sid = session["id"]
        lines = 0
        times: list[str] = []
        models: set[str] = set()
        calls: set[str] = set()
        cwds: list[str] = []
        for relpath in session["transcripts"]:
            data = (claude / relpath).read_bytes()
            lines += data.count(b"\n")
            for raw in data.splitlines():
                line = json.loads(raw)
                times += times_in(line)
                if "cwd" in line and relpath.endswith(f"{sid}.jsonl"):
                    cwds.append(line["cwd"])
                message = line.get("message")
                if line.get("type") == "assistant" and message["model"] != "<synthetic>":
                    models.add(message["model"])
                    calls.add(message["id"])
        claimed = [b for b in expected["bodies"] if b["session"] == sid and b["claim"]]
        for body in claimed:
            if body["id"].endswith(".request"):
                models.add(json.loads((bodies_dir / f"{body['id']}.json").read_bytes())["model"])
        main = next(path for path in session["transcripts"] if path.endswith(f"{sid}.jsonl"))
        found[sid] = {
            "id": sid,
            "project_dir": Path(main).parent.name,
            "cwd": cwds[0],
            "first_activity": min(times),
            "last_activity": max(times),
            "models": sorted(models),
            "calls": len(calls),
            "bodies": len(claimed),
            "transcript_lines": lines,
        }
    return found


# -- item 3: asz sessions -------------------------------------------------------------------------


def test_sessions_lists_every_landed_session_newest_first_with_what_landed(capture) -> None:
    home, claude, root, expected = capture
    listed = listing(home, root)
    want = truth(claude, expected)
    assert sorted(s["id"] for s in listed) == sorted(want)
    lasts = [s["last_activity"] for s in listed]
    assert lasts == sorted(lasts, reverse=True)
    for summary in listed:
        landed = sum(p.stat().st_size for p in (root / summary["id"]).rglob("*.asz"))
        assert summary == {**want[summary["id"]], "landed_bytes": landed}
        verified = asz(home, "verify", summary["id"], "--json", "--root", str(root))
        assert json.loads(verified.stdout)["transcript_lines"] == summary["transcript_lines"]


def test_off_a_terminal_the_table_is_plain_and_its_ids_paste_into_other_commands(
    capture,
) -> None:
    home, _claude, root, _expected = capture
    done = asz(home, "sessions", "--root", str(root))
    assert done.returncode == 0, done.stderr
    header, *rows = done.stdout.splitlines()
    assert re.split(r"\s{2,}", header) == [
        "SESSION", "PROJECT", "FIRST (UTC)", "LAST (UTC)", "MODELS", "CALLS", "BODIES", "LINES",
        "LANDED",
    ]  # fmt: skip
    assert "\x1b" not in done.stdout and not any(line != line.rstrip() for line in rows)
    ids = [s["id"] for s in listing(home, root)]
    assert len(rows) == len(ids)
    for row, session in zip(rows, ids, strict=True):
        shown = row.split()[0]
        assert len(shown) >= 8 and session.startswith(shown)
        view = asz(home, "view", shown, "--json", "--root", str(root))
        assert view.returncode == 0, view.stderr
        assert json.loads(view.stdout)["session"]["id"] == session


@pytest.mark.parametrize("columns", [50, 80, 200])
def test_on_a_terminal_the_table_fits_its_width_and_never_cuts_an_id(capture, columns: int) -> None:
    home, _claude, root, _expected = capture
    code, lines = asz_on_terminal(home, columns, "sessions", "--root", str(root))
    assert code == 0
    assert lines and all(len(line.rstrip()) <= columns for line in lines), lines
    ids = [s["id"] for s in listing(home, root)]
    starts = [line.split()[0] for line in lines[1:] if line[:1].strip()]
    assert len(starts) == len(ids)
    assert all(
        session.startswith(shown) and len(shown) >= 8
        for shown, session in zip(starts, ids, strict=True)
    )
    headers = lines[0].split()
    assert headers[0] == "SESSION" and "LAST" in headers
    assert ("LINES" in headers) == (columns >= 200)


@pytest.mark.slow
def test_a_listed_prefix_grows_until_it_names_one_session_and_ids_match_in_any_case(
    by_hand,
) -> None:
    home, _claude, root = by_hand
    done = asz(home, "sessions", "--root", str(root))
    shown = {row.split()[0] for row in done.stdout.splitlines()[1:]}
    assert shown == {A[:12], B[:12], UPPER[:8]}

    ambiguous = asz(home, "view", A[:8], "--json", "--root", str(root))
    assert ambiguous.returncode == 2
    assert A in ambiguous.stderr and B in ambiguous.stderr
    for text, session in [
        (A[:12], A),
        (B[:12].upper(), B),
        (UPPER.lower(), UPPER),
        ("fedcba98", UPPER),
    ]:
        view = asz(home, "view", text, "--json", "--root", str(root))
        assert view.returncode == 0, view.stderr
        assert json.loads(view.stdout)["session"]["id"] == session
    restored = asz(
        home, "restore", UPPER.lower()[:10], "--to", str(home / "back"), "--root", str(root)
    )
    assert restored.returncode == 0, restored.stderr
    assert (home / "back" / PROJECT / f"{UPPER}.jsonl").is_file()
    for text in ["0000", "abc", "not-an-id!"]:
        missing = asz(home, "verify", text, "--root", str(root))
        assert missing.returncode == 2 and missing.stdout == "", text


@pytest.mark.slow
def test_filters_pick_by_project_and_by_time(capture, by_hand) -> None:
    home, _claude, root, _expected = capture
    everything = listing(home, root)
    cwd = everything[0]["cwd"]
    same = [s["id"] for s in everything if cwd in s["cwd"] or cwd in s["project_dir"]]
    assert [s["id"] for s in listing(home, root, "--project", cwd)] == same
    tail = cwd.rsplit("/", 1)[-1]
    assert [s["id"] for s in listing(home, root, "--project", f"*/{tail}")] == [
        s["id"] for s in everything if s["cwd"].endswith(f"/{tail}")
    ]
    assert listing(home, root, "--project", "/nowhere/at/all") == []
    none = asz(home, "sessions", "--project", "/nowhere/at/all", "--root", str(root))
    assert none.returncode == 2 and none.stdout == "" and "no landed session matches" in none.stderr

    middle = everything[len(everything) // 2]["last_activity"]
    since = [s["id"] for s in listing(home, root, "--since", middle)]
    assert since == [s["id"] for s in everything if s["last_activity"] >= middle]
    assert listing(home, root, "--since", "3000-01-01") == []
    assert len(listing(home, root, "--since", "100000w")) == len(everything)

    bad = asz(home, "sessions", "--since", "yesterday", "--root", str(root))
    assert bad.returncode == 2 and "yesterday" in bad.stderr

    hand_home, _hand_claude, hand_root = by_hand
    march = listing(hand_home, hand_root, "--since", "2026-03-02")
    assert [s["id"] for s in march] == [UPPER, B]


@pytest.mark.slow
def test_the_listing_follows_what_lands_and_survives_its_caches(by_hand) -> None:
    home, claude, root = by_hand
    before = {s["id"]: s for s in listing(home, root)}
    assert before[A]["transcript_lines"] == 3 and before[A]["models"] == ["claude-opus-4-6"]
    assert before[A]["cwd"] == "/work/proj" and before[A]["project_dir"] == PROJECT

    write_session(claude, A, [assistant(A, 3, "2026-04-01T08:00:00.000Z", "claude-haiku-4-5")])
    collect(home, claude, root)
    after = {s["id"]: s for s in listing(home, root)}
    assert after[A]["transcript_lines"] == 4 and after[A]["calls"] == 2
    assert after[A]["last_activity"] == "2026-04-01T08:00:00.000Z"
    assert after[A]["models"] == ["claude-haiku-4-5", "claude-opus-4-6"]
    assert listing(home, root)[0]["id"] == A
    assert after[B] == before[B]

    (root / A / "summary.json").write_bytes(b'{"schema":1,"landed":"x"')
    (root / B / "summary.json").unlink()
    (root / B / "transcripts" / "facts.json").write_bytes(b'{"schema":1}')
    assert {s["id"]: s for s in listing(home, root)} == after


def test_a_damaged_landed_file_is_a_problem_yet_every_session_is_listed(capture, tmp_path) -> None:
    home, _claude, source_root, _expected = capture
    root = tmp_path / "root"
    subprocess.run(["cp", "-a", str(source_root), str(root)], check=True)
    session = listing(home, root)[0]["id"]
    for name in ("summary.json", "manifests.json"):  # derived: made again from the files
        for cache in root.rglob(name):
            cache.unlink()
    damaged = sorted((root / session / "provider_body").iterdir())[0]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 2] ^= 0xFF
    damaged.write_bytes(bytes(data))
    done = asz(home, "sessions", "--root", str(root))
    assert done.returncode == 1
    assert "problem" in done.stderr and damaged.name in done.stderr
    assert len(done.stdout.splitlines()) == 1 + len(_expected["sessions"])


def test_a_missing_root_is_exit_2_and_an_empty_one_says_it_holds_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    missing = asz(home, "sessions", "--root", str(tmp_path / "typo"))
    assert missing.returncode == 2 and "typo" in missing.stderr and missing.stdout == ""
    (tmp_path / "empty").mkdir()
    empty = asz(home, "sessions", "--root", str(tmp_path / "empty"))
    assert empty.returncode == 0 and empty.stdout == ""
    assert "no sessions have landed" in empty.stderr
    assert (
        json.loads(asz(home, "sessions", "--json", "--root", str(tmp_path / "empty")).stdout) == []
    )


# -- item 4: a body as people paste it ------------------------------------------------------------


def test_a_body_is_named_by_its_file_name_a_path_or_a_unique_prefix(capture) -> None:
    home, claude, root, expected = capture
    session = expected["sessions"][0]["id"]
    claimed = sorted(b["id"] for b in expected["bodies"] if b["session"] == session and b["claim"])
    request = next(body for body in claimed if body.endswith(".request"))
    source = claude / "asz" / "provider-bodies" / f"{request}.json"
    prefix = unique_prefixes(claimed)[request]
    for session_text, body_text in [
        (session, f"{request}.json"),
        (session, request),
        (session.upper(), str(source)),
        (session[:8], prefix),
    ]:
        done = subprocess.run(
            [*asz_executable(), "body", session_text, body_text, "--root", str(root)],
            capture_output=True,
            env=child_env(home),
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout == source.read_bytes()

    assert sum(body.startswith("req_") for body in claimed) > 4
    ambiguous = asz(home, "body", session, "req_", "--root", str(root))
    assert ambiguous.returncode == 2 and ambiguous.stdout == ""
    named = [body for body in claimed if body in ambiguous.stderr]
    assert 2 <= len(named) <= 4 and "more" in ambiguous.stderr
    unknown = asz(home, "body", session, "req_nothing_like_it.response.json", "--root", str(root))
    assert unknown.returncode == 2 and "holds no body" in unknown.stderr


# -- the parts, as properties ---------------------------------------------------------------------


@given(
    ids=st.lists(st.text(alphabet="aAbB0-", min_size=1, max_size=10), unique=True, max_size=12),
    minimum=st.integers(min_value=1, max_value=8),
)
def test_every_shown_prefix_names_its_own_id_and_no_other(ids: list[str], minimum: int) -> None:
    shown = unique_prefixes(ids, minimum)
    for ident, prefix in shown.items():
        assert ident.startswith(prefix) and len(prefix) >= min(minimum, len(ident))
        matches = sessions_starting(prefix, ids)
        # A prefix names one id; only an id with a twin in another case shows whole, and
        # its exact spelling is what names it then.
        assert matches == [ident] or prefix == ident


NOW = datetime(2026, 9, 18, 12, 0, tzinfo=UTC)


@given(
    count=st.integers(min_value=0, max_value=999_999),
    unit=st.sampled_from(["m", "h", "d", "w"]),
)
def test_an_age_counts_back_from_now(count: int, unit: str) -> None:
    step = {"m": timedelta(minutes=1), "h": timedelta(hours=1), "d": timedelta(days=1)}.get(
        unit, timedelta(weeks=1)
    )
    moment = parse_since(f"{count}{unit}", NOW)
    try:
        assert moment == NOW - count * step
    except OverflowError:
        assert moment.year == 1


@given(moment=st.datetimes(timezones=st.just(UTC)))
def test_an_iso_time_names_itself(moment: datetime) -> None:
    assert parse_since(moment.isoformat(), NOW) == moment
    assert parse_since(moment.isoformat().replace("+00:00", "Z"), NOW) == moment


@given(text=st.text(max_size=20))
def test_since_takes_only_what_it_can_read(text: str) -> None:
    try:
        moment = parse_since(text, NOW)
    except ValueError as err:
        assert repr(text) in str(err)
    else:
        assert moment.tzinfo is not None


TIMES = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2030, 1, 1)).map(
    lambda moment: moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
)
LINES = st.lists(
    st.one_of(
        st.builds(
            lambda when, cwd: {"type": "user", "timestamp": when, "cwd": cwd},
            TIMES,
            st.sampled_from(["/p", "/q"]),
        ),
        st.builds(
            lambda when, model, n: {
                "type": "assistant",
                "timestamp": when,
                "message": {"id": f"msg_{n}", "model": model},
            },
            TIMES,
            st.sampled_from(["claude-opus-4-6", "claude-haiku-4-5", "<synthetic>"]),
            st.integers(0, 5),
        ),
        st.builds(
            lambda when: {"type": "file-history-snapshot", "snapshot": {"timestamp": when}}, TIMES
        ),
        st.just({"type": "summary", "timestamp": "not a time"}),
    ),
    max_size=25,
)


@settings(deadline=None)
@given(lines=LINES, cuts=st.lists(st.integers(0, 25), max_size=4), spaced=st.booleans())
def test_activity_models_and_lines_grow_window_by_window_as_read_at_once(
    lines: list[dict[str, Any]], cuts: list[int], spaced: bool
) -> None:
    encoded = [
        (json.dumps(line) if spaced else orjson.dumps(line).decode()).encode() + b"\n"
        for line in lines
    ]
    builder = FactsBuilder(A)
    off = 0
    bounds = sorted({min(cut, len(encoded)) for cut in cuts} | {0, len(encoded)})
    for seq, (start, stop) in enumerate(pairwise(bounds), start=1):
        payload = b"".join(encoded[start:stop])
        source = f"{PROJECT}/{A}.jsonl"
        builder.add_file(
            seq,
            [LandedWindow(seq, source, "main", False, off, start + 1, stop - start, "", payload)],
        )
        off += len(payload)
        restored = FactsBuilder.from_value(A, builder.to_value())
        assert restored is not None
        builder = restored
    times = [when for line in lines for when in times_in(line)]
    facts = builder.facts
    assert (facts.first_activity, facts.last_activity) == (
        min(times, default=None),
        max(times, default=None),
    )
    assert facts.lines == len(lines)
    assert facts.first_cwd == next((line["cwd"] for line in lines if "cwd" in line), None)
    assert facts.models == {
        line["message"]["model"]
        for line in lines
        if line["type"] == "assistant" and line["message"]["model"] != "<synthetic>"
    }
