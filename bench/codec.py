"""How small and how fast the body codec is, on synthetic and on replayed real captures.

Prints, per capture: source bytes (what Claude Code wrote), record bytes before compression,
bytes on disk after landing, both ratios, encode and rebuild throughput in MB/s of source
bytes (one core), and the process's peak RSS. The baseline is the landed ratio the provider
bodies specification measured on two real captures (21.6-25.5% of the bytes written).

    .venv/bin/python bench/codec.py [--sessions N] [--samples DIR]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import orjson

from asz.bodykeys import read_keys
from asz.store import BodyLander, IncomingBody, open_store
from asz.store._codec import SessionBodies
from asz.synth import SynthOptions, synthesize

BASELINE_LANDED = 0.216  # the better of the specification's two measured captures


def incoming_bodies(capture: Path, expected: dict) -> dict[str, list[IncomingBody]]:
    """Every body of a capture that a session can claim, grouped by session, in landing order."""
    by_session: dict[str, list[IncomingBody]] = defaultdict(list)
    for entry in expected["bodies"]:
        path = capture / entry["file"]
        data = path.read_bytes()
        role = entry["role"]
        stem = path.name.removesuffix(f".{role}.json")
        by_session[entry["session"]].append(
            IncomingBody(
                record_id=entry["id"],
                role=role,
                src=path.name,
                body=data,
                keys=read_keys(role, stem, data),
                mtime_ns=path.stat().st_mtime_ns,
            )
        )
    for bodies in by_session.values():
        bodies.sort(key=lambda body: (body.mtime_ns, body.src))
    return by_session


def measure(name: str, capture: Path, expected: dict, workdir: Path) -> None:
    sessions = incoming_bodies(capture, expected)
    source = sum(len(body.body) for bodies in sessions.values() for body in bodies)

    records = 0
    started = time.process_time()
    for bodies in sessions.values():
        held = SessionBodies()
        for body in bodies:
            record = held.encode(body.record_id, body.role, body.src, body.body, body.keys)
            held.add(record)
            records += len(orjson.dumps(record.meta)) + len(record.payload)
    encode_seconds = time.process_time() - started

    store = open_store(workdir / f"root-{name}", compression="zstd")
    lander = BodyLander(store)
    started = time.process_time()
    on_disk = 0
    for session, bodies in sessions.items():
        on_disk += lander.land(session, bodies, 2 * 1024 * 1024).tally.landed_bytes
    land_seconds = time.process_time() - started

    started = time.process_time()
    rebuilt = 0
    for session, bodies in sessions.items():
        reader = store.session(session)
        for body in bodies:
            data = reader.body(body.record_id)
            if data != body.body:
                sys.exit(f"{body.src} did not rebuild")
            rebuilt += len(data)
    rebuild_seconds = time.process_time() - started

    mb = source / 1e6
    print(f"== {name}: {sum(map(len, sessions.values()))} bodies in {len(sessions)} sessions")
    print(f"source bytes          {source:>14,}")
    print(f"records (raw)         {records:>14,}  {100 * records / source:6.2f}% of source")
    print(
        f"on disk (zstd)        {on_disk:>14,}  {100 * on_disk / source:6.2f}% of source "
        f"(baseline {100 * BASELINE_LANDED:.1f}%: "
        f"{BASELINE_LANDED * source / max(on_disk, 1):.1f}x smaller)"
    )
    print(f"encode                {mb / encode_seconds:10.1f} MB/s")
    print(f"land (encode+write+read back+compress) {mb / land_seconds:6.1f} MB/s")
    print(f"rebuild (read+rebuild) {mb / rebuild_seconds:9.1f} MB/s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument(
        "--samples",
        type=Path,
        default=Path(
            os.environ.get("ASZ_SAMPLES", Path(__file__).parents[2] / "shared/claude-code-samples")
        ),
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="asz-bench-codec-") as tmp:
        work = Path(tmp)
        capture = work / "synth"
        options = SynthOptions(sessions=args.sessions, turns=args.turns)
        measure("synth", capture, synthesize(capture, options), work)
        real = args.samples / "transcripts" / "v2.1.39-subagents-dir"
        if real.is_dir():
            replay = work / "replay"
            expected = synthesize(replay, SynthOptions(from_transcripts=real))
            measure("replay of v2.1.39 sample", replay, expected, work)
        else:
            print(f"(no samples at {args.samples}: replay skipped)")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS              {peak:10.1f} MB")


if __name__ == "__main__":
    main()
