"""How fast a push makes the redacted counterparts of a root, and in how much memory.

Builds a synthetic backlog as bench/collect.py does, lands it with one real ``asz collect
--once``, then, in a fresh process, makes the redacted counterpart of every session
(``asz.archive.redacted``: bodies rebuilt, redacted and cut again, transcript and index
lines redacted, every file written, read back and published) as a push does before it
uploads: every session at once (``RedactedRoot.make_all``), published a batch of files at a
time, one flush each; then makes them again over the counterparts already made, which is
what a push that resumes pays (it reads them, never redacts again). The bucket is not
involved: the upload is bench/archive.py's. Wall clock and CPU time are both printed: on a
shared, loaded machine the first says what a push waits, the second what it costs.

Targets, from the redactor's (bench/redact.py): >= 50 MB/s of source bodies, peak RSS < 200
MB; the ratio to each is printed.

    .venv/bin/python bench/redact_push.py [--megabytes 100] [--secrets] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect import build_backlog

from asz.archive.redacted import RedactedRoot
from asz.redact import Policy, Redactor
from asz.store import open_store
from asz.synth import SynthOptions

TARGETS = {"mb_s": 50.0, "peak_rss_mb": 200.0}


def measure(root: Path) -> dict:
    """Runs in its own process: every session's counterpart made, then made again."""
    store = open_store(root)
    redactor = Redactor(Policy(), b"bench-key-bench-key-bench-key")
    redacted = RedactedRoot(
        root / "_state" / "redacted" / redactor.policy.fingerprint, store, redactor
    )
    sessions = store.sessions()
    source = sum(m.size for s in sessions for m in store.open_session(s).manifests().values())
    landed = sum(store.open_session(s).landed_bytes() for s in sessions)
    timings = []
    cpu = []
    made = markers = 0
    for _ in range(2):
        started, started_cpu = time.perf_counter(), time.process_time()
        # As a push does: every session's files at once, published a batch at a time.
        wanted = [(session, store.open_session(session).landed()[-1]) for session in sessions]
        for result in redacted.make_all(wanted).values():
            assert result.failed is None, result.failed
            made += result.made
            markers += sum(result.rules.values())
        timings.append(time.perf_counter() - started)
        cpu.append(time.process_time() - started_cpu)
    return {
        "sessions": len(sessions),
        "source_mb": source / 1e6,
        "landed_mb": landed / 1e6,
        "made": made,
        "markers": markers,
        "first_s": timings[0],
        "again_s": timings[1],
        "first_cpu_s": cpu[0],
        "mb_s": source / 1e6 / timings[0],
        "cpu_mb_s": source / 1e6 / cpu[0],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def report(figures: dict) -> None:
    mb_s, rss = figures["mb_s"], figures["peak_rss_mb"]
    print(
        f"root         {figures['sessions']:>10,} sessions  {figures['source_mb']:,.0f} MB of "
        f"bodies, {figures['landed_mb']:,.1f} MB landed"
    )
    print(
        f"made         {figures['first_s']:10.1f} s   {mb_s:8.1f} MB/s of source bodies"
        f"  (target >= {TARGETS['mb_s']:.0f}: {mb_s / TARGETS['mb_s']:.2f}x);"
        f" {figures['made']:,} files, {figures['markers']:,} markers"
    )
    print(
        f"  CPU time   {figures['first_cpu_s']:10.1f} s   {figures['cpu_mb_s']:8.1f} MB/s of "
        "source bodies per CPU second (what a loaded machine's wall clock hides)"
    )
    print(
        f"made again   {figures['again_s']:10.1f} s   (nothing redacted: "
        f"{figures['again_s'] / figures['first_s']:.2f} of the first)"
    )
    print(
        f"peak RSS     {rss:10.1f} MB  (target < {TARGETS['peak_rss_mb']:.0f}: "
        f"{rss / TARGETS['peak_rss_mb']:.2f} of it)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=100.0)
    parser.add_argument("--sessions", type=int, default=4, help="sessions per seed")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--secrets", action="store_true", help="synth --secrets captures")
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp dir)")
    parser.add_argument("--measure", type=Path, metavar="ROOT", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        sys.stdout.buffer.write(orjson.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory(prefix="asz-bench-redact-push-") as tmp:
        work = args.workdir or Path(tmp)
        claude = work / "claude"
        template = SynthOptions(sessions=args.sessions, turns=args.turns, secrets=args.secrets)
        build_backlog(claude, work, int(args.megabytes * 1e6), template)
        root = work / "root"
        asz = Path(sys.executable).with_name("asz")
        subprocess.run(
            [str(asz), "collect", "--once", "--root", str(root)],
            env={"CLAUDE_CONFIG_DIR": str(claude), "HOME": str(work), "PATH": "/usr/bin:/bin"},
            check=True,
            capture_output=True,
        )
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(root)], stdout=subprocess.PIPE, check=True
        )
        report(orjson.loads(child.stdout))


if __name__ == "__main__":
    main()
