"""What the analytics tables cost and buy: a team's year of call facts queried with ``asz sql``,
``asz cache`` from the tables against from the landed files, and what writing the facts adds
to a pass.

1. Generates call facts for ``--developers`` developers over ``--days`` days (about 100,000
   calls per developer a year: 200 developers are about 20 M calls), built straight as
   columns with numpy, not through synthetic captures, and writes them as asz does once a day
   is compacted: one file per table, day and machine (each developer a machine), hive style,
   zstd, through ``asz.analytics.files``.
2. Runs the ranking query (waste by project and cause over one quarter) with ``asz sql``, as
   a person would (a process of its own, start to exit): its wall time (the goal: under 2 s)
   and its peak RSS (the goal: under 1 GB).
3. Lands ``--sessions`` synthetic sessions with one collector pass, writes their facts in
   the same process (the service's order: the pass, then the facts), and prints the write's
   time against the pass's (the goal: under 5 %).
4. Times ``asz cache --json`` over those sessions from the landed files (their kept reports,
   then with every derived file lost) and from the tables, side by side.

    .venv/bin/python bench/analytics.py [--developers 200] [--days 365] [--sessions 1000]
                                        [--keep DIR] [--skip-generate] [--skip-sessions]
                                        [--only-pass]
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import date, timedelta
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from asz.analytics.files import parquet_bytes
from asz.analytics.names import part_path
from asz.analytics.schema import USD
from asz.config import Config

try:
    import numpy as np  # the rows are built as columns: a test extra, not asz's
except ImportError as err:
    raise SystemExit(
        f"bench/analytics.py needs the test extras ({err.name} is missing): pip install '.[test]'"
    ) from None

CALLS_PER_YEAR = 100_000
"""Calls a developer makes in a year (200 developers: 20 M)."""
SESSIONS_PER_YEAR = 500
PROJECTS_PER_DEVELOPER = 4
MODELS = ("claude-opus-4-6", "claude-sonnet-4-5", "claude-haiku-4-5", "claude-opus-4-5")
MODEL_SHARE = (0.55, 0.3, 0.1, 0.05)
CAUSES = ("tools", "model", "ttl", "system", "upgrade", "messages", "compaction", "no_request")
CAUSE_SHARE = (0.3, 0.1, 0.25, 0.1, 0.05, 0.1, 0.05, 0.05)
BREAK_SHARE = 0.08
FIRST_DAY = date(2026, 1, 1)
QUARTER_DAYS = 91


def ranking(days: int) -> tuple[str, str, str]:
    """The ranking query over the last quarter of ``days`` (all of them when fewer), and
    that quarter's first and last day."""
    first = FIRST_DAY + timedelta(days=max(0, days - QUARTER_DAYS))
    end = FIRST_DAY + timedelta(days=days)
    query = (
        "SELECT project, cause, count(*) AS breaks, sum(rewritten_tokens) AS rewritten, "
        "sum(waste_usd) AS waste_usd FROM breaks "
        f"WHERE day >= DATE '{first}' AND day < DATE '{end}' "
        "GROUP BY project, cause ORDER BY waste_usd DESC"
    )
    return query, first.isoformat(), (end - timedelta(days=1)).isoformat()


def dollars(micro: np.ndarray) -> pa.Array:
    """Millionths of a dollar as the tables' decimal(18, 6): the unscaled 128-bit integers."""
    words = np.zeros((len(micro), 2), dtype=np.int64)
    words[:, 0] = micro
    words[:, 1] = np.where(micro < 0, -1, 0)
    return pa.Array.from_buffers(USD, len(micro), [None, pa.py_buffer(words.tobytes())])


def one_day(rng: np.random.Generator, day: date, developers: int, rate: float) -> pa.Table:
    """Every developer's calls of ``day``, sorted by developer, as a table of the calls
    schema's columns (with a ``developer`` column to split it by)."""
    counts = rng.poisson(rate, developers)
    n = int(counts.sum())
    developer = np.repeat(np.arange(developers), counts)
    sessions_a_day = SESSIONS_PER_YEAR / 365
    local = rng.integers(0, max(1, round(sessions_a_day * 2)), n)
    ordinal = day.toordinal()
    keys, inverse = np.unique(developer * 64 + local, return_inverse=True)
    session = np.array(
        [f"{k // 64:08x}-{ordinal:04x}-4{k % 64:03x}-8000-000000000000" for k in keys]
    )[inverse]
    places = developer * PROJECTS_PER_DEVELOPER + local % PROJECTS_PER_DEVELOPER
    keys, inverse = np.unique(places, return_inverse=True)
    each = PROJECTS_PER_DEVELOPER
    project = np.array([f"/home/dev{k // each}/project-{k % each}" for k in keys])[inverse]
    seconds = np.sort(rng.integers(8 * 3600, 20 * 3600, n))
    base = np.datetime64(day.isoformat(), "ms").astype(np.int64)
    model = np.array(MODELS)[rng.choice(len(MODELS), n, p=MODEL_SHARE)]
    inputs = rng.integers(1, 50, n)
    read = rng.integers(0, 150_000, n)
    written = rng.integers(0, 20_000, n)
    one_hour = rng.random(n) < 0.3
    broke = rng.random(n) < BREAK_SHARE
    rewritten = np.where(broke, rng.integers(5_000, 120_000, n), 0)
    cause = np.where(broke, np.array(CAUSES)[rng.choice(len(CAUSES), n, p=CAUSE_SHARE)], "kept")
    output = rng.integers(10, 4_000, n)
    cost = (inputs * 5 + output * 25 + read // 2 + written * 6 + written // 4).astype(np.int64)
    waste = np.where(broke, rewritten * 575 // 100, 0).astype(np.int64)
    machine = np.array([f"{d:016x}" for d in range(developers)])[developer]
    return pa.table(
        {
            "developer": developer,
            "session": session,
            "project": project,
            "machine": machine,
            "stream": np.where(rng.random(n) < 0.8, "main", "a1b2c3d"),
            "call": np.arange(1, n + 1, dtype=np.int32),
            "message_id": np.char.add("msg_", np.arange(n).astype(str)),
            "time": pa.array(base + seconds * 1000, pa.timestamp("ms", tz="UTC")),
            "model": model,
            "version": np.full(n, "2.1.39"),
            "side": np.zeros(n, dtype=bool),
            "request_body": np.char.add("req-", np.arange(n).astype(str)),
            "response_body": np.char.add("res-", np.arange(n).astype(str)),
            "input_tokens": inputs,
            "output_tokens": output,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": written,
            "cache_write_5m_input_tokens": np.where(one_hour, 0, written),
            "cache_write_1h_input_tokens": np.where(one_hour, written, 0),
            "expected_read": read + rewritten,
            "rewritten_tokens": rewritten,
            "cause": cause,
            "cause_from": np.full(n, "bodies"),
            "detail": np.where(broke, "added Bash", None),
            "stop_reason": np.full(n, "tool_use"),
            "cost_usd": dollars(cost),
            "waste_usd": dollars(waste),
            "write_ttl": np.where(one_hour, "1h", "5m"),
        }
    )


def generate(
    out: Path, developers: int, days: int, one_file: bool = False
) -> tuple[int, int, float]:
    """Writes the tables under ``out``, a file per machine and day as asz writes them (with
    ``one_file``, a file per day: the reader's local copy once made); returns (calls, files,
    seconds)."""
    rng = np.random.default_rng(25)
    rate = CALLS_PER_YEAR / 365
    started = time.perf_counter()
    calls = files = 0
    break_columns = [
        "session", "project", "machine", "stream", "call", "message_id", "time", "model",
        "cause", "cause_from", "detail", "rewritten_tokens", "expected_read",
        "cache_creation_input_tokens", "write_ttl", "cost_usd", "waste_usd",
    ]  # fmt: skip
    for offset in range(days):
        day = FIRST_DAY + timedelta(days=offset)
        table = one_day(rng, day, developers, rate)
        calls += table.num_rows
        developer = table.column("developer").to_numpy()
        starts = np.searchsorted(developer, np.arange(developers + 1))
        if one_file:
            starts, developers_here = np.array([0, table.num_rows]), 1
        else:
            developers_here = developers
        for dev in range(developers_here):
            rows = table.slice(starts[dev], starts[dev + 1] - starts[dev])
            if rows.num_rows == 0:
                continue
            machine = f"{dev:016x}"
            broke = rows.filter(pc.greater(rows.column("rewritten_tokens"), 0))
            for name, data in (
                ("calls", rows.drop_columns(["developer", "write_ttl"])),
                ("breaks", broke.select(break_columns)),
            ):
                path = out / part_path(name, day.isoformat(), machine, 1, offset + 1)
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_bytes(parquet_bytes(name, data))
                files += 1
        print(f"\r  generated {day.isoformat()}: {calls:,} calls, {files:,} files", end="")
    print()
    return calls, files, time.perf_counter() - started


TIME = shutil.which("time", path="/usr/bin:/bin")


def in_child(argv: list[str]) -> tuple[float, float, bytes, float]:
    """Runs ``argv``: its wall seconds, its peak RSS in MB, its output and its CPU seconds
    (on a machine others share, the CPU time says what the wall time may not). The peak is
    what ``time`` says of it where there is one: a child forked from this large process
    would count this process's pages in its own peak."""
    with tempfile.NamedTemporaryFile("r") as said:
        timed = [TIME, "-q", "-f", "%M", "-o", said.name, *argv] if TIME else argv
        started = time.perf_counter()
        child = subprocess.Popen(timed, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out = child.stdout.read() if child.stdout else b""
        err = child.stderr.read() if child.stderr else b""
        _pid, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - started
        if status != 0:
            raise SystemExit(f"{argv[1:3]} failed: {err.decode()[-2000:]}")
        peak_kb = int(said.read().split()[-1]) if TIME else usage.ru_maxrss
    return seconds, peak_kb / 1024, out, usage.ru_utime + usage.ru_stime


def cpu_seconds() -> float:
    """CPU seconds of this process and its children (a pass lands a backlog in workers)."""
    own, children = (
        resource.getrusage(resource.RUSAGE_SELF),
        resource.getrusage(resource.RUSAGE_CHILDREN),
    )
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def asz() -> str:
    return shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"


def query(out: Path, days: int) -> None:
    sql, first, last = ranking(days)
    runs = [in_child([asz(), "sql", sql, "--from", str(out), "--csv"]) for _ in range(3)]
    rows = runs[0][2].count(b"\n") - 1
    best = min(run[0] for run in runs)
    cpu = min(run[3] for run in runs)
    rss = max(run[1] for run in runs)
    print(
        f"  asz sql, waste by project and cause over {first}..{last}: "
        f"{best:.2f} s wall, {cpu:.2f} s CPU (first run {runs[0][0]:.2f} s; goal 2 s), "
        f"peak RSS {rss:,.0f} MB (goal 1,024 MB), {rows:,} rows"
    )
    count = in_child([asz(), "sql", "SELECT count(*) FROM calls", "--from", str(out), "--csv"])
    said = count[2].decode().split()[-1]
    print(
        f"  asz sql, count(*) over every call ({said}): {count[0]:.2f} s wall, "
        f"{count[3]:.2f} s CPU, {count[1]:,.0f} MB"
    )
    start = in_child([asz(), "sql", "SELECT 1", "--from", str(out), "--csv"])
    print(f"  asz sql, SELECT 1 (the start alone): {start[0]:.2f} s wall, {start[3]:.2f} s CPU")


def sessions(workdir: Path, count: int, cache: bool = True) -> None:
    from asz.analytics.run import write_facts  # and pyarrow: the service loads it once
    from asz.commands.collect import collect_once
    from asz.config import AnalyticsConfig
    from asz.store import open_store
    from asz.synth import SynthOptions, synthesize

    capture = workdir / "claude"
    for made in ("claude", "root", "session-tables"):
        shutil.rmtree(workdir / made, ignore_errors=True)
    synthesize(capture, SynthOptions(seed=25, sessions=count, turns=3, tool_calls=2))
    tables = workdir / "session-tables"
    config = Config(
        root=workdir / "root",
        claude_dirs=(capture,),
        analytics=AnalyticsConfig(url=str(tables)),
    )
    started, cpu = time.perf_counter(), cpu_seconds()
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    landed, landed_cpu = time.perf_counter() - started, cpu_seconds() - cpu
    store = open_store(config.root)
    started, cpu = time.perf_counter(), cpu_seconds()
    tally = write_facts(config, store, config.root, str(tables), store.sessions())
    written, written_cpu = time.perf_counter() - started, cpu_seconds() - cpu
    print(
        f"  one pass landing {count:,} sessions: {landed:.2f} s ({landed_cpu:.2f} s CPU); "
        f"writing their facts ({tally.calls:,} calls, {tally.files_written} files): "
        f"{written:.2f} s ({written_cpu:.2f} s CPU), {100 * written / landed:.1f} % of the "
        f"pass, {100 * written_cpu / landed_cpu:.1f} % of its CPU (goal 5 %)"
    )
    later_pass(workdir, config, tables, count, set(store.sessions()))
    if cache:
        cache_from_tables(workdir, config.root, tables, count)


def later_pass(workdir: Path, config: Config, tables: Path, count: int, before: set[str]) -> None:
    """A later pass landing a few more sessions into the root with all that history, writing
    the facts of what it landed, as the service does: the steady state, where what the
    record of the earlier passes costs would show."""
    from asz.analytics.run import write_facts
    from asz.commands.collect import collect_once
    from asz.store import open_store
    from asz.synth import SynthOptions, synthesize

    more = workdir / "claude-more"
    shutil.rmtree(more, ignore_errors=True)
    added = max(1, count // 20)
    synthesize(more, SynthOptions(seed=26, sessions=added, turns=3, tool_calls=2))
    config = dataclasses.replace(config, claude_dirs=(*config.claude_dirs, more))
    started, cpu = time.perf_counter(), cpu_seconds()
    if collect_once(config, as_json=False) != 0:
        raise SystemExit("the collector pass was not complete")
    landed, landed_cpu = time.perf_counter() - started, cpu_seconds() - cpu
    store = open_store(config.root)
    due = sorted(set(store.sessions()) - before)
    started, cpu = time.perf_counter(), cpu_seconds()
    tally = write_facts(config, store, config.root, str(tables), due)
    written, written_cpu = time.perf_counter() - started, cpu_seconds() - cpu
    print(
        f"  a later pass landing {added:,} sessions beside them: {landed:.2f} s "
        f"({landed_cpu:.2f} s CPU); writing their facts ({tally.calls:,} calls): "
        f"{written:.2f} s ({written_cpu:.2f} s CPU), {100 * written / landed:.1f} % of the "
        f"pass, {100 * written_cpu / landed_cpu:.1f} % of its CPU (goal 5 %)"
    )


def cache_from_tables(workdir: Path, root: Path, tables: Path, count: int) -> None:
    """Step 4: ``asz cache`` over the landed sessions, from their files and from the tables."""
    plain = workdir / "plain.toml"
    plain.write_text("")
    with_tables = workdir / "tables.toml"
    with_tables.write_text(f'[analytics]\nurl = "{tables}"\n')
    command = [asz(), "cache", "--root", str(root), "--json", "--config"]
    kept = in_child([*command, str(plain)])
    first = in_child([*command, str(with_tables)])  # makes the reader's copy of the tables
    read = in_child([*command, str(with_tables)])
    if kept[2] != read[2]:
        raise SystemExit("asz cache from the tables does not say what it says from the files")
    for derived in (*root.glob("*/cache.json"), *root.glob("*/summary.json")):
        derived.unlink()
    cold = in_child([*command, str(plain)])
    print(f"  asz cache over {count:,} sessions (wall, CPU, peak RSS):")
    for label, run in (
        ("from the landed files, reports kept", kept),
        ("from the landed files, nothing kept", cold),
        ("from the tables, the copy made first", first),
        ("from the tables", read),
    ):
        print(f"    {label:36} {run[0]:6.2f} s  {run[3]:6.2f} s  {run[1]:5.0f} MB")
    print(f"    the tables take {read[3] / kept[3]:.2f}x and {read[3] / cold[3]:.2f}x the CPU")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--developers", type=int, default=200)
    parser.add_argument("--days", type=int, default=365)
    parser.add_argument("--sessions", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    parser.add_argument("--skip-generate", action="store_true", help="reuse --keep's tables")
    parser.add_argument("--skip-sessions", action="store_true")
    parser.add_argument(
        "--only-pass",
        action="store_true",
        help="step 3 alone: the pass and the write of its facts, nothing generated or queried",
    )
    parser.add_argument(
        "--one-file-per-day",
        action="store_true",
        help="write each day as one file (the reader's local copy as asz sql makes it), not "
        "one per machine: the query's figures without the first read's merge",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        os.environ["XDG_CACHE_HOME"] = str(workdir / "cache")  # asz sql's local copy
        out = workdir / "tables"
        if args.only_pass:
            sessions(workdir, args.sessions, cache=False)
            return
        if not args.skip_generate:
            shutil.rmtree(out, ignore_errors=True)
            calls, files, seconds = generate(out, args.developers, args.days, args.one_file_per_day)
            size = sum(path.stat().st_size for path in out.rglob("*.parquet"))
            print(
                f"  {args.developers} developers x {args.days} days: {calls:,} calls in "
                f"{files:,} files, {size / 1e9:.2f} GB, written in {seconds:.0f} s"
            )
        query(out, args.days)
        if not args.skip_sessions:
            sessions(workdir, args.sessions)


if __name__ == "__main__":
    main()
