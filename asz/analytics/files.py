"""A table's rows as the bytes of one Parquet file, and back: zstd, typed by
:mod:`.schema`, with the schema version in the file's metadata."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from asz.analytics.schema import SCHEMA_VERSION, TABLES, VERSION_KEY, with_version

__all__ = ["parquet_bytes", "read_parquet"]


def parquet_bytes(table: str, rows: Sequence[dict[str, Any]] | pa.Table) -> bytes:
    """The file holding ``rows`` of ``table`` (dicts with the schema's fields, or a table of
    that schema)."""
    schema = with_version(TABLES[table], table)
    data = (
        rows.cast(schema)
        if isinstance(rows, pa.Table)
        else pa.Table.from_pylist(list(rows), schema=schema)
    )
    sink = io.BytesIO()
    pq.write_table(data, sink, compression="zstd", row_group_size=1 << 20)
    return sink.getvalue()


def read_parquet(table: str, data: bytes, columns: Sequence[str] | None = None) -> pa.Table:
    """A file of ``table`` read back; ValueError when it is not one, or another version's."""
    try:
        found = pq.read_table(io.BytesIO(data), columns=list(columns) if columns else None)
    except (pa.ArrowException, OSError) as err:
        raise ValueError(f"not a Parquet file: {err}") from None
    version = (found.schema.metadata or {}).get(VERSION_KEY)
    if version != str(SCHEMA_VERSION).encode():
        raise ValueError(f"schema {version!r}, not {SCHEMA_VERSION}")
    return found
