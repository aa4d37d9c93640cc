"""``asz demo``: the whole product on a synthetic capture, for someone with no Claude Code data.

It writes a Claude Code directory the way Claude Code would, collects it into a root,
verifies every body rebuilds, joins the bodies to their calls, and says what happened in the
words ``asz collect`` and ``asz verify`` use, so that what a person learns here reads the same
on their own root.

What it makes goes in a temporary directory that is removed when it ends (a capture is a few
megabytes, and a demo run again and again must not fill the disk), unless it is asked to keep
it: ``--root DIR`` lands the capture in DIR and keeps that root, so the next command a person
types can be ``asz view``; ``--keep DIR`` keeps everything, the synthetic Claude Code directory
too. Either directory must be new or empty: the demo never mixes its capture into real data.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from dataclasses import replace
from pathlib import Path

from asz.commands.args import local_root
from asz.config import AdapterConfig, Adapters, Config
from asz.exits import EXIT_FAILED, EXIT_OK, EXIT_USAGE
from asz.view.records import ViewDocument
from asz.words import count, size

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "synthesise a capture, collect it, verify it, say what happened"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--keep",
        type=Path,
        metavar="DIR",
        help="work in DIR, which must be new or empty, and keep it: the synthetic Claude Code "
        "directory in DIR/claude and the root in DIR/root (unless --root names one); by "
        "default the demo works in a temporary directory and removes it when it ends",
    )


def run(args: argparse.Namespace, config: Config) -> int:
    keep: Path | None = args.keep
    given: Path | str | None = getattr(args, "root", None)  # --root given, not a config's
    if isinstance(given, str):
        given = local_root(config, "asz demo")  # an archive: refused, saying why
    root_dir = given or (keep / "root" if keep else None)
    for chosen in (keep, root_dir):
        if chosen is None or not chosen.exists():
            continue
        if not chosen.is_dir():
            wrong = "not a directory"
        elif any(chosen.iterdir()):
            wrong = "not empty"
        else:
            continue
        print(f"asz demo: {chosen} is {wrong}; name a new or empty directory", file=sys.stderr)
        return EXIT_USAGE
    workdir = keep or Path(tempfile.mkdtemp(prefix="asz-demo-"))
    try:
        return _demo(config, workdir / "claude", root_dir or workdir / "root", root_dir is not None)
    finally:
        if keep is None:
            made = _bytes_under(workdir)
            shutil.rmtree(workdir, ignore_errors=True)
            what = "the synthetic Claude Code directory" if given else "everything the demo made"
            print(f"removed      {workdir} ({size(made)}): {what}")
            if given is None:
                print("             `asz demo --root DIR` keeps the root in DIR, to look around it")


def _demo(config: Config, claude_dir: Path, root_dir: Path, kept: bool) -> int:
    """Synthesises, collects, verifies and joins, saying each; ``kept``: the root stays after
    the demo, so the commands to read it are worth saying."""
    from asz.passes import pass_line, run_pass
    from asz.store import BODY_KIND, BodyLander, Root, collector_lock, open_store
    from asz.synth import SynthOptions, synthesize
    from asz.view import build_view

    expected = synthesize(claude_dir, SynthOptions())
    demo_config = replace(
        config,
        root=root_dir,
        claude_dirs=(claude_dir,),
        adapters=Adapters(AdapterConfig(), AdapterConfig()),
    )
    root = Root(root_dir)
    store = open_store(root_dir, compression=demo_config.compression)
    with collector_lock(root):
        counts = run_pass(demo_config, root, BodyLander(store))
    report = store.verify()
    sessions = [store.session(session) for session in store.sessions()]
    joined = [_joined(build_view(session)) for session in sessions]
    totals = expected["totals"]
    written = totals["body_bytes"]
    on_disk = sum(session.landed_bytes(BODY_KIND) for session in sessions)
    print(
        f"synthesised  {count(len(expected['sessions']), 'session')} of Claude Code under "
        f"{claude_dir}: {count(totals['requests'] + totals['responses'], 'body')} "
        f"({size(written)}) and {size(totals['transcript_bytes'])} of transcripts"
    )
    print(f"collected    {pass_line(counts)}")
    print(
        f"stored       {size(on_disk)} of body files for the {size(written)} of bodies Claude "
        f"Code wrote ({100 * on_disk / max(written, 1):.1f}%)"
    )
    print(
        f"verified     {count(report.bodies, 'body')} and "
        f"{count(report.transcript_lines, 'transcript line')} in "
        f"{count(report.files, 'landed file')}: "
        + (count(len(report.problems), "problem") if report.problems else "all rebuild")
    )
    calls = sum(item[0] for item in joined)
    print(
        f"joined       {count(sum(item[1] for item in joined), 'request')} and "
        f"{count(sum(item[2] for item in joined), 'response')} to {count(calls, 'call')}"
    )
    if kept:
        print(f"root         {root_dir}")
    if kept and sessions:
        print(f"next         asz view --root {root_dir} {sessions[0].id}")
        print(f"             asz cache --root {root_dir} {sessions[0].id}")
    ok = counts.complete and not report.problems
    return EXIT_OK if ok else EXIT_FAILED


def _joined(view: ViewDocument) -> tuple[int, int, int]:
    summary = view["summary"]
    return summary["calls"], summary["requests_joined"], summary["responses_joined"]


def _bytes_under(directory: Path) -> int:
    return sum(path.stat().st_size for path in directory.rglob("*") if path.is_file())
