"""How fast the provider adapter collects a backlog, in how much memory, and how fast it idles.

Builds a backlog of synthetic captures (one synthesised tree per seed, merged into one Claude
Code directory, each seed starting an hour after the last) until the bodies reach
``--gigabytes``, then, in a fresh process so that building it does not count:

1. lands the transcripts (not timed: that is the other adapter), then times a first provider
   pass over the whole backlog: source MB/s, and the process's peak RSS;
2. times a second pass with nothing new;
3. pads the directory with small request bodies up to ``--files`` files, lands them, and times
   an idle pass over all of them: seconds per 100,000 files.

Targets: first pass >= 80 MB/s, peak RSS < 300 MB whatever the backlog, idle < 2 s per
100,000 files.

    .venv/bin/python bench/collect.py [--gigabytes 1] [--files 100000] [--index] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import orjson

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.claude_code_provider import collect_bodies
from asz.adapters.provider_index import INDEX_NAME
from asz.adapters.provider_source import list_sources
from asz.adapters.session_filter import SessionJudge
from asz.config import Config
from asz.store import open_store
from asz.store._bodies import BodyLander
from asz.store._root import Root, collector_lock
from asz.synth import SynthOptions, synthesize
from asz.tally import Tally

TARGETS = {"first_mb_s": 80.0, "peak_rss_mb": 300.0, "idle_s_per_100k": 2.0}


def build_backlog(claude: Path, work: Path, target_bytes: int, template: SynthOptions) -> int:
    """Synthesises captures like ``template`` with successive seeds into ``claude`` until the
    bodies reach ``target_bytes``; returns the bytes written."""
    bodies = claude / "asz" / "provider-bodies"
    bodies.mkdir(parents=True, exist_ok=True)
    written, seed = 0, 1
    while written < target_bytes:
        capture = work / f"capture-{seed}"
        options = replace(template, seed=seed, start=template.start + timedelta(hours=seed))
        synthesize(capture, options)
        written += _merge(capture / "asz" / "provider-bodies", bodies, append=INDEX_NAME)
        _merge(capture / "projects", claude / "projects")
        shutil.rmtree(capture)
        seed += 1
        print(f"  seed {seed - 1}: {written / 1e6:,.0f} MB of bodies", file=sys.stderr)
    return written


def _merge(source: Path, target: Path, append: str = "") -> int:
    """Moves every file under ``source`` to the same place under ``target``; refuses to
    overwrite (two seeds must never name the same file), except that a file named ``append``
    is appended to. Returns the bytes moved."""
    moved = 0
    for directory, _dirs, files in os.walk(source):
        into = target / Path(directory).relative_to(source)
        into.mkdir(parents=True, exist_ok=True)
        for name in files:
            destination = into / name
            if name == append:
                with destination.open("ab") as out:
                    out.write((Path(directory) / name).read_bytes())
                continue
            if destination.exists():
                sys.exit(f"two captures both wrote {destination}")
            moved += (Path(directory) / name).stat().st_size
            os.rename(Path(directory) / name, destination)
    return moved


def pad(bodies: Path, files: int) -> int:
    """Adds small request bodies (each naming a session of the backlog) until the directory
    holds ``files`` body files; returns how many were added."""
    listing = list_sources(bodies).files
    sessions = sorted(
        {
            orjson.loads(orjson.loads((bodies / source.name).read_bytes())["metadata"]["user_id"])[
                "session_id"
            ]
            for source in listing[:200]
            if source.role == "request"
        }
    )
    missing = max(0, files - len(listing))
    stamp = listing[0].mtime_ns if listing else time.time_ns()
    for number in range(missing):
        session = sessions[number % len(sessions)]
        user_id = orjson.dumps({"session_id": session}).decode()
        body = orjson.dumps(
            {
                "model": "claude-bench",
                "messages": [{"role": "user", "content": f"padding {number}"}],
                "metadata": {"user_id": user_id},
            }
        )
        path = bodies / f"pad-{number:08d}.request.json"
        path.write_bytes(body)
        os.utime(path, ns=(stamp, stamp))
    return missing


def timed_pass(config: Config, root: Root, lander: BodyLander) -> tuple[float, Tally]:
    """A pass as the runner makes it; only the provider adapter is timed."""
    with collector_lock(root):
        collect_transcripts(config, lander.store)
        started = time.perf_counter()
        result = collect_bodies(config, root, lander, SessionJudge(config, lander.store))
        return time.perf_counter() - started, result


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(claude: Path, root_dir: Path, files: int) -> dict:
    """Runs in its own process: the figures of the three passes."""
    config = Config(root=root_dir, claude_dirs=(claude,))
    root = Root(root_dir)
    lander = BodyLander(open_store(root_dir, compression=config.compression))
    listing = list_sources(config.bodies_dir).files
    source_bytes = sum(source.size for source in listing)
    first_s, first = timed_pass(config, root, lander)
    first_rss = peak_rss_mb()
    second_s, second = timed_pass(config, root, lander)
    added = pad(config.bodies_dir, files)
    padded_s, padded = timed_pass(config, root, lander)
    idle_s, idle = timed_pass(config, root, lander)
    total_files = len(list_sources(config.bodies_dir).files)
    return {
        "backlog_files": len(listing),
        "source_mb": source_bytes / 1e6,
        "first_s": first_s,
        "first_mb_s": source_bytes / 1e6 / first_s,
        "first": _counts(first),
        "landed_pct": 100 * first.landed_bytes / max(first.source_bytes, 1),
        "first_peak_rss_mb": first_rss,
        "second_s": second_s,
        "second": _counts(second),
        "second_s_per_100k": second_s / max(len(listing), 1) * 100_000,
        "padding_files": added,
        "padding_s": padded_s,
        "padding": _counts(padded),
        "idle_files": total_files,
        "idle_s": idle_s,
        "idle_s_per_100k": idle_s / max(total_files, 1) * 100_000,
        "idle": _counts(idle),
        "peak_rss_mb": peak_rss_mb(),
    }


def _counts(result: Tally) -> dict:
    return {
        "landed": result.bodies_landed,
        "waiting": result.bodies_waiting,
        "unreadable": result.bodies_unreadable,
        "excluded": result.bodies_excluded,
        "conflicts": result.conflicts,
        "errors": len(result.errors),
    }


def report(figures: dict) -> None:
    print(
        f"backlog               {figures['backlog_files']:>10,} files  "
        f"{figures['source_mb']:,.0f} MB"
    )
    print(
        f"first pass            {figures['first_s']:10.1f} s   {figures['first_mb_s']:8.1f} MB/s"
        f"  (target >= {TARGETS['first_mb_s']:.0f})   {figures['first']}"
    )
    print(f"landed                {figures['landed_pct']:10.1f} % of the source bytes")
    print(
        f"peak RSS, first pass  {figures['first_peak_rss_mb']:10.1f} MB"
        f"  (target < {TARGETS['peak_rss_mb']:.0f})"
    )
    print(
        f"second pass           {figures['second_s']:10.3f} s   "
        f"{figures['second_s_per_100k']:6.2f} s per 100,000 files   {figures['second']}"
    )
    print(
        f"padding pass          {figures['padding_s']:10.1f} s   "
        f"{figures['padding_files']:,} small bodies   {figures['padding']}"
    )
    print(
        f"idle pass             {figures['idle_s']:10.3f} s   "
        f"over {figures['idle_files']:,} files: "
        f"{figures['idle_s_per_100k']:.2f} s per 100,000 (target < "
        f"{TARGETS['idle_s_per_100k']:.0f})   {figures['idle']}"
    )
    print(f"peak RSS, whole run   {figures['peak_rss_mb']:10.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gigabytes", type=float, default=1.0)
    parser.add_argument("--files", type=int, default=100_000)
    parser.add_argument("--sessions", type=int, default=4, help="sessions per seed")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument(
        "--index", action="store_true", help="Claude Code >= 2.1.274: write index.jsonl too"
    )
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp dir)")
    parser.add_argument(
        "--measure", nargs=2, type=Path, metavar=("CLAUDE", "ROOT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.measure:
        sys.stdout.buffer.write(orjson.dumps(measure(*args.measure, args.files)))
        return
    with tempfile.TemporaryDirectory(prefix="asz-bench-collect-") as tmp:
        work = args.workdir or Path(tmp)
        claude, root = work / "claude", work / "root"
        started = time.perf_counter()
        template = SynthOptions(sessions=args.sessions, turns=args.turns, index=args.index)
        written = build_backlog(claude, work, int(args.gigabytes * 1e9), template)
        print(
            f"built {written / 1e6:,.0f} MB of bodies in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        child = subprocess.run(
            [
                sys.executable,
                __file__,
                "--files",
                str(args.files),
                "--measure",
                str(claude),
                str(root),
            ],
            stdout=subprocess.PIPE,
            check=True,
        )
        report(orjson.loads(child.stdout))


if __name__ == "__main__":
    main()
