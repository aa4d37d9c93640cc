"""What repacking saves: a developer-day of small landed files, before and after, locally and
in the archive; how fast a repack runs; how landed transcripts and bodies compare with zstd.

A capture of ``--sessions`` sessions of ``--turns`` turns (synthetic, or replayed from real
transcripts with ``--from-transcripts``) is
written the way Claude Code writes it, one call at a time, with a collector pass after each
call: what the service does over a live session at one call every 15 s, compressed in time
(its batch window of 10 s lands each call apart). Then:

1. landed files and bytes, and the archive it makes: objects, PUTs of the push, and the
   requests of a cold ``asz sessions`` and ``asz cache --json`` over the bucket;
2. a repack of every session, timed: MB/s of the source bytes the files stand for, in wall
   time and in CPU time (which the machine's load does not hide); with ``--keep`` the root
   as it was before is kept beside it (``root-before``), to profile a repack over;
3. the same figures after the repack (a fresh prefix: what a first push of repacked
   sessions sends);
4. landed transcripts and bodies as a share of their source bytes, before and after, beside
   ``zstd -19 --long`` over the same bytes (each transcript; all bodies as one stream, and
   each session's bodies as one stream, which is what a session landed alone can reach;
   python zstandard at level 19 with long-distance matching when the binary is missing);
5. the real Claude Code samples (``ASZ_SAMPLES``) landed line by line and repacked: landed
   transcripts as a share of their bytes, beside ``zstd -19 --long`` over each file, over
   each session's files as one stream and over all of them as one stream; and their real
   request bodies landed one a pass and repacked, beside ``zstd -19 --long`` over them;
6. the service's CPU while idle over the repacked root, repacks enabled (share of a core).

Goals: 20x fewer files; transcripts <= 8% of the source on real samples, bodies <= 1.3x
zstd; repack >= 50 MB/s of source; idle < 1% of a core.

    .venv/bin/python bench/repack.py [--sessions 6] [--turns 30] [--from-transcripts DIR]
        [--idle-seconds 30] [--keep DIR] [--one-pass]

It needs moto, which the test extras install (``pip install '.[test]'``).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import zstandard

from asz.commands.collect import collect_once
from asz.config import Config, SessionFilter
from asz.store import budgets_of, landing_lock, open_store, repack_session
from asz.synth import SynthOptions, synthesize

TESTS = Path(__file__).resolve().parents[1] / "tests"
sys.path.insert(0, str(TESTS))
SAMPLES = Path(os.environ.get("ASZ_SAMPLES") or "/work/shared/claude-code-samples")


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The collector passes' counts kept out of the bench's figures."""
    with open(os.devnull, "w") as devnull, contextlib.redirect_stdout(devnull):
        yield


def land_live(workdir: Path, options: SynthOptions, one_pass: bool) -> tuple[Config, Path, int]:
    """The capture written call by call, a pass after each (or, ``one_pass``, all of it and
    then one pass: long sessions, whose repacked bodies are what is measured, land in minutes
    rather than hours); the config, the capture, passes."""
    from support.harness import apply_write, plan_writes

    made = workdir / "capture"
    synthesize(made, options)
    claude = workdir / "claude"
    config = Config(
        root=workdir / "root", claude_dirs=(claude,), sessions=SessionFilter(exclude=())
    )
    passes = 0
    with _quiet():
        for write in plan_writes(made, random.Random(1)):
            apply_write(claude, write)
            if not one_pass and write.whole and write.path.endswith(".response.json"):
                passes += 1
                collect_once(config, as_json=True)
        complete = collect_once(config, as_json=True) == 0
    if not complete:
        raise SystemExit("the last collector pass was not complete")
    return config, claude, passes


def real_transcripts(workdir: Path, samples: Path) -> dict[str, int]:
    """The real samples written line by line into a projects directory, a pass every 20
    writes, then repacked: their source bytes, landed transcript bytes before and after, the
    repack's CPU seconds, and ``zstd -19 --long`` over each source file, over each session's
    files as one stream, and over all of them as one stream."""
    from support.harness import apply_write, plan_writes

    made = workdir / "samples"
    for version in sorted(p for p in samples.iterdir() if p.is_dir()):
        shutil.copytree(version, made / "projects", dirs_exist_ok=True)
    claude = workdir / "samples-claude"
    config = Config(
        root=workdir / "samples-root", claude_dirs=(claude,), sessions=SessionFilter(exclude=())
    )
    with _quiet():
        for n, write in enumerate(plan_writes(made, random.Random(2))):
            apply_write(claude, write)
            if n % 20 == 19:
                collect_once(config, as_json=True)
        collect_once(config, as_json=True)
    before = landed(config.root).get("transcript_bytes", 0)
    store = open_store(config.root)
    cpu = time.process_time()
    for session in store.sessions():
        repack_session(store, session, budgets_of(config))
    cpu = time.process_time() - cpu
    after = landed(config.root).get("transcript_bytes", 0)
    files = [p.read_bytes() for p in sorted((made / "projects").rglob("*.jsonl"))]
    by_session = [
        b"".join((made / "projects" / path).read_bytes() for path in session.transcript_paths())
        for session in map(store.open_session, store.sessions())
    ]
    return {
        "source": sum(map(len, files)),
        "before": before,
        "after": after,
        "cpu_ms": round(cpu * 1000),
        "zstd_each": sum(zstd_size(data) for data in files if data),
        "zstd_session": sum(zstd_size(data) for data in by_session if data),
        "zstd_all": zstd_size(b"".join(files)),
    }


def real_bodies(workdir: Path, requests: Path) -> dict[str, int]:
    """The real samples' Claude Code request bodies (the requests of the proxy logs under
    ``requests`` whose ``metadata.user_id`` names a session) written as Claude Code writes
    them, landed one a pass and repacked: their bytes, landed body bytes before and after,
    and ``zstd -19 --long`` over them as one stream and over each session's as one stream."""
    claude = workdir / "real-bodies-claude"
    directory = claude / "asz" / "provider-bodies"
    directory.mkdir(parents=True)
    config = Config(
        root=workdir / "real-bodies-root",
        claude_dirs=(claude,),
        sessions=SessionFilter(exclude=()),
    )
    bodies: list[bytes] = []
    by_session: dict[str, list[bytes]] = {}
    for log in sorted(requests.rglob("*.jsonl")):
        for line in log.read_bytes().splitlines():
            body = json.loads(line)["request"].get("body")
            user = body.get("metadata", {}).get("user_id", "") if isinstance(body, dict) else ""
            if isinstance(user, str) and '"session_id"' in user:
                bodies.append(json.dumps(body, ensure_ascii=False).encode())
                by_session.setdefault(json.loads(user)["session_id"], []).append(bodies[-1])
    for session in by_session:  # a session lands once its transcript says whose it is
        transcript = claude / "projects" / "-bench-real" / f"{session}.jsonl"
        transcript.parent.mkdir(parents=True, exist_ok=True)
        line = {"type": "user", "sessionId": session, "cwd": "/bench/real"}
        transcript.write_bytes(json.dumps(line).encode() + b"\n")
    with _quiet():
        for n, body in enumerate(bodies):
            path = directory / f"00000000-0000-4000-8000-{n:012d}.request.json"
            path.write_bytes(body)
            os.utime(path, ns=(n * 10**9, n * 10**9))
            collect_once(config, as_json=True)
    before = landed(config.root).get("provider_body_bytes", 0)
    store = open_store(config.root)
    for session in store.sessions():
        repack_session(store, session, budgets_of(config))
    return {
        "bodies": len(bodies),
        "source": sum(map(len, bodies)),
        "before": before,
        "after": landed(config.root).get("provider_body_bytes", 0),
        "sessions": len(by_session),
        "zstd": zstd_size(b"".join(bodies)),
        "zstd_session": sum(zstd_size(b"".join(each)) for each in by_session.values()),
    }


def landed(root: Path) -> dict[str, int]:
    """Landed files and bytes, by kind."""
    found: dict[str, int] = {}
    for path in root.rglob("*.asz"):
        kind = path.name.rsplit("-", 1)[0]
        found[f"{kind}_files"] = found.get(f"{kind}_files", 0) + 1
        found[f"{kind}_bytes"] = found.get(f"{kind}_bytes", 0) + path.stat().st_size
    found["files"] = sum(v for k, v in found.items() if k.endswith("_files"))
    found["bytes"] = sum(v for k, v in found.items() if k.endswith("_bytes"))
    return found


def asz(workdir: Path, *args: str, cache: str = "cache") -> Any:
    from support.s3server import CREDENTIALS

    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "XDG_CACHE_HOME": str(workdir / cache),
        **CREDENTIALS,
    }
    exe = Path(sys.executable).with_name("asz")
    done = subprocess.run([str(exe), *args], env=env, capture_output=True, check=False)
    if done.returncode not in (0, 1):
        raise SystemExit(f"asz {' '.join(args)} failed: {done.stderr.decode()}")
    try:
        return json.loads(done.stdout)
    except ValueError:
        return done.stdout.decode()


def archive_figures(workdir: Path, server: Any, root: Path, prefix: str) -> dict[str, int]:
    """A first push of the root into ``prefix``, and cold reads of it: objects and requests."""
    from support.s3server import BUCKET, archive_config, proxied

    with proxied(server) as proxy:
        config = archive_config(workdir / f"{prefix}.toml", proxy.endpoint, prefix)
        pushed = asz(workdir, "push", "--json", "--root", str(root), "--config", str(config))
        figures = {
            "objects": len(server.objects(prefix + "/")),
            "push_puts": proxy.requests("PUT"),
            "push_requests": len(proxy.seen),
            "pushed_bytes": pushed["bytes"],
        }
        for name, args in (("sessions", ("sessions",)), ("cache", ("cache", "--json"))):
            before = len(proxy.seen)
            url = f"s3://{BUCKET}/{prefix}"
            asz(
                workdir,
                *args,
                "--root",
                url,
                "--config",
                str(config),
                cache=f"cache-{prefix}-{name}",
            )
            figures[f"cold_{name}_requests"] = len(proxy.seen) - before
    return figures


def zstd_size(data: bytes) -> int:
    """``zstd -19 --long`` of ``data``; python zstandard (19, long-distance matching) without
    the binary."""
    binary = shutil.which("zstd")
    if binary:
        done = subprocess.run(
            [binary, "-19", "--long", "-q", "-c"], input=data, capture_output=True, check=True
        )
        return len(done.stdout)
    params = zstandard.ZstdCompressionParameters.from_level(
        19, source_size=len(data), enable_ldm=True, window_log=27
    )
    return len(zstandard.ZstdCompressor(compression_params=params).compress(data))


def sources(claude: Path, capture: Path) -> tuple[list[bytes], bytes, list[bytes]]:
    """Every transcript's bytes, every body's bytes as one stream (in name order), and each
    session's bodies as one stream (its requests, then its responses, in name order): what a
    session's landed bodies can be compared with, as a session lands and is repacked alone."""
    transcripts = [p.read_bytes() for p in sorted((claude / "projects").rglob("*.jsonl"))]
    bodies = b"".join(p.read_bytes() for p in sorted(claude.rglob("*.request.json")))
    bodies += b"".join(p.read_bytes() for p in sorted(claude.rglob("*.response.json")))
    owners: dict[str, list[str]] = {}
    for body in json.loads((capture / "expected.json").read_bytes())["bodies"]:
        if (claude / body["file"]).exists():
            owners.setdefault(str(body["session"]), []).append(body["file"])
    by_session = [
        b"".join((claude / name).read_bytes() for name in sorted(names, key=_requests_first))
        for names in owners.values()
    ]
    return transcripts, bodies, by_session


def _requests_first(name: str) -> tuple[bool, str]:
    return name.endswith(".response.json"), name


def idle_cpu(workdir: Path, config: Config, seconds: float) -> float:
    """The service's CPU over ``seconds`` of idleness over the root (share of one core)."""
    toml = workdir / "idle.toml"
    toml.write_text("[service]\nrepack_after = 1\nrescan_interval = 5\n")
    exe = Path(sys.executable).with_name("asz")
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(workdir / "home"),
        "CLAUDE_CONFIG_DIR": str(config.claude_dirs[0]),
    }
    args = [str(exe), "collect", "--root", str(config.root), "--config", str(toml)]
    args += ["--listen", "127.0.0.1:0"]
    with open(workdir / "service.log", "wb") as log:
        service = subprocess.Popen(args, env=env, stdout=log, stderr=subprocess.STDOUT)
    try:
        time.sleep(10)  # the first scan, and a repack of anything not repacked yet
        tick = os.sysconf("SC_CLK_TCK")
        before = _cpu(service.pid)
        time.sleep(seconds)
        return (_cpu(service.pid) - before) / tick / seconds
    finally:
        service.terminate()
        service.wait(timeout=30)


def _cpu(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--from-transcripts", type=Path)
    parser.add_argument("--idle-seconds", type=float, default=30.0)
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--one-pass", action="store_true")
    args = parser.parse_args()
    samples = SAMPLES / "transcripts"
    replayed = args.from_transcripts
    workdir = Path(tempfile.mkdtemp(prefix="bench-repack-", dir=args.keep))
    options = SynthOptions(
        seed=7, sessions=args.sessions, turns=args.turns, index=True, from_transcripts=replayed
    )
    print(f"capture: {args.sessions} sessions x {args.turns} turns; transcripts from {replayed}")
    started = time.perf_counter()
    config, claude, passes = land_live(workdir, options, args.one_pass)
    how = "one a call" if not args.one_pass else "the capture written whole first"
    print(f"landed in {passes or 1} passes, {how} ({time.perf_counter() - started:.1f} s)")
    before = landed(config.root)

    from support.s3server import S3Server

    server = S3Server()
    try:
        archive_before = archive_figures(workdir, server, config.root, "before")
        if args.keep is not None:  # what to profile a repack over
            shutil.copytree(config.root, workdir / "root-before")
        store = open_store(config.root, compression=config.compression)
        started, cpu = time.perf_counter(), time.process_time()
        source = 0
        for session in store.sessions():
            outcome = repack_session(
                store, session, budgets_of(config), landing=lambda: landing_lock(config.root)
            )
            source += outcome.source_bytes
            if outcome.state == "damaged":
                raise SystemExit(f"{session}: {outcome.why}")
        seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
        after = landed(config.root)
        archive_after = archive_figures(workdir, server, config.root, "after")
    finally:
        server.stop()
    verified = asz(workdir, "verify", "--json", "--root", str(config.root))
    transcripts, bodies, session_bodies = sources(claude, workdir / "capture")
    transcript_bytes = sum(map(len, transcripts))
    zstd_transcripts = sum(zstd_size(data) for data in transcripts)
    zstd_bodies = zstd_size(bodies)
    zstd_session_bodies = sum(zstd_size(data) for data in session_bodies)

    def row(name: str, was: float, now: float, unit: str = "") -> None:
        ratio = was / now if now else float("inf")
        print(f"  {name:<34} {was:>14,.0f}{unit} {now:>14,.0f}{unit}   {ratio:6.1f}x fewer")

    print(f"\n  {'':<34} {'before':>14} {'after':>14}")
    row("landed files", before["files"], after["files"])
    row("landed bytes", before["bytes"], after["bytes"])
    for kind in ("provider_body", "transcript", "provider_index"):
        row(f"  {kind} files", before.get(f"{kind}_files", 0), after.get(f"{kind}_files", 0))
    row("archive objects", archive_before["objects"], archive_after["objects"])
    row("archive PUTs of a first push", archive_before["push_puts"], archive_after["push_puts"])
    for name in ("sessions", "cache"):
        key = f"cold_{name}_requests"
        row(f"requests of a cold asz {name}", archive_before[key], archive_after[key])
    print(
        f"\n  repack: {source / 1e6:.1f} MB of source in {seconds:.2f} s = "
        f"{source / 1e6 / seconds:.1f} MB/s (goal >= 50); CPU {cpu:.2f} s = "
        f"{source / 1e6 / cpu:.1f} MB/s of CPU time (load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores)"
    )
    print(f"  verify after: {len(verified['problems'])} problems")
    share = 100 / transcript_bytes
    print(
        f"  transcripts: {transcript_bytes / 1e6:.2f} MB; landed "
        f"{before.get('transcript_bytes', 0) * share:.1f}% before, "
        f"{after.get('transcript_bytes', 0) * share:.1f}% after repack; "
        f"zstd -19 --long {zstd_transcripts * share:.1f}% (goal <= 8%)"
    )
    landed_bodies = after["provider_body_bytes"]
    print(
        f"  bodies: {len(bodies) / 1e6:.2f} MB; landed {before['provider_body_bytes']:,} before, "
        f"{landed_bodies:,} after; zstd -19 --long over all as one stream {zstd_bodies:,}: "
        f"{landed_bodies / zstd_bodies:.2f}x, over each session as one stream "
        f"{zstd_session_bodies:,}: {landed_bodies / zstd_session_bodies:.2f}x (goal <= 1.3x)"
    )
    if samples.is_dir():
        real = real_transcripts(workdir, samples)
        share = 100 / real["source"]
        print(
            f"  real transcripts ({samples}): {real['source'] / 1e6:.2f} MB; landed "
            f"{real['before'] * share:.1f}% before, {real['after'] * share:.1f}% after repack "
            f"({real['cpu_ms']} ms CPU) (goal <= 8%); zstd -19 --long over each file "
            f"{real['zstd_each'] * share:.1f}%, each session's files as one stream "
            f"{real['zstd_session'] * share:.1f}%, all as one stream "
            f"{real['zstd_all'] * share:.1f}%"
        )
    if (SAMPLES / "requests").is_dir():
        bodies_real = real_bodies(workdir, SAMPLES / "requests")
        print(
            f"  real request bodies ({bodies_real['bodies']} in {bodies_real['sessions']} "
            f"sessions, {bodies_real['source'] / 1e6:.2f} MB): landed "
            f"{bodies_real['before']:,} before, {bodies_real['after']:,} after repack; "
            f"zstd -19 --long over all as one stream {bodies_real['zstd']:,}: "
            f"{bodies_real['after'] / bodies_real['zstd']:.2f}x, over each session as one "
            f"stream {bodies_real['zstd_session']:,}: "
            f"{bodies_real['after'] / bodies_real['zstd_session']:.2f}x (goal <= 1.3x)"
        )
    cpu = idle_cpu(workdir, config, args.idle_seconds)
    print(f"  service idle over the repacked root: {cpu * 100:.2f}% of a core (goal < 1%)")
    if args.keep is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
