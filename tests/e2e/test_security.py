"""Security: each guarantee of docs/security.md, proven on the real ``asz``.

- Landed data is private to the user whatever the umask: files 0600, directories 0700, the
  root included even when it existed before.
- Nothing is written outside the root, whatever the sources hold or name.
- A link planted in the root where asz writes is refused, not followed.
- No symbolic link is followed out of a source directory.
- The endpoints listen on loopback unless told otherwise.
- No body or transcript content reaches the logs, the metrics or the health documents.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import stat
import subprocess
from pathlib import Path

import orjson
import pytest
import zstandard
from support.harness import (
    Capture,
    Workspace,
    apply_write,
    asz_command,
    http_get,
    log_lines,
    plan_writes,
    running,
    service_port,
    wait_for,
)

from asz.config import DEFAULT_LISTEN
from asz.config_file import load_config
from asz.store import BodyNotFound, CodecError, open_store
from asz.store._framing import ZSTD_MAGIC

MARKER = b"Zq7xSECRETxY"
"""Written into every body and every transcript line; must never leave the landed files."""
OUTSIDE = b"Zq7xOUTSIDExY"
"""Held by files outside the sources that links inside them point to."""
UMASK_0 = ("sh", "-c", 'umask 0 && exec "$@"', "sh")
"""Runs a command with umask 0, the worst a user can have."""


@pytest.fixture
def ws(tmp_path: Path) -> Workspace:
    return Workspace(tmp_path)


def marked_capture(tmp_path: Path, seed: int = 1) -> Capture:
    """A capture with the marker in every body and every transcript line (a field of its
    own, first in each object, so what the collector reads from them is unchanged)."""
    made = Capture.make(tmp_path / "capture", seed=seed, sessions=2, turns=2)
    for path in made.dir.rglob("*.json*"):
        if path.name in {"expected.json", "index.jsonl"}:
            continue
        lines = path.read_bytes().splitlines(keepends=True)
        path.write_bytes(b"".join(b'{"note":"' + MARKER + b'",' + line[1:] for line in lines))
    return made


def write_capture(ws: Workspace, made: Capture) -> None:
    for write in plan_writes(made.dir, random.Random(1)):
        apply_write(ws.claude, write)


def tree(base: Path, leave_out: tuple[Path, ...]) -> dict[str, tuple[int, int, int]]:
    """Every path under ``base`` except those under ``leave_out``, with mode, size and time."""
    found = {}
    for directory, dirs, files in os.walk(base):
        dirs[:] = [name for name in dirs if Path(directory, name) not in leave_out]
        for name in [*dirs, *files]:
            info = os.lstat(os.path.join(directory, name))
            found[os.path.join(directory, name)] = (info.st_mode, info.st_size, info.st_mtime_ns)
    return found


def landed_plaintext(root: Path) -> bytes:
    """Every file under the root, decompressed where it is a landed file, joined."""
    parts = []
    for path in sorted(root.rglob("*")):
        if path.is_file() and not path.is_symlink():
            data = path.read_bytes()
            if data.startswith(ZSTD_MAGIC):
                data = zstandard.ZstdDecompressor().decompressobj().decompress(data)
            parts.append(data)
    return b"\n".join(parts)


# -- private whatever the umask ---------------------------------------------------------------


def test_landed_data_is_private_whatever_the_umask(ws: Workspace, tmp_path: Path) -> None:
    made = marked_capture(tmp_path)
    write_capture(ws, made)
    ws.root.mkdir(mode=0o777)
    ws.root.chmod(0o777)
    command = [*UMASK_0, *asz_command()]

    for args in (["collect", "--once"], ["restore", made.expected["sessions"][0]["id"]]):
        extra = ["--to", str(ws.root / "_restored")] if args[0] == "restore" else []
        done = subprocess.run(
            [*command, *args, *extra, "--root", str(ws.root)],
            env=ws.env(),
            capture_output=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr

    assert stat.S_IMODE(ws.root.stat().st_mode) == 0o700, "the root is made private too"
    seen = {"file": 0, "dir": 0}
    for path in ws.root.rglob("*"):
        mode = stat.S_IMODE(path.lstat().st_mode)
        kind = "dir" if path.is_dir() else "file"
        assert mode == (0o700 if kind == "dir" else 0o600), f"{path} is {oct(mode)}"
        seen[kind] += 1
    assert seen["file"] > 20 and seen["dir"] > 5


# -- nothing outside the root, no link followed ------------------------------------------------


def hostile_sources(ws: Workspace, outside: Path) -> None:
    """Sources that name places outside the root, or lead there through links."""
    session = "0b7e4c1a-5d2f-4e8b-9c3a-7f6e5d4c3b2a"
    outside.mkdir()
    (outside / "secret.json").write_bytes(b'{"text":"' + OUTSIDE + b'"}')
    (outside / f"{session}.jsonl").write_bytes(b'{"type":"user","t":"' + OUTSIDE + b'"}\n')
    ws.bodies.mkdir(parents=True, exist_ok=True)
    ws.projects.mkdir(parents=True, exist_ok=True)
    os.symlink(outside / "secret.json", ws.bodies / f"{session}.request.json")
    os.symlink(outside, ws.projects / "-linked-project")
    os.symlink(outside / f"{session}.jsonl", ws.projects / "-linked-file.jsonl")
    index = [{"session_id": name, "request_file": f"../../{name}"} for name in ("../x", "/tmp")]
    (ws.bodies / "index.jsonl").write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in index))
    for n, name in enumerate(("../x", "/etc", "..", "_state", "a/../../b")):
        user_id = orjson.dumps({"session_id": name}).decode()
        body = orjson.dumps({"metadata": {"user_id": user_id}, "model": "m"})
        (ws.bodies / f"{n:08d}-0000-4000-8000-000000000000.request.json").write_bytes(body)


@pytest.mark.slow
def test_nothing_is_written_outside_the_root_and_no_link_is_followed(
    ws: Workspace, tmp_path: Path
) -> None:
    made = marked_capture(tmp_path)
    write_capture(ws, made)
    hostile_sources(ws, tmp_path / "outside")
    ws.env()
    restored = tmp_path / "restored"
    before = tree(tmp_path, (ws.root, restored))

    assert ws.collect_once()[1]["bodies_landed"] > 0
    for session in made.expected["sessions"]:
        assert ws.run("restore", session["id"], "--to", str(restored)).returncode == 0
        assert ws.run("view", session["id"]).returncode == 0
    assert ws.verify()[0] == 0

    assert tree(tmp_path, (ws.root, restored)) == before
    assert sorted(path.name for path in ws.root.iterdir()) == sorted(
        ["_lock", "_state", *(session["id"] for session in made.expected["sessions"])]
    )
    assert OUTSIDE not in landed_plaintext(ws.root), "a linked file's content landed"


# -- a shared root -------------------------------------------------------------------------------


@pytest.mark.parametrize("planted", ["session link", "state link", "foreign session"])
def test_a_link_or_a_stranger_s_directory_in_the_root_is_refused(
    ws: Workspace, tmp_path: Path, planted: str
) -> None:
    """Whoever can write into a root could send its landing elsewhere with a link named like
    a session; asz refuses such a root instead of writing through it."""
    made = marked_capture(tmp_path)
    write_capture(ws, made)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    ws.root.mkdir()
    session = made.expected["sessions"][0]["id"]
    if planted == "session link":
        os.symlink(elsewhere, ws.root / session)
    elif planted == "state link":
        os.symlink(elsewhere, ws.root / "_state")
    else:
        (ws.root / session).mkdir()
        os.chown(ws.root / session, 65534, 65534)

    code, _counts = ws.collect_once()
    done = ws.run("collect", "--once")

    assert code == 1 and done.returncode == 1
    assert str(ws.root / ("_state" if planted == "state link" else session)) in done.stderr.decode()
    assert b"Traceback" not in done.stderr
    target = ws.root / session if planted == "foreign session" else elsewhere
    assert list(target.iterdir()) == [], "nothing was written through it"


def test_the_service_refuses_a_stranger_s_root_in_one_clear_line(
    ws: Workspace, tmp_path: Path
) -> None:
    ws.root.mkdir()
    os.chown(ws.root, 65534, 65534)
    done = subprocess.run(
        [*asz_command(), "collect", "--root", str(ws.root)],
        env=ws.env(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    lines = [orjson.loads(line) for line in done.stdout.splitlines()]
    [refused] = [line for line in lines if line["event"] == "root_refused"]
    assert refused["level"] == "error" and "belongs to another user" in refused["why"]
    assert done.returncode == 1
    assert not [line for line in lines if line["event"] == "crashed"]
    assert b"Traceback" not in done.stdout + done.stderr
    assert list(ws.root.iterdir()) == []


# -- the endpoints -------------------------------------------------------------------------------


def test_the_endpoints_listen_on_loopback_unless_told_otherwise(
    ws: Workspace, tmp_path: Path
) -> None:
    assert load_config(env={"HOME": str(tmp_path)}).service.listen == DEFAULT_LISTEN
    assert DEFAULT_LISTEN.rpartition(":")[0] == "127.0.0.1"
    log = tmp_path / "service.log"
    process = subprocess.Popen(
        [*asz_command(), "collect", "--root", str(ws.root)],
        env=ws.env(),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
    )
    with running(process):

        def said() -> bool:
            return any(
                line.get("event") in ("listening", "cannot_listen") for line in log_lines(log)
            )

        wait_for(said, what="the service to listen or say it cannot")
    [line] = [line for line in log_lines(log) if line["event"] in ("listening", "cannot_listen")]
    assert line.get("host") == "127.0.0.1" or line.get("listen") == DEFAULT_LISTEN, line

    told = tmp_path / "told.log"
    with running(
        subprocess.Popen(
            [*asz_command(), "collect", "--root", str(ws.root), "--listen", "0.0.0.0:0"],
            env=ws.env(),
            stdout=told.open("wb"),
            stderr=subprocess.STDOUT,
        )
    ):
        port = service_port(told)
        assert [line["host"] for line in log_lines(told) if line["event"] == "listening"] == [
            "0.0.0.0"
        ]
        assert http_get(port, "/metrics")[0] == 200
        assert http_get(port, "/anything-else")[0] == 404


# -- no content in logs or metrics ---------------------------------------------------------------


@pytest.mark.slow
def test_no_body_or_transcript_content_reaches_logs_metrics_or_health(
    ws: Workspace, tmp_path: Path
) -> None:
    made = marked_capture(tmp_path)
    writes = plan_writes(made.dir, random.Random(2))
    half = len(writes) // 2
    for write in writes[:half]:
        apply_write(ws.claude, write)
    ws.bodies.mkdir(parents=True, exist_ok=True)
    odd = {
        "unreadable.request.json": b'{"text":"' + MARKER,
        "7e57e57e-0000-4000-8000-000000000001.request.json": orjson.dumps(
            {"metadata": {"user_id": orjson.dumps({"session_id": MARKER.decode()}).decode()}}
        ),
    }
    for name, data in odd.items():
        (ws.bodies / name).write_bytes(data)
        os.utime(ws.bodies / name, (1, 1))
    with (ws.bodies / "index.jsonl").open("ab") as index:
        index.write(b'{"session_id":"' + MARKER + b'","request_file":"' + MARKER + b'"}\n')
    log = tmp_path / "service.log"
    once = ws.run("collect", "--once", "--json")

    with running(ws.start_service(log)) as service:
        port = service_port(log)
        for write in writes[half:]:
            apply_write(ws.claude, write)
        landed = made.claimable()[-1]
        changed = ws.claude / landed["file"]

        def caught_up() -> bool:
            # Whichever pass landed it (the first scan may already see the late writes).
            try:
                open_store(ws.root).open_session(landed["session"]).body(landed["id"])
            except (BodyNotFound, CodecError):
                return False
            return True

        wait_for(caught_up, what="the service to land the rest")
        changed.write_bytes(changed.read_bytes().replace(MARKER, MARKER[::-1]))
        wait_for(
            lambda: any(line.get("event") == "conflict" for line in log_lines(log)),
            what="the changed body to be reported",
        )
        answers = [http_get(port, path)[1] for path in ("/metrics", "/healthz", "/readyz")]
        service.send_signal(signal.SIGTERM)
        assert service.wait(timeout=30) == 0
    verify = ws.run("verify")

    assert MARKER in landed_plaintext(ws.root), "the marker did land, so it could leak"
    said = [log.read_bytes(), once.stdout, once.stderr, verify.stdout, verify.stderr, *answers]
    assert [MARKER in text for text in said] == [False] * len(said)
    assert [MARKER[::-1] in text for text in said] == [False] * len(said)


def test_marked_capture_has_the_marker_everywhere(tmp_path: Path) -> None:
    made = marked_capture(tmp_path)
    for body in made.expected["bodies"]:
        assert MARKER in (made.dir / body["file"]).read_bytes(), body["file"]
    shutil.rmtree(made.dir)
