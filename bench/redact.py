"""How fast the redactor rewrites a backlog of bodies, and in how much memory.

Builds a synthetic backlog as bench/collect.py does (one capture per seed, merged), then, in a
fresh process so that building it does not count, runs every body through one ``Redactor`` in
the order Claude Code wrote them (sessions one after another, as a push sends them), timing
the redaction alone (reading each file is not timed). The memo is what makes the figure: a
tool result resent by every later request is scanned once.

Targets: >= 50 MB/s of source bodies, peak RSS < 200 MB.

    .venv/bin/python bench/redact.py [--megabytes 300] [--secrets] [--workdir DIR]
"""

from __future__ import annotations

import argparse
import collections
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from collect import build_backlog

from asz.adapters.provider_source import list_sources
from asz.redact import Policy, Redactor
from asz.synth import SynthOptions

TARGETS = {"mb_s": 50.0, "peak_rss_mb": 200.0}


def measure(bodies: Path) -> dict:
    """Runs in its own process: every body redacted once, in the order it was written."""
    listing = sorted(list_sources(bodies).files, key=lambda source: (source.mtime_ns, source.name))
    redactor = Redactor(Policy(), b"bench-key-bench-key-bench-key")
    spent = 0.0
    source_bytes = changed = 0
    documents: collections.Counter[str] = collections.Counter()
    for source in listing:
        raw = (bodies / source.name).read_bytes()
        started = time.perf_counter()
        out = redactor.body(raw)
        spent += time.perf_counter() - started
        source_bytes += len(raw)
        documents[source.role] += 1
        changed += out.data is not raw
    return {
        "bodies": len(listing),
        "source_mb": source_bytes / 1e6,
        "seconds": spent,
        "mb_s": source_bytes / 1e6 / spent,
        "changed": changed,
        "markers": dict(redactor.counts.most_common()),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def report(figures: dict) -> None:
    mb_s, rss = figures["mb_s"], figures["peak_rss_mb"]
    print(f"backlog      {figures['bodies']:>10,} bodies  {figures['source_mb']:,.0f} MB")
    print(
        f"redaction    {figures['seconds']:10.1f} s   {mb_s:8.1f} MB/s of source bodies"
        f"  (target >= {TARGETS['mb_s']:.0f}: {mb_s / TARGETS['mb_s']:.2f}x)"
    )
    print(
        f"peak RSS     {rss:10.1f} MB  (target < {TARGETS['peak_rss_mb']:.0f}: "
        f"{rss / TARGETS['peak_rss_mb']:.2f} of it)"
    )
    print(f"bodies changed {figures['changed']:,}; markers by rule: {figures['markers']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=300.0)
    parser.add_argument("--sessions", type=int, default=4, help="sessions per seed")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--secrets", action="store_true", help="synth --secrets captures")
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp dir)")
    parser.add_argument("--measure", type=Path, metavar="BODIES", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        sys.stdout.buffer.write(orjson.dumps(measure(args.measure)))
        return
    with tempfile.TemporaryDirectory(prefix="asz-bench-redact-") as tmp:
        work = args.workdir or Path(tmp)
        claude = work / "claude"
        template = SynthOptions(sessions=args.sessions, turns=args.turns, secrets=args.secrets)
        started = time.perf_counter()
        written = build_backlog(claude, work, int(args.megabytes * 1e6), template)
        print(
            f"built {written / 1e6:,.0f} MB of bodies in {time.perf_counter() - started:.0f} s",
            file=sys.stderr,
        )
        bodies = claude / "asz" / "provider-bodies"
        child = subprocess.run(
            [sys.executable, __file__, "--measure", str(bodies)], stdout=subprocess.PIPE, check=True
        )
        report(orjson.loads(child.stdout))


if __name__ == "__main__":
    main()
