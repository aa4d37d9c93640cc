"""The tables as DuckDB views: ``calls``, ``sessions`` and ``breaks``, over a directory of
them or a bucket's prefix.

Each machine writes its own file per table and day, so a team's year is some 73,000 small
files per table, and an engine opening each pays for each: a quarter's ranking would take
tens of seconds. A reader therefore keeps a local copy in which every day is one file
(``$XDG_CACHE_HOME/asz/analytics/<digest>/<table>/day=<day>/merged.parquet``): the files a
reader counts (:func:`asz.analytics.names.counted`) of that day, of every machine, in one.
Files are never rewritten under their name (a compaction writes a new one), so a day's copy
holds while the names it was made from are the day's names; only the days whose names
changed (today's, mostly) are made again, and a day no longer there is removed. The first
read of a year takes a while; every later one reads a file or two. In a directory, a day
whose directory has not been modified since it was last listed is not listed again
(``Place.listing``).

A bucket is read through the archive's own client, not DuckDB's ``httpfs`` (an extension
DuckDB downloads at first use, which a locked-down machine cannot reach): the same
credentials and endpoint as ``asz push``. ``sessions`` keeps each session's latest row.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from asz.analytics.names import TABLE_NAMES, counted, parse_part
from asz.analytics.place import Place, open_place

if TYPE_CHECKING:
    import duckdb

    from asz.config import ArchiveConfig

__all__ = ["MEMORY_LIMIT", "connect", "local_tables"]

MEMORY_LIMIT = "512MB"
"""What DuckDB may hold before it spills to disk: ``asz sql`` stays well under 1 GB."""
MERGED = "merged.parquet"
_SOURCES = "sources.json"


def local_tables(location: str, settings: ArchiveConfig) -> Path:
    """The local copy of the tables at ``location`` (a directory or ``s3://``), a file per
    table and day, brought up to date."""
    place = open_place(location, settings)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "asz" / "analytics"
    directory = base / hashlib.sha256(place.shown.encode()).hexdigest()[:16]
    _merge(place, directory)
    return directory


def _merge(place: Place, directory: Path) -> None:
    """Makes ``directory`` hold, per table and day, the rows of the files ``place`` counts."""
    from asz.analytics.files import parquet_bytes, read_parquet
    from asz.atomic import private_dir, replace_derived

    private_dir(directory)
    made = _sources(directory)
    listed = place.listing(
        {day: stamp for day, (stamp, _paths) in made.items() if stamp is not None}
    )
    days: dict[str, tuple[int | None, list[str]]] = {}
    for day, (stamp, names) in listed.items():
        if names is None:  # not modified since it was listed
            days[day] = (stamp, made[day][1])
        elif parts := counted(p for name in names if (p := parse_part(name)) is not None):
            days[day] = (stamp, sorted(part.path for part in parts))
    gone = set(made) - set(days)
    for day in gone:
        shutil.rmtree(directory / day, ignore_errors=True)
        del made[day]
    # Saved at each change, so that a reader stopped midway keeps the days it made; a query
    # over tables that did not change writes nothing.
    changed = bool(gone)
    for day, (stamp, paths) in sorted(days.items()):
        if day in made and made[day][1] == paths and (directory / day / MERGED).is_file():
            changed = changed or made[day][0] != stamp
            made[day] = (stamp, paths)
            continue
        import pyarrow as pa

        table = day.split("/", 1)[0]
        rows = pa.concat_tables(
            [read_parquet(table, place.read(path)) for path in paths], promote_options="default"
        )
        replace_derived(directory / day / MERGED, parquet_bytes(table, rows))
        made[day] = (stamp, paths)
        _save_sources(directory, made)
        changed = False
    if changed:
        _save_sources(directory, made)


def _sources(directory: Path) -> dict[str, tuple[int | None, list[str]]]:
    """What each day of the local copy was made from: the stamp of the day's directory when it
    was listed, and the files its copy holds."""
    try:
        saved = orjson.loads((directory / _SOURCES).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        return {}
    made: dict[str, tuple[int | None, list[str]]] = {}
    for day, value in saved.items() if isinstance(saved, dict) else ():
        if isinstance(value, list):  # as a reader without stamps saved it
            made[day] = (None, value)
        elif isinstance(value, dict) and isinstance(value.get("paths"), list):
            stamp = value.get("stamp")
            made[day] = (stamp if type(stamp) is int else None, value["paths"])
    return made


def _save_sources(directory: Path, made: dict[str, tuple[int | None, list[str]]]) -> None:
    from asz.atomic import replace_derived

    value = {day: {"stamp": stamp, "paths": paths} for day, (stamp, paths) in made.items()}
    replace_derived(directory / _SOURCES, orjson.dumps(value))


def connect(directory: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the tables of the local copy ``directory`` as views."""
    import duckdb

    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "threads": os.cpu_count() or 1})
    con.execute("SET TimeZone = 'UTC'")  # times are said in UTC, as every asz figure is
    for table in TABLE_NAMES:
        if any((directory / table).glob(f"day=*/{MERGED}")):
            files = _sql_list([f"{directory}/{table}/day=*/{MERGED}"])
            source = (
                f"read_parquet({files}, hive_partitioning = true, "
                "hive_types = {'day': DATE}, union_by_name = true)"
            )
        else:
            from asz.analytics.schema import TABLES  # pyarrow: loaded only for an empty table

            con.register(f"_empty_{table}", TABLES[table].empty_table())
            source = f"(SELECT *, NULL::DATE AS day FROM _empty_{table})"  # noqa: S608
        latest = (
            " QUALIFY row_number() OVER (PARTITION BY session ORDER BY updated DESC) = 1"
            if table == "sessions"
            else ""
        )
        # Our own table names and paths (quoted by _sql_list); nothing a person typed.
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM {source}{latest}")  # noqa: S608
    return con


def _sql_list(paths: Sequence[str]) -> str:
    return "[" + ", ".join("'" + path.replace("'", "''") + "'" for path in paths) + "]"
