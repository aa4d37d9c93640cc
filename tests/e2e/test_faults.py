"""Faults: a full or failing disk, sources that vanish, grow or cannot be read, damaged landed
files and damaged derived state. Each has its expected outcome, proven on the real ``asz``.

A full disk and an I/O error are injected where files are written: ``ASZ_FAULT`` in the store's
one writing function fails the n-th file of a pass (every write position of a pass is tried),
and a real size-limited tmpfs proves the same for the service, down to landing resuming once
space returns.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import signal
import subprocess
import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from support.harness import (
    Capture,
    Workspace,
    apply_write,
    asz_command,
    check_root,
    halves,
    landed_records,
    log_lines,
    metrics,
    plan_writes,
    running,
    service_port,
    settle,
    stale_temps,
    wait_for,
)

from asz.adapters.provider_index import STATE_PATH
from asz.adapters.provider_ledger import ledger_path
from asz.adapters.transcript_cursors import cursor_path
from asz.store import BODY_KIND, TRANSCRIPT_KIND, Store, open_store
from asz.store._layout import seq_file
from asz.store._root import Root
from asz.store._session_facts import facts_path


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path / "ws")


def half_landed(ws: Workspace, tmp_path: Path, seed: int = 1) -> tuple[Capture, list]:
    """A capture with every session half landed; returns it and the writes still to make."""
    made = Capture.make(tmp_path / "capture", seed=seed, sessions=2, turns=3)
    first, rest = halves(plan_writes(made.dir, random.Random(seed)), made)
    write_all(ws, first)
    assert ws.collect_once()[0] == 0
    return made, rest


def write_all(ws: Workspace, writes: list) -> None:
    for write in writes:
        apply_write(ws.claude, write)


def landed_files_read(ws: Workspace) -> None:
    """No landed file is ever visible unless whole: verify reads every one of them."""
    code, report = ws.verify()
    assert code == 0, report["problems"][:3]


def every_landed_file_reads(root: Path) -> list[str]:
    """What ``asz verify`` checks, in this process: cheaper when asked after every write."""
    report = open_store(root).verify()
    return [str(problem) for problem in report.problems]


# -- a full or failing disk ------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("fault", "message"), [("enospc", "No space left on device"), ("eio", "Input/output error")]
)
def test_a_fault_at_any_write_of_a_pass_is_counted_and_the_next_pass_lands_the_rest(
    ws: Workspace, tmp_path: Path, fault: str, message: str
) -> None:
    """From the first file a pass writes to its last: enospc fails that file and every later
    one (the disk stays full), eio fails that file only."""
    made, rest = half_landed(ws, tmp_path)
    write_all(ws, rest)
    before = tmp_path / "before"
    shutil.copytree(ws.root, before)
    n = 0
    while True:
        n += 1
        shutil.rmtree(ws.root)
        shutil.copytree(before, ws.root)
        done = ws.run("collect", "--once", "--json", extra_env={"ASZ_FAULT": f"{fault}:{n}"})
        if done.returncode == 0:
            break
        assert b"Traceback" not in done.stderr, done.stderr.decode()[-2000:]
        counts = orjson.loads(done.stdout)
        assert any(message in error for error in counts["errors"]), (n, counts["errors"])
        assert message.encode() in done.stderr, "the error is told on stderr too"
        assert stale_temps(ws.root) == [], f"write {n} left a temporary file"
        assert every_landed_file_reads(ws.root) == []
        if n % 8 == 1:
            assert settle(ws, made) == []
            assert check_root(ws, made) == []
    assert n > 10, "the pass wrote fewer files than the test expects to fail"
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MiB filesystem, unmounted afterwards."""
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=2m,mode=0700", "tmpfs", str(mount)],
        capture_output=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


@pytest.mark.slow
def test_a_full_filesystem_stops_the_service_landing_and_it_resumes_when_space_returns(
    tmp_path: Path, small_disk: Path
) -> None:
    full = Workspace(tmp_path / "ws", elsewhere=small_disk / "root")
    made = Capture.make(tmp_path / "capture", seed=3, sessions=2, turns=3)
    write_all(full, plan_writes(made.dir, random.Random(3)))
    ballast = small_disk / "ballast"
    with ballast.open("wb") as handle, contextlib.suppress(OSError):
        while True:
            handle.write(b"\0" * 65536)
            handle.flush()
    os.truncate(ballast, ballast.stat().st_size - 16 * 1024)
    log = tmp_path / "service.log"

    with running(full.start_service(log)) as service:
        port = service_port(log)

        def failed() -> bool:
            return metrics(port).get("asz_errors_total{kind=pass}", 0) > 0

        wait_for(failed, what="a pass to fail on the full disk")
        assert metrics(port)["asz_errors_total{kind=crash}"] == 0, "a full disk crashed a pass"
        errors = [line for line in log_lines(log) if line.get("event") == "pass_error"]
        assert any("No space left on device" in line["error"] for line in errors)
        assert stale_temps(full.root) == []
        landed_files_read(full)

        ballast.unlink()

        def caught_up() -> bool:
            passes = [line for line in log_lines(log) if line.get("event") == "pass"]
            return bool(passes) and passes[-1]["complete"]

        wait_for(caught_up, timeout=60, what="landing to resume once space returned")
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=30) == 0
    assert settle(full, made) == []
    assert check_root(full, made) == []


# -- sources that vanish, grow or cannot be read ----------------------------------------------


def request(session: str, text: str) -> bytes:
    user_id = orjson.dumps({"device_id": "d" * 64, "account_uuid": "", "session_id": session})
    return orjson.dumps(
        {
            "model": "claude-test",
            "messages": [{"role": "user", "content": [{"type": "text", "text": text}]}],
            "metadata": {"user_id": user_id.decode()},
        }
    )


@pytest.mark.slow
def test_sources_deleted_and_growing_while_passes_run_never_fail_a_pass(
    ws: Workspace, tmp_path: Path
) -> None:
    """Bodies and transcripts that vanish between the listing and the read, and bodies that
    grow while they are read: gone (nothing to land) or still being written (waiting), never
    an error, and what the capture holds still lands once."""
    made, rest = half_landed(ws, tmp_path)
    stranger = "5e55a0e5-0000-4000-8000-000000000001"
    stop = threading.Event()
    churned = []

    def churn() -> None:
        rng = random.Random(5)
        while not stop.is_set():
            name = f"{uuid.UUID(int=rng.getrandbits(128), version=4)}.request.json"
            body = ws.bodies / name
            data = request(stranger, "x" * rng.randrange(10, 300_000))
            cut = rng.randrange(1, len(data))
            with body.open("wb") as handle:
                handle.write(data[:cut])
                handle.flush()
                handle.write(data[cut:])
            transcript = ws.projects / "-tmp-churn" / name.replace(".request.json", ".jsonl")
            transcript.parent.mkdir(parents=True, exist_ok=True)
            transcript.write_bytes(b'{"type":"user","sessionId":"%s"}\n' % stranger.encode())
            churned.append(name)
            body.unlink()
            transcript.unlink()

    writer = threading.Thread(target=churn)
    writer.start()
    try:
        for n, write in enumerate(rest):
            apply_write(ws.claude, write)
            if n % 8 == 0:
                done = ws.run("collect", "--once", "--json")
                assert b"Traceback" not in done.stderr
                counts = orjson.loads(done.stdout)
                assert counts["errors"] == [] and counts["conflicts"] == 0, counts
    finally:
        stop.set()
        writer.join()
    assert len(churned) > 20, "the churn did not get going"
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


@pytest.mark.slow
def test_a_body_that_grows_after_it_landed_is_a_conflict_until_its_bytes_are_back(
    ws: Workspace, tmp_path: Path
) -> None:
    made, rest = half_landed(ws, tmp_path)
    write_all(ws, rest)
    assert ws.collect_once()[0] == 0
    body = made.claimable()[0]
    path = ws.claude / body["file"]
    landed = path.read_bytes()
    path.write_bytes(landed + b"\n")

    code, counts = ws.collect_once()

    assert code == 1
    assert counts["conflicts"] == 1 and path.name in counts["conflict_sources"][0]
    assert ws.body(body["session"], body["id"]).stdout == landed
    path.write_bytes(landed)
    code, counts = ws.collect_once()
    assert code == 0 and counts["conflicts"] == 0
    assert check_root(ws, made) == []


def without_root_powers() -> list[str]:
    """A prefix that runs a command as root but without the power to read what it may not,
    so a mode-000 file is unreadable to it as it would be to any user."""
    if os.geteuid() != 0:
        return []
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root and setpriv is not here to drop the power to read anything")
    return [setpriv, "--bounding-set=-dac_override,-dac_read_search", "--"]


@pytest.mark.slow
def test_sources_that_cannot_be_read_are_errors_and_everything_else_lands(
    ws: Workspace, tmp_path: Path
) -> None:
    made, rest = half_landed(ws, tmp_path)
    write_all(ws, rest)
    pending = {write.path for write in rest}
    body = next(b for b in made.claimable() if b["role"] == "request" and b["file"] in pending)
    secret_body = ws.claude / body["file"]
    secret_transcript = ws.claude / next(p for _s, p in made.transcripts() if p in pending)
    for path in (secret_body, secret_transcript):
        path.chmod(0)
    command = [*without_root_powers(), *asz_command(), "collect", "--once", "--json"]

    done = subprocess.run(
        [*command, "--root", str(ws.root)], env=ws.env(), capture_output=True, check=False
    )

    assert done.returncode == 1
    counts = orjson.loads(done.stdout)
    assert any(secret_body.name in e and "Permission denied" in e for e in counts["errors"])
    assert any(secret_transcript.name in e for e in counts["errors"]), counts["errors"]
    store = open_store(ws.root)
    landed = {meta["id"] for s in store.sessions() for meta in landed_records(store.session(s))}
    want = {b["id"] for b in made.claimable() if b["id"] != body["id"]}
    assert want - landed <= {b["id"] for b in made.claimable() if b["claim"] == "transcript"}, (
        "bodies that do not need the unreadable transcript all landed"
    )
    assert body["id"] not in landed
    for path in (secret_body, secret_transcript):
        path.chmod(0o644)
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


# -- damaged landed files and damaged derived state ------------------------------------------


def flip_byte(path: Path) -> bytes:
    """Damages one byte in the middle of a file; returns the bytes it held."""
    data = path.read_bytes()
    damaged = bytearray(data)
    damaged[len(data) // 2] ^= 0x55
    os.chmod(path, 0o600)
    path.write_bytes(bytes(damaged))
    return data


@pytest.mark.slow
def test_a_damaged_landed_file_is_named_by_verify_and_every_session_keeps_landing(
    ws: Workspace, tmp_path: Path
) -> None:
    made, rest = half_landed(ws, tmp_path)
    store = open_store(ws.root)
    damaged, other = sorted({body["session"] for body in made.claimable()})
    session = store.session(damaged)
    victims = [
        Path(store.location) / session.landed(BODY_KIND)[0].path,
        Path(store.location) / session.landed(TRANSCRIPT_KIND)[0].path,
    ]
    saved = [flip_byte(path) for path in victims]

    code, report = ws.verify()

    assert code == 1
    assert {problem["file"] for problem in report["problems"]} == {str(p) for p in victims}
    write_all(ws, rest)
    pending = {write.path for write in rest}

    code, counts = ws.collect_once()

    assert code == 1, "a pass that skipped a damaged file does not look complete"
    assert any(str(victims[0]) in error for error in counts["errors"])
    landed = {meta["id"] for meta in landed_records(store.session(other))}
    assert {b["id"] for b in made.claimable() if b["session"] == other} <= landed
    landed = {meta["id"] for meta in landed_records(store.session(damaged))}
    new = {b["id"] for b in made.claimable() if b["session"] == damaged and b["file"] in pending}
    assert new and new <= landed, "the damaged session still takes new bodies"
    for path, data in zip(victims, saved, strict=True):
        path.write_bytes(data)
    assert settle(ws, made) == []
    assert check_root(ws, made) == []


def _ledger(store: Store, session: str) -> Path:
    return ledger_path(Root(Path(store.location)))


def _index_state(store: Store, session: str) -> Path:
    return Path(store.location) / STATE_PATH


def _cursor(store: Store, session: str) -> Path:
    return Path(store.location) / cursor_path(store.session(session).stream_dirs()[0])


def _facts(store: Store, session: str) -> Path:
    return Path(store.location) / facts_path(session)


def _seq(store: Store, session: str) -> Path:
    return Path(store.location) / seq_file(session)


def _truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _scribble(path: Path) -> None:
    data = bytearray(path.read_bytes())
    for i in range(len(data) // 3, min(len(data), len(data) // 3 + 512)):
        data[i] = (data[i] * 7 + 13) % 256
    path.write_bytes(bytes(data))


@pytest.mark.slow
@pytest.mark.parametrize(
    ("where", "damage"),
    [
        (_ledger, _truncate),
        (_ledger, _scribble),
        (_ledger, Path.unlink),
        (_index_state, _truncate),
        (_index_state, Path.unlink),
        (_cursor, _truncate),
        (_cursor, Path.unlink),
        (_facts, _scribble),
        (_seq, lambda path: path.write_bytes(b"1\n")),
        (_seq, lambda path: path.write_bytes(b"garbage")),
    ],
    ids=[
        "ledger-truncated",
        "ledger-scribbled",
        "ledger-lost",
        "index-state-truncated",
        "index-state-lost",
        "cursor-truncated",
        "cursor-lost",
        "facts-scribbled",
        "seq-behind",
        "seq-garbage",
    ],
)
def test_damaged_derived_state_is_rebuilt_and_nothing_lands_twice(
    ws: Workspace, tmp_path: Path, where, damage
) -> None:
    made, rest = half_landed(ws, tmp_path)
    path = where(open_store(ws.root), made.claimable()[0]["session"])
    assert path.exists(), f"{path} was never written"
    damage(path)
    write_all(ws, rest)

    done = ws.run("collect", "--once", "--json")

    assert done.returncode == 0, done.stderr
    assert [orjson.loads(line)["complete"] for line in done.stdout.splitlines()] == [True], (
        "stdout carries one JSON line and nothing else"
    )
    assert settle(ws, made) == []
    assert check_root(ws, made) == []
