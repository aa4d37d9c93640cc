"""``asz demo``: the whole product on a synthetic capture, for someone with no Claude Code data.

It writes a Claude Code directory the way Claude Code would, collects it into a fresh root,
verifies every body rebuilds, joins the bodies to their calls, and says what happened and
where everything is, so the next command a person types can be ``asz view`` on a real root.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

from asz.config import AdapterConfig, Adapters, Config
from asz.passes import run_pass
from asz.store.bodies import BodyStore
from asz.store.root import PROVIDER_BODY, Root, collector_lock
from asz.store.transcripts import transcript_check
from asz.store.verify import verify_root
from asz.synth import SynthOptions, synthesize
from asz.view import build_view


def demo_command(config: Config, keep: Path | None) -> int:
    workdir = keep or Path(tempfile.mkdtemp(prefix="asz-demo-"))
    claude_dir = workdir / "claude"
    root_dir = workdir / "root"
    if root_dir.exists() and any(root_dir.iterdir()):
        print(f"asz demo: {root_dir} is not empty; name another --keep directory")
        return 2
    expected = synthesize(claude_dir, SynthOptions())
    demo_config = replace(
        config,
        root=root_dir,
        claude_dir=claude_dir,
        adapters=Adapters(AdapterConfig(), AdapterConfig()),
    )
    root = Root(root_dir)
    with collector_lock(root):
        counts = run_pass(demo_config, root, BodyStore(root, demo_config.compression))
    report = verify_root(root, checks=[transcript_check])
    joined = [_joined(build_view(root, session)) for session in root.sessions()]
    written = expected["totals"]["body_bytes"]
    on_disk = _bytes_under(root_dir, PROVIDER_BODY)
    print(f"synthesised  {len(expected['sessions'])} sessions under {claude_dir}")
    print(
        f"collected    {counts.sessions} sessions, {counts.bodies_landed} bodies landed, "
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
    first = root.sessions()[0] if root.sessions() else None
    print(f"root         {root_dir}")
    if first:
        print(f"next         asz view --root {root_dir} {first}")
        print(f"             asz cache --root {root_dir} {first}")
    ok = counts.complete and not report.problems
    return 0 if ok else 1


def _joined(view: dict) -> tuple[int, int, int]:
    summary = view["summary"]
    return summary["calls"], summary["requests_joined"], summary["responses_joined"]


def _bytes_under(root_dir: Path, kind: str) -> int:
    total = 0
    for directory, _dirs, files in os.walk(root_dir):
        if Path(directory).name == kind:
            total += sum(os.path.getsize(os.path.join(directory, name)) for name in files)
    return total
