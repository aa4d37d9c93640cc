"""``asz demo``: the whole product on a synthetic capture, for someone with no Claude Code data.

It writes a Claude Code directory the way Claude Code would, collects it into a fresh root,
verifies every body rebuilds, joins the bodies to their calls, and says what happened and
where everything is, so the next command a person types can be ``asz view`` on a real root.
"""

from __future__ import annotations

import argparse
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from asz.commands.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from asz.config import AdapterConfig, Adapters, Config

SUMMARY = "synthesise a capture, collect it, verify it, say what happened"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--keep", type=Path, metavar="DIR", help="work in DIR and keep it")


def run(args: argparse.Namespace, config: Config) -> int:
    from asz.passes import run_pass
    from asz.store import BODY_KIND, open_store
    from asz.store.bodies import BodyLander
    from asz.store.root import Root, collector_lock
    from asz.synth import SynthOptions, synthesize
    from asz.view import build_view

    keep: Path | None = args.keep
    workdir = keep or Path(tempfile.mkdtemp(prefix="asz-demo-"))
    claude_dir = workdir / "claude"
    root_dir = workdir / "root"
    if root_dir.exists() and any(root_dir.iterdir()):
        print(f"asz demo: {root_dir} is not empty; name another --keep directory")
        return EXIT_USAGE
    expected = synthesize(claude_dir, SynthOptions())
    demo_config = replace(
        config,
        root=root_dir,
        claude_dir=claude_dir,
        adapters=Adapters(AdapterConfig(), AdapterConfig()),
    )
    root = Root(root_dir)
    store = open_store(root_dir, compression=demo_config.compression)
    with collector_lock(root):
        counts = run_pass(demo_config, root, BodyLander(store))
    report = store.verify()
    sessions = [store.session(session) for session in store.sessions()]
    joined = [_joined(build_view(session)) for session in sessions]
    written = expected["totals"]["body_bytes"]
    on_disk = sum(session.landed_bytes(BODY_KIND) for session in sessions)
    print(f"synthesised  {len(expected['sessions'])} sessions under {claude_dir}")
    print(
        f"collected    {len(counts.sessions)} sessions, {counts.bodies_landed} bodies landed, "
        f"{counts.bodies_waiting} waiting (no session can claim them), "
        f"{counts.transcript_lines_landed} transcript lines"
    )
    print(
        f"stored       {on_disk:,} bytes of body files for {written:,} bytes Claude Code wrote "
        f"({100 * on_disk / max(written, 1):.1f}%)"
    )
    print(
        f"verified     {report.bodies} bodies rebuild byte for byte, "
        f"{len(report.problems)} problem(s)"
    )
    calls = sum(item[0] for item in joined)
    print(
        f"joined       {sum(item[1] for item in joined)} requests and "
        f"{sum(item[2] for item in joined)} responses to {calls} calls"
    )
    first = sessions[0].id if sessions else None
    print(f"root         {root_dir}")
    if first:
        print(f"next         asz view --root {root_dir} {first}")
        print(f"             asz cache --root {root_dir} {first}")
    ok = counts.complete and not report.problems
    return EXIT_OK if ok else EXIT_FAILED


def _joined(view: dict[str, Any]) -> tuple[int, int, int]:
    summary = view["summary"]
    return summary["calls"], summary["requests_joined"], summary["responses_joined"]
