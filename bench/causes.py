"""How many cache breaks the cache report names a cause for, by the evidence that names it,
on real transcripts and on a synthetic capture whose bodies are removed before collecting.

For each layout of the real samples (``$ASZ_SAMPLES/transcripts/*``, the projects of a
Claude Code directory) and for ``asz synth`` captures (seeds of ``--seeds``, their provider
bodies deleted), lands them with one collector pass, builds every session's cache report
and prints: the breaks, those with a cause by source (``bodies``, ``api``, ``transcript``,
``usage``) and those with none; the causes named; and for the synth, how many injected
breaks got the cause injected (``INJECTED``), and how many of those the transcript can carry.

    .venv/bin/python bench/causes.py [--samples DIR] [--seeds 4 11]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

from asz.commands.collect import collect_once
from asz.config import Config
from asz.store import open_store
from asz.synth import SynthOptions, synthesize
from asz.view import cache_report
from asz.view.cache import UNCOMPARED
from asz.view.evidence import SOURCES

INJECTED = {
    "upgrade": "upgrade",
    "effort": "effort",
    "model": "model",
    "system": "system",
    "fast_mode": "fast_mode",
    "tools_added": "tools",
    "tools_loaded": "tools",
    "tools_denied": "tools",
    "ttl": "ttl",
    "ttl_5m": "ttl",
}
"""The synth's injected change -> the cause it is."""


def land(claude: Path, root: Path) -> list[dict[str, Any]]:
    """Every session's cache report after one collector pass over ``claude``."""
    if collect_once(Config(root=root, claude_dirs=(claude,)), as_json=False) != 0:
        raise SystemExit(f"the collector pass over {claude} was not complete")
    store = open_store(root)
    return [cache_report(store.session(sid)) for sid in store.sessions()]


def tally(reports: list[dict[str, Any]]) -> tuple[int, Counter[str], Counter[str]]:
    """Breaks, breaks by the source of their cause, and breaks by cause; read from the rows,
    so that a report of an asz that named causes from the bodies only reads too."""
    sources: Counter[str] = Counter(dict.fromkeys([*SOURCES, "none"], 0))
    causes: Counter[str] = Counter()
    breaks = 0
    for report in reports:
        for row in report["rows"]:
            if not row["rewritten_tokens"]:
                continue
            breaks += 1
            named = row["cause"] is not None and row["cause"] not in UNCOMPARED
            sources[row.get("cause_from", "bodies") if named else "none"] += 1
            causes[row["cause"] or "-"] += 1
    return breaks, sources, causes


def say(label: str, reports: list[dict[str, Any]]) -> None:
    breaks, sources, causes = tally(reports)
    named = breaks - sources["none"]
    share = f"{100 * named / breaks:.0f}%" if breaks else "-"
    print(f"{label}: {breaks} breaks, {named} with a cause ({share})")
    print("  by evidence: " + ", ".join(f"{s} {n}" for s, n in sources.items()))
    print("  by cause:    " + ", ".join(f"{c} {n}" for c, n in causes.most_common()))
    agreement = Counter[str]()
    for report in reports:
        for cause, entry in report["totals"].get("api_agreement", {}).items():
            agreement[f"{cause} compared"] += entry["compared"]
            agreement[f"{cause} agreed"] += entry["agreed"]
    if agreement:
        print(
            "  the API and other evidence: " + ", ".join(f"{k} {n}" for k, n in agreement.items())
        )


def samples(directory: Path, work: Path) -> None:
    for layout in sorted((directory / "transcripts").iterdir()):
        claude = work / layout.name / "claude"
        shutil.copytree(layout, claude / "projects")
        say(f"samples {layout.name}", land(claude, work / layout.name / "root"))


def synth_without_bodies(seed: int, work: Path) -> None:
    claude = work / f"synth-{seed}" / "claude"
    expected = synthesize(claude, SynthOptions(seed=seed, subagents=2))
    for body in expected["bodies"]:
        (claude / body["file"]).unlink(missing_ok=True)
    reports = land(claude, work / f"synth-{seed}" / "root")
    say(f"synth seed {seed}, bodies removed", reports)
    rows = {row["message_id"]: row for report in reports for row in report["rows"]}
    right: Counter[str] = Counter()
    wrong: list[str] = []
    for brk in expected["cache_breaks"]:
        row = rows.get(brk["message_id"])
        want = INJECTED.get(brk["injected"], brk["cause"])
        if row is not None and row["cause"] == want:
            right[want] += 1
        else:
            wrong.append(f"{brk['injected']} named {row['cause'] if row else None}")
    total = len(expected["cache_breaks"])
    print(f"  injected truth: {sum(right.values())} of {total} named as injected")
    if wrong:
        print("  not as injected: " + ", ".join(sorted(wrong)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=Path, default=os.environ.get("ASZ_SAMPLES") or None)
    parser.add_argument("--seeds", type=int, nargs="*", default=[4, 11])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="asz-causes-") as tmp:
        work = Path(tmp)
        if args.samples:
            samples(Path(args.samples), work)
        for seed in args.seeds:
            synth_without_bodies(seed, work)


if __name__ == "__main__":
    main()
