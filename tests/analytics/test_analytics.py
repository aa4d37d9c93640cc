"""``asz export parquet``, ``asz sql`` and ``asz cache`` over the tables, run as the real
``asz`` on roots the real collector landed from synthetic captures.

The tables must give the figures ``asz cache`` gives from the landed files, to the cent; a
pass writes each row once, another pass nothing it wrote already; a day's files compacted
are counted once; another machine's files are never touched; a write killed at any of its
named points and run again leaves every row there once.
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analytics_roots import FactsMachine, parts
from support.serving import serving

from asz.crashpoints import ANALYTICS_POINTS, ENV, EXIT_CODE
from asz.synth import SynthOptions

LISTINGS = ((), ("--by", "cause"), ("--by", "project"), ("--by", "day"))
KEYS = "SELECT count(*) AS n, count(DISTINCT coalesce(message_id, request_body)) AS keys FROM calls"


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> FactsMachine:
    """Three sessions with a subagent each, landed once; tests copy the root before changing
    it."""
    machine = FactsMachine(tmp_path_factory.mktemp("laptop"))
    machine.land(SynthOptions(seed=4, sessions=3, subagents=1))
    return machine


@pytest.fixture
def machine(landed: FactsMachine, tmp_path: Path) -> FactsMachine:
    """A copy of the landed machine of the test's own."""
    copy = FactsMachine(tmp_path / "m")
    shutil.copytree(landed.base, copy.base, symlinks=True)
    return copy


@pytest.mark.slow
def test_asz_cache_from_the_tables_gives_its_figures_from_the_landed_files(
    machine: FactsMachine,
) -> None:
    written = machine.export()
    assert written["sessions"] == 3 and written["session_rows"] == 3
    assert written["calls"] > 60 and written["breaks"] > 0 and written["problems"] == []
    config = machine.tables_config()
    for listing in LISTINGS:
        from_files = machine.cache(*listing)
        from_tables = machine.cache(*listing, config=config)
        assert from_tables == from_files, listing
    total = machine.sql("SELECT sum(waste_usd) AS waste, sum(cost_usd) AS cost FROM calls")[0]
    sessions = machine.cache()
    assert round(total["waste"], 2) == round(sum(s["waste_usd"] for s in sessions), 2)
    assert round(total["cost"], 2) == round(sum(s["cost_usd"] for s in sessions), 2)

    # The tables are what was read: with every body damaged and no report kept, the landed
    # files could not give these figures.
    damage_bodies(machine)
    for kept in (*machine.root.glob("*/cache.json"), *machine.root.glob("*/summary.json")):
        kept.unlink()
    assert machine.cache(config=config) == sessions


def damage_bodies(machine: FactsMachine) -> None:
    """Every landed body file overwritten with zeros (tests may run as root, which reads a
    file whatever its mode)."""
    for body in machine.root.rglob("provider_body-*.asz"):
        body.write_bytes(bytes(body.stat().st_size))
    done = machine.asz("cache", "--root", str(machine.root), "--config", str(machine.no_config()))
    assert done.returncode != 0


def test_the_files_are_typed_zstd_private_and_name_their_schema(machine: FactsMachine) -> None:
    machine.export()
    root_id = (machine.root / "_state" / "root-id").read_text().strip()
    files = parts(machine.tables)
    days = {path.split("/")[1] for path in files}
    assert days == {"day=2026-09-18"}
    assert files == sorted(
        f"{t}/day=2026-09-18/part-{root_id}-00000001.parquet"
        for t in ("breaks", "calls", "sessions")
    )
    calls = pq.ParquetFile(machine.tables / files[1])
    schema = calls.schema_arrow
    assert schema.metadata[b"asz.schema"] == b"1"
    assert schema.field("time").type == pa.timestamp("ms", tz="UTC")
    assert schema.field("cost_usd").type == pa.decimal128(18, 6)
    assert schema.field("input_tokens").type == pa.int64()
    assert schema.field("side").type == pa.bool_()
    assert calls.metadata.row_group(0).column(0).compression == "ZSTD"
    for path in machine.tables.rglob("*"):
        assert path.stat().st_mode & 0o777 == (0o700 if path.is_dir() else 0o600), path


def test_a_pass_writes_only_what_changed_and_each_row_once(machine: FactsMachine) -> None:
    first = machine.export()
    again = machine.export()
    assert again["sessions_unchanged"] == 3 and again["files_written"] == 0
    machine.land_more(seed=11)
    more = machine.export()
    assert more["sessions"] == 1 and more["sessions_unchanged"] == 3
    [counts] = machine.sql(KEYS)
    assert counts["n"] == counts["keys"] == first["calls"] + more["calls"]
    [sessions] = machine.sql("SELECT count(*) AS n FROM sessions")
    assert sessions["n"] == 4
    assert machine.cache(config=machine.tables_config()) == machine.cache()


@pytest.mark.slow
def test_a_day_s_files_are_compacted_into_one_counted_once(machine: FactsMachine) -> None:
    machine.export()
    root_id = (machine.root / "_state" / "root-id").read_text().strip()
    machine.land_more(seed=11)
    machine.export()
    before = machine.sql(KEYS)
    assert len(parts(machine.tables / "calls")) == 2
    compacted = machine.export()
    assert compacted["files_compacted"] == 6
    assert parts(machine.tables / "calls") == [
        f"day=2026-09-18/part-{root_id}-00000001-00000002.parquet"
    ]
    assert machine.sql(KEYS) == before
    [sessions] = machine.sql(
        f"SELECT count(*) AS n FROM read_parquet('{machine.tables}/sessions/*/*.parquet')"
    )
    assert sessions["n"] == 4  # one row per session kept by the compaction
    assert machine.cache(config=machine.tables_config()) == machine.cache()


@pytest.mark.slow
def test_a_compacted_file_and_the_files_it_covers_are_counted_once(
    machine: FactsMachine,
) -> None:
    """A compaction stopped after its write, before removing what it covers."""
    machine.export()
    machine.land_more(seed=11)
    machine.export()
    before = machine.sql(KEYS)
    kept = machine.base / "kept"
    shutil.copytree(machine.tables, kept)
    machine.export()
    for path in parts(kept):
        if not (machine.tables / path).exists():
            shutil.copy2(kept / path, machine.tables / path)
    assert len(parts(machine.tables / "calls")) == 3
    assert machine.sql(KEYS) == before
    assert machine.cache(config=machine.tables_config()) == machine.cache()
    machine.export()  # the next pass removes what the compacted file covers
    assert len(parts(machine.tables / "calls")) == 1


@pytest.mark.slow
def test_another_machine_s_files_are_never_rewritten_or_removed(machine: FactsMachine) -> None:
    """Two files of another machine for a past day (which this one would compact, were they
    its own) stay as they are, and are counted."""
    first = machine.export()
    theirs = {}
    for table_file in parts(machine.tables):
        table, day, _name = table_file.split("/")
        for pass_number in (1, 2):
            other = f"{table}/{day}/part-0123456789abcdef-{pass_number:08d}.parquet"
            shutil.copy2(machine.tables / table_file, machine.tables / other)
            theirs[other] = (machine.tables / other).read_bytes()
    machine.land_more(seed=11)
    more = machine.export()
    machine.export()
    for path, data in theirs.items():
        assert (machine.tables / path).read_bytes() == data
    [counts] = machine.sql("SELECT count(*) AS n FROM calls")
    assert counts["n"] == 3 * first["calls"] + more["calls"]


@pytest.mark.slow
def test_rows_of_a_session_still_landing_wait_for_it(machine: FactsMachine) -> None:
    """A session that landed something within ``quiet_seconds`` has only the calls a later
    call of their stream follows written; the rest, and its sessions row, once it is quiet."""
    machine.export()
    machine.land_more(seed=12)
    busy = machine.base / "busy.toml"
    busy.write_text("[analytics]\nquiet_seconds = 1e12\n")
    written = machine.export("--config", str(busy))
    assert written["sessions"] == 1 and written["waiting"] > 0 and written["calls"] > 0
    assert written["session_rows"] == 0 and written["unfinished"] == 1
    # asz cache reads that session from its landed files, the others from the tables.
    assert machine.cache(config=machine.tables_config()) == machine.cache()
    again = machine.export("--config", str(busy))
    assert again["calls"] == 0 and again["waiting"] == written["waiting"]
    quiet = machine.export()
    assert quiet["calls"] == written["waiting"] and quiet["session_rows"] == 1
    [counts] = machine.sql(KEYS)
    assert counts["n"] == counts["keys"]
    [sessions] = machine.sql("SELECT count(*) AS n FROM sessions")
    assert sessions["n"] == 4
    assert machine.cache(config=machine.tables_config()) == machine.cache()


@pytest.mark.slow
@pytest.mark.parametrize("point", [*ANALYTICS_POINTS, "analytics.written:2"])
def test_a_write_killed_at_each_named_point_leaves_every_row_once(
    machine: FactsMachine, point: str
) -> None:
    machine.export()
    machine.land_more(seed=11)
    machine.export()
    machine.land_more(seed=13)
    crashed = machine.asz_env(
        {**machine.env(), ENV: point},
        "export",
        "parquet",
        "--root",
        str(machine.root),
        "--to",
        str(machine.tables),
    )
    assert crashed.returncode == EXIT_CODE, f"{point} was never reached: {crashed.stderr}"
    machine.export()
    [counts] = machine.sql(KEYS)
    assert counts["n"] == counts["keys"]
    [breaks] = machine.sql("SELECT count(*) AS n, count(DISTINCT message_id) AS keys FROM breaks")
    assert breaks["n"] == breaks["keys"]
    from_files = machine.cache()
    assert (
        sum(s["calls"] for s in from_files)
        == machine.sql("SELECT count(*) AS n FROM calls WHERE NOT side")[0]["n"]
    )
    assert machine.cache(config=machine.tables_config()) == from_files


def test_a_pass_reads_and_writes_the_keys_of_the_sessions_it_reads_only(
    machine: FactsMachine,
) -> None:
    """The record holds a line per session, not the keys of every row ever written: those are
    in a file per session, which a pass that does not read the session leaves alone."""
    first = machine.export()
    [record] = (machine.root / "_state" / "analytics").glob("*.json")
    keys_dir = record.with_suffix("")
    before = {path.name: path.stat().st_mtime_ns for path in keys_dir.iterdir()}
    assert len(before) == 3
    assert (
        sum(len(orjson.loads(keys_dir.joinpath(n).read_bytes())["keys"]) for n in before)
        == (first["calls"])
    )
    machine.land_more(seed=11)
    more = machine.export()
    after = {path.name: path.stat().st_mtime_ns for path in keys_dir.iterdir()}
    assert more["sessions"] == 1 and len(after) == 4
    assert {name: after[name] for name in before} == before
    sessions = orjson.loads(record.read_bytes())["sessions"]
    assert len(sessions) == 4 and all(
        set(entry) == {"files", "keys"} for entry in sessions.values()
    )
    # A key file that does not read is rebuilt from the target: no row is written twice.
    for name in after:
        (keys_dir / name).write_bytes(b"")
    record.write_bytes(record.read_bytes().replace(b'"files":', b'"files":null,"was":'))
    again = machine.export()
    assert again["sessions"] == 4 and again["calls"] == 0
    [counts] = machine.sql(KEYS)
    assert counts["n"] == counts["keys"] == first["calls"] + more["calls"]


def test_a_lost_record_is_rebuilt_from_the_machine_s_own_files(machine: FactsMachine) -> None:
    machine.export()
    shutil.rmtree(machine.root / "_state" / "analytics")
    again = machine.export()
    assert again["calls"] == 0 and again["sessions_unchanged"] == 3
    [counts] = machine.sql(KEYS)
    assert counts["n"] == counts["keys"]


def age(tables: Path, seconds: float = 3600.0) -> dict[Path, int]:
    """Every day directory of ``tables`` as if last modified ``seconds`` ago; their times."""
    then = time.time_ns() - int(seconds * 1e9)
    days = {day: then for day in tables.glob("*/day=*")}
    for day in days:
        os.utime(day, ns=(then, then))
    return days


def test_a_day_directory_left_alone_is_not_listed_again_and_one_modified_is(
    machine: FactsMachine,
) -> None:
    machine.export()
    days = age(machine.tables)
    count = "SELECT count(*) AS n FROM calls"
    [before] = machine.sql(count)
    day = max(path for path in days if path.parent.name == "calls")
    [part] = sorted(day.glob("part-*.parquet"))
    other = day / ("part-" + "f" * 16 + part.name[len("part-") + 16 :])
    shutil.copyfile(part, other)  # another machine's file of the same rows
    os.utime(day, ns=(days[day], days[day]))
    assert machine.sql(count) == [before], "a directory with its old time is not listed"
    os.utime(day)  # modified now
    [after] = machine.sql(count)
    assert after["n"] == before["n"] + pq.read_metadata(part).num_rows > before["n"]


def test_a_copy_made_before_stamps_were_kept_is_not_made_again(machine: FactsMachine) -> None:
    """A local copy whose sources say only each day's files (as readers saved them before the
    directories' times were kept) is current: its days are listed again, not merged again."""
    machine.export()
    age(machine.tables)
    count = "SELECT count(*) AS n FROM calls"
    rows = machine.sql(count)
    (sources,) = (machine.base / "cache" / "asz" / "analytics").glob("*/sources.json")
    saved = orjson.loads(sources.read_bytes())
    sources.write_bytes(orjson.dumps({day: value["paths"] for day, value in saved.items()}))
    merged = {path: path.stat().st_ino for path in sources.parent.glob("*/day=*/merged.parquet")}
    assert merged
    assert machine.sql(count) == rows
    assert {path: path.stat().st_ino for path in merged} == merged
    assert orjson.loads(sources.read_bytes()) == saved


@pytest.mark.slow
def test_sql_prints_a_table_json_or_csv_and_says_what_is_wrong(machine: FactsMachine) -> None:
    machine.export()
    age(machine.tables)
    query = "SELECT cause, count(*) AS breaks FROM breaks GROUP BY cause ORDER BY cause"
    rows = machine.sql(query)
    assert rows and all(set(row) == {"cause", "breaks"} for row in rows)
    (sources,) = (machine.base / "cache" / "asz" / "analytics").glob("*/sources.json")
    was = sources.stat()
    assert machine.sql(query) == rows
    now = sources.stat()
    assert (now.st_ino, now.st_mtime_ns) == (was.st_ino, was.st_mtime_ns), "nothing rewritten"
    csv = machine.asz("sql", query, "--from", str(machine.tables), "--csv")
    lines = csv.stdout.decode().splitlines()
    assert lines[0] == "cause,breaks" and len(lines) == len(rows) + 1
    plain = machine.asz("sql", query, "--from", str(machine.tables))
    assert plain.returncode == 0 and rows[0]["cause"] in plain.stdout.decode()
    bad = machine.asz("sql", "SELECT nothing FROM calls", "--from", str(machine.tables))
    assert bad.returncode == 1 and b"nothing" in bad.stderr
    unnamed = machine.asz("sql", "SELECT 1", "--config", str(machine.no_config()))
    assert unnamed.returncode == 2 and b"[analytics] url" in unnamed.stderr
    empty = machine.asz(
        "sql", "SELECT count(*) AS n FROM calls", "--from", str(machine.base / "none"), "--json"
    )
    assert empty.returncode == 0 and empty.stdout.strip() == b'[{"n":0}]'


@pytest.mark.slow
def test_the_web_session_list_reads_the_tables_when_the_root_has_them(
    machine: FactsMachine,
) -> None:
    machine.export()
    home, cache = machine.base / "home", {"XDG_CACHE_HOME": str(machine.base / "cache")}
    tables = machine.tables_config()

    def session_list(config: Path) -> str:
        with serving(machine.root, home, "--config", str(config), env=cache) as served:
            page = served.get("/?sort=waste")
        assert page.status == 200
        return page.text

    from_files = session_list(machine.no_config())
    assert session_list(tables) == from_files
    # With every body damaged and nothing derived kept, only the tables give the list.
    damage_bodies(machine)
    for kept in (*machine.root.glob("*/cache.json"), *machine.root.glob("*/summary.json")):
        kept.unlink()
    assert session_list(tables) == from_files
    assert session_list(machine.no_config()) != from_files


def test_a_secret_in_a_breaks_detail_reaches_no_table(landed: FactsMachine) -> None:
    """A detail quotes what changed between two requests, which may be a secret: the call and
    break rows take it through the ``[redact]`` policy, as every export does."""
    from datetime import UTC, datetime

    from asz.analytics.rows import session_rows
    from asz.redact import Policy, Redactor
    from asz.store import open_store
    from asz.view.kept import reported
    from asz.view.prices import price_table

    secret = "AKIAZ7EXAMPLE4NOTREAL"
    store = open_store(landed.root)
    session = store.session(store.sessions()[0])
    found = reported(session, price_table(), keep=False)
    report = found.report
    broken = [row for row in report["rows"] if row["rewritten_tokens"] and row["message_id"]]
    assert broken, "the capture has no break to carry a detail"
    for row in broken:
        row["detail"] = f"system prompt changed: key {secret} added"
    rows = session_rows(
        session.summary(),
        report,
        found.facts,
        machine="m",
        landed_files=1,
        priced_by="p",
        updated=datetime.now(UTC),
        redact=Redactor(Policy(), b"analytics-test-key-0123").text,
    )
    details = [fact["detail"] for _key, fact in rows.calls] + [
        fact["detail"] for fact in rows.breaks.values()
    ]
    said = " ".join(detail for detail in details if detail)
    assert secret not in said
    assert "«redacted:aws-access-key:" in said
