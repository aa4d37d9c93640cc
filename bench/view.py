"""How long ``asz view`` and the cache report take on a long session.

Synthesises one session of about ``--calls`` model calls (one prompt's call plus its tool
calls per turn), lands it with one collector pass, then times ``build_view`` (manifests and
transcript lines only; joined responses rebuilt) and ``cache_report`` (every request rebuilt,
and parsed only from where it stops repeating the one before), and counts the request bodies
the view rebuilt, which should be none.

    .venv/bin/python bench/view.py [--calls 1000] [--tool-calls 3] [--repeat 3] [--keep DIR]
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from asz.commands.collect import collect_once
from asz.config import Config
from asz.store import BODY_KIND, Store, open_store
from asz.store.held import HeldBodies
from asz.store.manifest import Record
from asz.synth import SynthOptions, synthesize
from asz.view import build_view, cache_report


def land(workdir: Path, calls: int, tool_calls: int) -> tuple[Store, str, float]:
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
    landed = time.perf_counter() - started
    session = expected["sessions"][0]["id"]
    return open_store(config.root), session, landed


class CountingLoads:
    """Counts, by role, the records any HeldBodies (a SessionBodies too) takes in while
    installed.

    Taking in a record checks it by hashing what it rebuilds to, so a request never taken in
    is a request never rebuilt.
    """

    def __init__(self) -> None:
        self.by_role: dict[str, int] = {"request": 0, "response": 0}
        self._original = HeldBodies.add

    def __enter__(self) -> CountingLoads:
        counts, original = self.by_role, self._original

        def add(bodies: HeldBodies, record: Record) -> None:
            role = str(record.meta.get("role"))
            counts[role] = counts.get(role, 0) + 1
            original(bodies, record)

        HeldBodies.add = add  # type: ignore[method-assign]
        return self

    def __exit__(self, *_: object) -> None:
        HeldBodies.add = self._original  # type: ignore[method-assign]


def best_of(repeat: int, work) -> tuple[float, object]:
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = work()
        best = min(best, time.perf_counter() - started)
    return best, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--tool-calls", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", type=Path, help="work in this directory and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        workdir = args.keep or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        store, session, landed = land(workdir, args.calls, args.tool_calls)
        landed_session = store.session(session)
        body_files = landed_session.landed(BODY_KIND)
        body_bytes = landed_session.landed_bytes(BODY_KIND)
        request_bytes = sum(
            record.meta["size"]
            for _name, landed_file in landed_session.files(body_files)
            for record in landed_file.records
            if record.meta["role"] == "request"
        )
        # A fresh Session each time, as ``asz view`` and ``asz cache`` open one: nothing read
        # by one run is kept for the next.
        view_seconds, view = best_of(args.repeat, lambda: build_view(store.session(session)))
        with CountingLoads() as counting:
            build_view(store.session(session))
        loaded = counting.by_role
        cache_seconds, report = best_of(1, lambda: cache_report(store.session(session)))
        summary = view["summary"]
        print(
            f"session {session}: {summary['calls']} calls, {summary['bodies_landed']} bodies "
            f"in {len(body_files)} files ({body_bytes / 1e6:.1f} MB landed); "
            f"landed in {landed:.2f} s"
        )
        print(
            f"  joined: {summary['requests_joined']} requests, "
            f"{summary['responses_joined']} responses; unjoined {summary['unjoined_by_reason']}"
        )
        print(
            f"  build_view:   {view_seconds * 1000:8.1f} ms (best of {args.repeat}); "
            f"records taken in: {loaded['request']} requests, {loaded['response']} responses"
        )
        totals = report["totals"]
        print(
            f"  cache_report: {cache_seconds * 1000:8.1f} ms; {totals['requests']} requests "
            f"({request_bytes / 1e6:.0f} MB, {request_bytes / 1e6 / cache_seconds:.0f} MB/s), "
            f"causes {dict((c, e['requests']) for c, e in totals['by_cause'].items())}"
        )


if __name__ == "__main__":
    main()
