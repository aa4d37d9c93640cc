"""The tables as DuckDB views: ``calls``, ``sessions`` and ``breaks``, over a directory of
them or a bucket's prefix.

DuckDB reads a directory itself. A bucket is read through the archive's own client, not
DuckDB's ``httpfs`` (an extension DuckDB downloads at first use, which a locked-down machine
cannot): the files a reader counts are copied once into a local cache
(``$XDG_CACHE_HOME/asz/analytics/<digest>``), each again only when its ETag changes (files are
never rewritten, so only new ones come down) and removed there once the bucket no longer
counts them. Each view reads the files :func:`asz.analytics.names.counted` picks, with the
``day`` of their directory; ``sessions`` keeps each session's latest row.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import orjson

from asz.analytics.names import TABLE_NAMES, Part, counted, parse_part
from asz.analytics.place import DirectoryPlace, Place, open_place
from asz.archive.location import is_archive

if TYPE_CHECKING:
    import duckdb

    from asz.config import ArchiveConfig

__all__ = ["MEMORY_LIMIT", "connect", "local_tables"]

MEMORY_LIMIT = "512MB"
"""What DuckDB may hold before it spills to disk: ``asz sql`` stays well under 1 GB."""
_STAMPS = "stamps.json"


def local_tables(location: str, settings: ArchiveConfig) -> Path:
    """A directory holding the tables at ``location``: itself, or the local copy of a
    bucket's, brought up to date."""
    if not is_archive(location):
        return Path(location).expanduser().absolute()
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "asz" / "analytics"
    directory = base / hashlib.sha256(location.rstrip("/").encode()).hexdigest()[:16]
    _sync(open_place(location, settings), directory)
    return directory


def _sync(place: Place, directory: Path) -> None:
    """Copies the files ``place`` counts into ``directory``, and removes the others there."""
    from asz.store.atomic import private_dir, replace_derived

    private_dir(directory)
    listed = {item.path: item for item in place.list()}
    wanted = {part.path for part in counted(_parts(listed))}
    try:
        stamps = orjson.loads((directory / _STAMPS).read_bytes())
    except (OSError, orjson.JSONDecodeError):
        stamps = {}
    stamps = stamps if isinstance(stamps, dict) else {}
    local = DirectoryPlace(directory)
    for item in local.list():
        if item.path != _STAMPS and item.path not in wanted:
            local.remove(item.path)
            stamps.pop(item.path, None)
    for path in sorted(wanted):
        if stamps.get(path) == listed[path].stamp and (directory / path).is_file():
            continue
        replace_derived(directory / path, place.read(path))
        stamps[path] = listed[path].stamp
    replace_derived(directory / _STAMPS, orjson.dumps(stamps))


def _parts(paths: Iterable[str]) -> list[Part]:
    return [part for path in paths if (part := parse_part(path)) is not None]


def connect(directory: Path) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB with the tables under ``directory`` as views."""
    import duckdb

    con = duckdb.connect(config={"memory_limit": MEMORY_LIMIT, "threads": os.cpu_count() or 1})
    con.execute("SET TimeZone = 'UTC'")  # times are said in UTC, as every asz figure is
    every = _parts(
        Path(parent, name).relative_to(directory).as_posix()
        for parent, _dirs, names in os.walk(directory)
        for name in names
    )
    shown = counted(every)
    for table in TABLE_NAMES:
        files = sorted(str(directory / part.path) for part in shown if part.table == table)
        if len(files) < sum(part.table == table for part in every):
            # A compaction is between its write and its removals: name the counted files.
            named = _sql_list(files)
        else:
            named = _sql_list([f"{directory}/{table}/day=*/part-*.parquet"])
        if files:
            source = (
                f"read_parquet({named}, hive_partitioning = true, "
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
