"""How long ``asz view`` and the cache report take on long sessions, and what memory they need.

For each ``--calls`` figure, synthesises one session of about that many model calls (one
prompt's call plus its tool calls per turn), lands it with one collector pass (which also
builds and keeps the session's cache report), then measures, each in a process of its own so
that its peak RSS is its own:

- ``build_view``: manifests and transcript lines only, joined responses rebuilt;
- ``cache_report`` built from the landed files: every request read from where it stops
  repeating the body its record copies, in one walk that holds only the latest requests,
  the manifests taken from the kept index (``<session>/manifests.json``);
- the same with the session's derived state lost (no kept report, no manifest index), as a
  reader meets it the first time: every body file is also read for its manifests;
- ``asz cache SESSION --json``, the command as a person runs it, which reads the kept report.

The baselines are the figures before reports were read through the landed records and kept:
1.5 s and 255 MB for 1,000 calls, 8.2 s and 725 MB for 3,000 (``asz cache`` alone).

    .venv/bin/python bench/view.py [--calls 1000 5000] [--tool-calls 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from asz.commands.collect import collect_once
from asz.config import Config
from asz.store import BODY_KIND, open_store
from asz.store._layout import MANIFESTS_FILE, REPORT_FILE
from asz.synth import SynthOptions, synthesize

BASELINES = {1000: (1.5, 255.0), 3000: (8.2, 725.0)}
"""Calls -> (seconds, peak RSS in MB) of ``asz cache`` alone before this design."""

_CHILD = """
import json, sys, time
from asz.store import open_store
from asz.view import build_view, cache_report
def peak_rss_mb():
    # VmHWM belongs to this process's memory since exec; ru_maxrss would carry the parent's.
    with open("/proc/self/status") as status:
        line = next(line for line in status if line.startswith("VmHWM:"))
    return int(line.split()[1]) / 1024
store = open_store(sys.argv[1])
session = store.session(sys.argv[2])
work = {"build_view": build_view, "cache_report": cache_report}[sys.argv[3]]
started = time.perf_counter()
result = work(session)
seconds = time.perf_counter() - started
totals = result.get("totals", {})
print(json.dumps({
    "seconds": seconds,
    "rss_mb": peak_rss_mb(),
    "requests": totals.get("requests"),
    "by_cause": {cause: entry["requests"] for cause, entry in totals.get("by_cause", {}).items()},
}))
"""


def land(workdir: Path, calls: int, tool_calls: int) -> tuple[Path, dict, float]:
    """One synthetic session of about ``calls`` calls landed by one collector pass: the root,
    expected.json, and the seconds the pass took (``bench/serve.py`` lands the same way)."""
    capture = workdir / "claude"
    turns = max(1, calls // (tool_calls + 1))
    options = SynthOptions(
        seed=7, sessions=1, turns=turns, tool_calls=tool_calls, subagents=2, compactions=1
    )
    expected = synthesize(capture, options)
    config = Config(root=workdir / "root", claude_dirs=(capture,))
    started = time.perf_counter()
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    return config.root, expected, time.perf_counter() - started


def in_child(root: Path, session: str, work: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(root), session, work],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict = json.loads(done.stdout)
    return result


def timed_command(root: Path, session: str) -> float:
    """Wall time of ``asz cache SESSION --json``, start to exit."""
    asz = shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"
    started = time.perf_counter()
    subprocess.run(
        [asz, "cache", "--root", str(root), session, "--json"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return time.perf_counter() - started


def request_megabytes(root: Path, session: str) -> float:
    landed = open_store(root).session(session)
    return (
        sum(
            record.meta["size"]
            for _name, landed_file in landed.files(landed.landed(BODY_KIND))
            for record in landed_file.records
            if record.meta["role"] == "request"
        )
        / 1e6
    )


def measure(workdir: Path, calls: int, tool_calls: int) -> None:
    root, expected, landed = land(workdir, calls, tool_calls)
    session = expected["sessions"][0]["id"]
    view = in_child(root, session, "build_view")
    report = in_child(root, session, "cache_report")
    command_seconds = timed_command(root, session)
    for derived in (REPORT_FILE, MANIFESTS_FILE):
        (root / session / derived).unlink()
    lost = in_child(root, session, "cache_report")
    megabytes = request_megabytes(root, session)
    print(f"{calls} calls: session {session}, {megabytes:,.0f} MB of requests; landed and kept")
    print(f"  in {landed:.2f} s")
    print(f"  build_view        {view['seconds']:6.2f} s  {view['rss_mb']:6.0f} MB peak RSS")
    line = (
        f"  cache_report      {report['seconds']:6.2f} s  {report['rss_mb']:6.0f} MB peak RSS"
        f"  ({megabytes / report['seconds']:,.0f} MB of requests/s)"
    )
    baseline = BASELINES.get(calls)
    if baseline is not None:
        line += (
            f"; baseline {baseline[0]} s, {baseline[1]:.0f} MB: "
            f"{baseline[0] / report['seconds']:.1f}x faster, "
            f"{baseline[1] / report['rss_mb']:.1f}x less memory"
        )
    print(line)
    print(
        f"  ... state lost    {lost['seconds']:6.2f} s  {lost['rss_mb']:6.0f} MB peak RSS"
        "  (no kept report or manifest index: both made again)"
    )
    print(f"  asz cache --json  {command_seconds:6.2f} s  (the kept report, whole process)")
    print(f"  causes {report['by_cause']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, nargs="+", default=[1000, 5000])
    parser.add_argument("--tool-calls", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    for calls in args.calls:
        with tempfile.TemporaryDirectory() as scratch:
            workdir = (args.keep / str(calls)) if args.keep else Path(scratch)
            workdir.mkdir(parents=True, exist_ok=True)
            measure(workdir, calls, args.tool_calls)


if __name__ == "__main__":
    main()
