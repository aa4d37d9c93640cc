"""How fast the redactor rewrites a backlog of bodies, and in how much memory.

Builds a synthetic backlog as bench/collect.py does (one capture per seed, merged), then, in a
fresh process so that building it does not count, runs every body through one ``Redactor`` in
the order Claude Code wrote them (sessions one after another, as a push sends them), timing
the redaction alone (reading each file is not timed). The memo is what makes the figure: a
tool result resent by every later request is scanned once.

Targets: >= 50 MB/s of source bodies, peak RSS < 200 MB.

With ``--samples DIR`` (the real Claude Code samples) it measures false positives instead:
the markers each rule makes per MB of real bodies and of real transcript lines, which
docs/security.md states.

    .venv/bin/python bench/redact.py [--megabytes 300] [--secrets] [--workdir DIR]
    .venv/bin/python bench/redact.py --samples ../shared/claude-code-samples
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
from asz.redact import IDENTITY_RULES, Policy, Redactor
from asz.redact.samples import sample_documents
from asz.synth import SynthOptions

TARGETS = {"mb_s": 50.0, "peak_rss_mb": 200.0}


def measure(bodies: Path) -> dict:
    """Runs in its own process: every body redacted once, in the order it was written."""
    listing = sorted(list_sources(bodies).files, key=lambda source: (source.mtime_ns, source.name))
    redactor = Redactor(Policy(), b"bench-key-bench-key-bench-key")
    spent = cpu = 0.0
    source_bytes = changed = 0
    documents: collections.Counter[str] = collections.Counter()
    for source in listing:
        raw = (bodies / source.name).read_bytes()
        started, started_cpu = time.perf_counter(), time.process_time()
        out = redactor.body(raw)
        spent += time.perf_counter() - started
        cpu += time.process_time() - started_cpu
        source_bytes += len(raw)
        documents[source.role] += 1
        changed += out.data is not raw
    return {
        "bodies": len(listing),
        "source_mb": source_bytes / 1e6,
        "seconds": spent,
        "mb_s": source_bytes / 1e6 / spent,
        "cpu_seconds": cpu,
        "cpu_mb_s": source_bytes / 1e6 / max(cpu, 1e-9),
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
    print(
        f"on the CPU   {figures['cpu_seconds']:10.1f} s   {figures['cpu_mb_s']:8.1f} MB/s "
        "(the same work, less the time other processes had the cores)"
    )
    print(f"bodies changed {figures['changed']:,}; markers by rule: {figures['markers']}")


def samples(directory: Path) -> None:
    """Markers per MB by rule over the real samples, bodies and transcript lines apart."""
    redactor = Redactor(Policy(), b"bench-key-bench-key-bench-key")
    sizes: collections.Counter[str] = collections.Counter()
    fired: collections.Counter[tuple[str, str]] = collections.Counter()
    for kind, _where, raw in sample_documents(directory):
        sizes[kind] += len(raw)
        out = redactor.body(raw) if kind == "body" else redactor.line(raw)
        fired.update((kind, hit.rule) for hit in out.hits)
    for kind in ("body", "line"):
        name = "bodies" if kind == "body" else "transcript lines"
        print(f"{name}: {sizes[kind] / 1e6:.2f} MB")
        for (of, rule), n in sorted(fired.items()):
            if of == kind:
                print(f"  {rule:<20} {n:>6}  {n / (sizes[kind] / 1e6):8.1f} per MB")
    secret = sum(n for (_kind, rule), n in fired.items() if rule not in IDENTITY_RULES)
    print(f"secret-rule markers: {secret} (baseline 0)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=float, default=300.0)
    parser.add_argument("--sessions", type=int, default=4, help="sessions per seed")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--secrets", action="store_true", help="synth --secrets captures")
    parser.add_argument("--workdir", type=Path, help="kept afterwards (default: a temp dir)")
    parser.add_argument("--samples", type=Path, metavar="DIR", help="measure false positives")
    parser.add_argument("--measure", type=Path, metavar="BODIES", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.samples:
        samples(args.samples)
        return
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
