"""The long crash run: thousands of collectors killed while a capture is being written.

Runs rounds until ``--kills`` collectors were killed with SIGKILL. Each round synthesises a
fresh capture (its own seed), writes it into a fresh Claude Code directory the way Claude Code
does, and kills the collector at random moments, restarting it each time: the service in even
rounds, ``collect --once`` loops in odd ones, with a share of the collectors started at a named
crash point; with ``--repack`` an ``asz repack`` of every session runs beside each collector
and is killed with it (or stops at a generation crash point). After each round a clean pass
runs and the root is checked (nothing lost, nothing landed twice, verify passes, the ledger and
cursors agree with the landed files).

Prints one JSON line per round and a summary line; exits 1 when any round found a problem.

    .venv/bin/python bench/crash.py [--kills 1000] [--per-round 100] [--seed 1] [--workdir DIR]
        [--repack]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

from support.harness import Capture, CrashPlan, Workspace, crash_run


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kills", type=int, default=1000)
    parser.add_argument("--per-round", type=int, default=100)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sessions", type=int, default=3)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--workdir", type=Path, help="keep each round's directories here")
    parser.add_argument(
        "--repack", action="store_true", help="an asz repack beside each collector, killed too"
    )
    args = parser.parse_args()

    started = time.monotonic()
    totals: Counter[str] = Counter()
    points: Counter[str] = Counter()
    problems: list[str] = []
    round_no = 0
    while totals["kills"] < args.kills:
        seed = args.seed + round_no
        base = Path(tempfile.mkdtemp(prefix=f"crash-{seed}-", dir=args.workdir))
        service = round_no % 2 == 0
        plan = CrashPlan(
            kills=min(args.per_round, args.kills - totals["kills"]),
            service=service,
            seed=seed,
            life=(0.05, 1.2) if service else (0.0, 0.45),
            repack=args.repack,
        )
        made = Capture.make(base / "capture", seed=seed, sessions=args.sessions, turns=args.turns)
        report = crash_run(Workspace(base), made, plan, base / "collector.log")
        line = {"round": round_no, "seed": seed, "service": service, **report.as_dict()}
        if report.problems:
            line["kept"] = str(base)
        print(orjson.dumps(line).decode(), flush=True)
        for key in ("kills", "repack_kills", "repacks", "runs", "bodies", "lines", "index_lines"):
            totals[key] += getattr(report, key)
        points.update(report.points)
        problems += [f"round {round_no} (seed {seed}): {problem}" for problem in report.problems]
        if not report.problems and args.workdir is None:
            shutil.rmtree(base)
        round_no += 1
    summary = {
        "rounds": round_no,
        **totals,
        "crash_points": dict(sorted(points.items())),
        "problems": problems,
        "minutes": round((time.monotonic() - started) / 60, 1),
    }
    print(orjson.dumps({"summary": summary}).decode(), flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
