"""How fast the body codec cuts and rebuilds, and how small its records come out.

    .venv/bin/python bench/codec_core.py [--calls N] [--repeat R]

For a synthetic session shaped like Claude Code's traffic (a main chain and a subagent chain,
each call resending its whole conversation, tool output coming back between calls) and, when
``asz.synth`` can write one, for a default synth capture, it prints: the source bytes, scan,
encode, add and rebuild throughput in MB/s of source bytes on one core (best of R runs), and
the landed ratio ``sum(len(payload) + len(manifest JSON)) / source bytes``.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

try:
    from support.bodies import (
        CHILD_REMINDER,
        MAIN_REMINDER,
        SUBAGENT_TOOLS,
        Chain,
        filler,
        uuid_like,
    )
except ImportError as err:  # the tests' body generator sits beside their hypothesis strategies
    raise SystemExit(
        f"bench/codec_core.py needs the test extras ({err.name} is missing): pip install '.[test]'"
    ) from None

from asz.bodykeys import read_keys
from asz.store._codec import SessionBodies
from asz.store._manifest import Record
from asz.store._scan import NotCuttable, scan_body

Body = tuple[str, str, bytes]  # record id, role, bytes


def synthetic_session(calls: int) -> list[Body]:
    """``calls`` main calls; every fifth call a subagent runs three calls of its own."""
    main = Chain(MAIN_REMINDER, "Find where the cache is built and explain it.")
    bodies: list[Body] = []
    number = 0

    def call(chain: Chain, name: str) -> None:
        nonlocal number
        number += 1
        request_id = f"req_011C{number:020d}"
        bodies.append((f"{uuid_like(number)}.request", "request", chain.request(uuid_like(name))))
        output = filler(f"output{number}", 1_000 + (number * 797) % 6_000)
        response = chain.answer(request_id, filler(f"answer{number}", 500), output)
        bodies.append((f"{request_id}.response", "response", response))

    for i in range(calls):
        call(main, "main")
        if i % 5 == 4:
            child = Chain(CHILD_REMINDER, f"Look into part {i}.", tools=SUBAGENT_TOOLS)
            for _ in range(3):
                call(child, f"child{i}")
    return bodies


def synth_capture(outdir: Path) -> list[Body] | None:
    """The bodies of a default synth capture in mtime order, or None when there is no synth."""
    try:
        from asz.synth import SynthOptions, synthesize  # type: ignore[attr-defined]
    except ImportError:
        return None
    synthesize(outdir, SynthOptions())
    files = [
        path for pattern in ("*.request.json", "*.response.json") for path in outdir.rglob(pattern)
    ]
    files.sort(key=lambda path: (path.stat().st_mtime_ns, path.name))
    return [
        (path.name.removesuffix(".json"), path.name.split(".")[-2], path.read_bytes())
        for path in files
    ]


def best_of(repeat: int, run: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def load_and_rebuild_seconds(bodies: list[Body], records: list[Record]) -> float:
    """Time for a reader: add every record to a fresh session, then rebuild every body."""
    start = time.perf_counter()
    held = SessionBodies()
    for record in records:
        held.add(record)
    for record_id, _, _ in bodies:
        held.rebuild(record_id)
    return time.perf_counter() - start


def uncached_rebuild_seconds(bodies: list[Body], records: list[Record]) -> float:
    """Time to rebuild every body when no body but the chain tips is kept: copies walk down."""
    held = SessionBodies(cache_bytes=0)
    for record in records:
        held.add(record)
    start = time.perf_counter()
    for record_id, _, _ in bodies:
        held.rebuild(record_id)
    return time.perf_counter() - start


def measure(name: str, bodies: list[Body], repeat: int) -> None:
    source = sum(len(body) for _, _, body in bodies)
    keys = [read_keys(role, rid.rsplit(".", 1)[0], body) for rid, role, body in bodies]
    records: list[Record] = []
    encode_time = add_time = float("inf")
    for _ in range(repeat):
        held = SessionBodies()
        records = []
        encoding = adding = 0.0
        for (rid, role, body), key in zip(bodies, keys, strict=True):
            start = time.perf_counter()
            record = held.encode(rid, role, rid + ".json", body, key)
            middle = time.perf_counter()
            held.add(record)
            adding += time.perf_counter() - middle
            encoding += middle - start
            records.append(record)
        encode_time, add_time = min(encode_time, encoding), min(add_time, adding)

    def scan_all() -> None:
        for _, _, body in bodies:
            with contextlib.suppress(NotCuttable):
                scan_body(body)

    load = min(load_and_rebuild_seconds(bodies, records) for _ in range(repeat))
    uncached = min(uncached_rebuild_seconds(bodies, records) for _ in range(repeat))
    landed = sum(len(r.payload) + len(orjson.dumps(r.meta)) for r in records)
    copies = sum(1 for r in records if r.meta["segs"][0][0] == "copy")
    whole = sum(1 for r in records if "why" in r.meta)
    mb = source / 1e6
    print(f"{name}: {len(bodies)} bodies, {source:,} source bytes, {copies} copies, {whole} whole")
    print(f"  scan           {mb / best_of(repeat, scan_all):8.1f} MB/s")
    print(f"  encode         {mb / encode_time:8.1f} MB/s")
    print(f"  add            {mb / add_time:8.1f} MB/s")
    print(f"  load + rebuild {mb / load:8.1f} MB/s (fresh session: add all, rebuild all)")
    print(f"  rebuild        {mb / uncached:8.1f} MB/s (no cache besides the chain tips)")
    print(f"  landed         {landed:,} bytes = {landed / source:.1%} of the source")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=60, help="main-chain calls (default 60)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per figure (default 3)")
    args = parser.parse_args()
    print(f"python {sys.version.split()[0]}, pid {os.getpid()}")
    measure(
        f"synthetic session ({args.calls} main calls)", synthetic_session(args.calls), args.repeat
    )
    with tempfile.TemporaryDirectory(prefix="asz-bench-codec-core-") as tmp:
        captured = synth_capture(Path(tmp))
        if captured is None:
            print("default synth capture: asz.synth.synthesize is not available")
        else:
            measure("default synth capture", captured, args.repeat)


if __name__ == "__main__":
    main()
