"""How fast transcripts land: a first pass over a large projects dir, then a pass with nothing new.

Replicates the real sample transcripts (every layout; each copy gets fresh session ids, in
file names and in the lines) until the projects dir holds at least ``--megabytes`` MB, then
times ``collect_transcripts``: the first pass in MB/s of transcript bytes landed (target: at
least 100 MB/s), the second, with nothing new, in seconds per 1,000 source files (target: well
under 1 s). A first pass this large lands in worker processes; the CPU time printed counts
theirs. Also prints the landed/source ratio, the time to load every session's facts from its
cache, and the peak RSS of the process and of its largest worker.

    .venv/bin/python bench/transcripts.py [--megabytes 500] [--samples DIR] [--compression zstd]
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from asz.adapters.claude_code_local import collect_transcripts
from asz.config import AdapterConfig, Adapters, Config, SessionFilter
from asz.store import Root, Store, collector_lock, open_store
from asz.tally import Tally

UUID = rb"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}"
SESSION_ID = re.compile(rb'"sessionId":"(' + UUID + rb')"|/(' + UUID + rb")(?:\.jsonl)?(?=/|$)")
DEFAULT_SAMPLES = Path(__file__).resolve().parents[1] / ".." / "shared" / "claude-code-samples"


def sample_files(samples: Path) -> list[tuple[Path, Path]]:
    """(projects dir of a layout, transcript file) for every sample transcript."""
    base = samples / "transcripts"
    found = []
    for layout in sorted(path for path in base.iterdir() if path.is_dir()):
        for path in sorted(layout.rglob("*")):
            if path.is_file() and path.name.endswith((".jsonl", ".meta.json")):
                found.append((layout, path))
    return found


def renamer(ids: set[bytes]) -> Callable[[bytes], bytes]:
    """Replaces every session id in ``ids`` with a fresh one, the same one each time."""
    renamed = {old: str(uuid.uuid4()).encode() for old in ids}

    def rename(data: bytes) -> bytes:
        for old, new in renamed.items():
            data = data.replace(old, new)
        return data

    return rename


def replicate(samples: Path, projects: Path, megabytes: int) -> tuple[int, int]:
    """Copies the samples under ``projects`` until it holds ``megabytes``; (files, bytes)."""
    originals = [(layout, path, path.read_bytes()) for layout, path in sample_files(samples)]
    ids = {
        found
        for layout, path, data in originals
        for match in SESSION_ID.finditer(data + b"\n/" + bytes(path.relative_to(layout)))
        for found in match.groups()
        if found
    }
    files = total = copy = 0
    while total < megabytes * 1_000_000:
        rename = renamer(ids)
        for layout, path, data in originals:
            project, *rest = Path(rename(bytes(path.relative_to(layout))).decode()).parts
            target = projects.joinpath(f"{project}-{copy}", *rest)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(rename(data))
            files += 1
            total += len(data)
        copy += 1
    return files, total


def cpu_seconds() -> float:
    """CPU time of this process and of its finished children (the landing workers)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def timed_pass(config: Config, root: Root, store: Store) -> tuple[float, float, Tally]:
    """(wall seconds, CPU seconds of the process and its workers, result) of one pass."""
    started, cpu = time.perf_counter(), cpu_seconds()
    with collector_lock(root):
        result = collect_transcripts(config, store)
    return time.perf_counter() - started, cpu_seconds() - cpu, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=500)
    parser.add_argument(
        "--samples", type=Path, default=Path(os.environ.get("ASZ_SAMPLES", DEFAULT_SAMPLES))
    )
    parser.add_argument("--compression", choices=("zstd", "none"), default="zstd")
    args = parser.parse_args()
    if not (args.samples / "transcripts").is_dir():
        print(f"no sample transcripts under {args.samples}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="asz-bench-") as tmp:
        work = Path(tmp)
        projects = work / "projects"
        started = time.perf_counter()
        files, total = replicate(args.samples, projects, args.megabytes)
        print(
            f"projects dir: {files} files, {total / 1e6:.1f} MB "
            f"(written in {time.perf_counter() - started:.1f} s)"
        )
        config = Config(
            root=work / "root",
            claude_dirs=(work,),
            compression=args.compression,
            sessions=SessionFilter(exclude=()),
            adapters=Adapters(claude_code_local=AdapterConfig(source_root=str(projects))),
        )
        root = Root(config.root)
        store = open_store(config.root, compression=config.compression)
        seconds, cpu, first = timed_pass(config, root, store)
        assert not first.conflict_sources and not first.errors and not first.pending, first
        megabytes = first.source_bytes / 1e6
        print(
            f"first pass:  {megabytes:.1f} MB in {first.transcript_files} files, "
            f"{len(first.sessions)} sessions, {seconds:.2f} s = {megabytes / seconds:.1f} MB/s "
            f"(target >= 100); CPU {cpu:.2f} s = {megabytes / cpu:.1f} MB per CPU second; "
            f"landed {first.landed_bytes / first.source_bytes:.1%} of the source bytes"
        )
        seconds, cpu, second = timed_pass(config, root, store)
        assert second.transcript_files == 0, second
        print(
            f"second pass: nothing new, {seconds:.3f} s (CPU {cpu:.3f} s) for {files} files = "
            f"{seconds / files * 1000:.3f} s per 1,000 files (target well under 1)"
        )
        started = time.perf_counter()
        sessions = store.sessions()
        calls = sum(len(store.session(session).facts().calls) for session in sessions)
        print(
            f"facts: {calls} calls over {len(sessions)} sessions loaded from their "
            f"caches in {time.perf_counter() - started:.2f} s"
        )
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    print(f"peak RSS: {peak / 1024:.0f} MB, of the largest landing worker {workers / 1024:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
