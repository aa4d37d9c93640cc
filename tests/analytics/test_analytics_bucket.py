"""The tables in a bucket: written through the archive's own client and read back by
``asz sql`` and ``asz cache`` through it, from a real S3-protocol server on the loopback (no
DuckDB extension, no other network)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support.analytics_roots import FactsMachine
from support.archive_roots import bucket_prefix
from support.s3server import BUCKET, S3Server

from asz.synth import SynthOptions

QUERY = (
    "SELECT project, cause, count(*) AS breaks, sum(waste_usd) AS waste FROM breaks "
    "GROUP BY ALL ORDER BY waste DESC, cause, project"  # a whole order: ties read either way
)


@pytest.fixture
def machine(tmp_path: Path) -> FactsMachine:
    found = FactsMachine(tmp_path / "laptop")
    found.land(SynthOptions(seed=4, sessions=3, subagents=1))
    return found


@pytest.mark.slow
def test_tables_in_a_bucket_read_as_the_same_tables_in_a_directory(
    machine: FactsMachine, s3: S3Server, tmp_path: Path
) -> None:
    prefix = bucket_prefix(tmp_path)
    url = f"s3://{BUCKET}/{prefix}/facts"
    config = machine.configure(s3.endpoint, prefix)
    written = machine.export("--config", str(config), to=url)
    local = machine.export()
    assert written["calls"] == local["calls"] > 0
    keys = sorted(key.removeprefix(f"{prefix}/facts/") for key in s3.objects(f"{prefix}/facts/"))
    assert [key.rsplit("/", 1)[0] for key in keys] == [
        f"{table}/day=2026-09-18" for table in ("breaks", "calls", "sessions")
    ]

    in_bucket = machine.sql(QUERY, "--config", str(config), source=url)
    assert in_bucket == machine.sql(QUERY) and in_bucket

    both = machine.base / "both.toml"
    both.write_text(config.read_text() + f'\n[analytics]\nurl = "{url}"\n')
    for listing in ((), ("--by", "cause"), ("--by", "day")):
        assert machine.cache(*listing, config=both) == machine.cache(*listing)

    # A second pass adds nothing; the reader's copy follows the bucket.
    again = machine.export("--config", str(config), to=url)
    assert again["files_written"] == 0
    assert machine.sql(QUERY, "--config", str(config), source=url) == in_bucket


def test_an_unreachable_bucket_is_said_and_nothing_is_recorded(
    machine: FactsMachine, tmp_path: Path
) -> None:
    config = machine.configure("http://127.0.0.1:9", "nowhere", attempts=1)
    done = machine.asz(
        "export",
        "parquet",
        "--root",
        str(machine.root),
        "--to",
        f"s3://{BUCKET}/nowhere",
        "--config",
        str(config),
    )
    assert done.returncode != 0
    assert b"Traceback" not in done.stderr and done.stderr
    listed = machine.asz(
        "sql", "SELECT 1", "--from", f"s3://{BUCKET}/nowhere", "--config", str(config)
    )
    assert listed.returncode != 0 and b"Traceback" not in listed.stderr
    state = list((machine.root / "_state").glob("analytics/*.json"))
    assert all(orjson.loads(path.read_bytes())["sessions"] == {} for path in state)
