"""The three tables' columns, typed: what every Parquet file of a table holds, whichever
machine wrote it, and what ``asz sql`` shows as the views ``calls``, ``sessions`` and
``breaks`` (docs/analytics.md).

Times are ``timestamp[ms, UTC]``; token counts ``int64``; dollars ``decimal(18, 6)``: the
cache report rounds every call's cost and waste to a millionth of a dollar
(``asz.view.prices.DIGITS``), and a decimal of six places holds that figure exactly, so a sum
over twenty million calls in DuckDB, Athena or Spark is exact where a float's would drift, and
a total agrees with ``asz cache`` to the cent (to the millionth, in fact). The schema's version
is in each file's metadata (``asz.schema``): a reader meeting another version says so.
"""

from __future__ import annotations

import pyarrow as pa

from asz.analytics.names import TABLE_NAMES

__all__ = [
    "BREAKS",
    "CALLS",
    "SCHEMA_VERSION",
    "SESSIONS",
    "TABLES",
    "TABLE_KEY",
    "TIME",
    "USD",
    "VERSION_KEY",
    "with_version",
]

SCHEMA_VERSION = 1
VERSION_KEY = b"asz.schema"
TABLE_KEY = b"asz.table"
USD = pa.decimal128(18, 6)
TIME = pa.timestamp("ms", tz="UTC")
_TOKENS = pa.int64()

_WHO = [
    pa.field("session", pa.string(), nullable=False),
    pa.field("project", pa.string()),
    pa.field("machine", pa.string(), nullable=False),
]
_USAGE = [
    pa.field("input_tokens", _TOKENS),
    pa.field("output_tokens", _TOKENS),
    pa.field("cache_read_input_tokens", _TOKENS),
    pa.field("cache_creation_input_tokens", _TOKENS),
    pa.field("cache_write_5m_input_tokens", _TOKENS),
    pa.field("cache_write_1h_input_tokens", _TOKENS),
]

CALLS = pa.schema(
    [
        *_WHO,
        pa.field("stream", pa.string()),
        pa.field("call", pa.int32()),
        pa.field("message_id", pa.string()),
        pa.field("time", TIME),
        pa.field("model", pa.string()),
        pa.field("version", pa.string()),
        pa.field("side", pa.bool_(), nullable=False),
        pa.field("request_body", pa.string()),
        pa.field("response_body", pa.string()),
        *_USAGE,
        pa.field("expected_read", _TOKENS),
        pa.field("rewritten_tokens", _TOKENS),
        pa.field("cause", pa.string()),
        pa.field("cause_from", pa.string()),
        pa.field("detail", pa.string()),
        pa.field("stop_reason", pa.string()),
        pa.field("cost_usd", USD),
        pa.field("waste_usd", USD),
    ]
)
"""One row per model call of a session's report, then one per side request (a landed
request no transcript records: ``side`` true, ``call`` and ``message_id`` null, ``time`` the
end of the call before it in its chain)."""

BREAKS = pa.schema(
    [
        *_WHO,
        pa.field("stream", pa.string()),
        pa.field("call", pa.int32()),
        pa.field("message_id", pa.string()),
        pa.field("time", TIME),
        pa.field("model", pa.string()),
        pa.field("cause", pa.string(), nullable=False),
        pa.field("cause_from", pa.string()),
        pa.field("detail", pa.string()),
        pa.field("rewritten_tokens", _TOKENS, nullable=False),
        pa.field("expected_read", _TOKENS),
        pa.field("cache_creation_input_tokens", _TOKENS),
        pa.field("write_ttl", pa.string()),
        pa.field("cost_usd", USD),
        pa.field("waste_usd", USD),
    ]
)
"""One row per call that re-wrote cached tokens (``rewritten_tokens`` > 0), under the cause
``asz cache`` sums it under (``no_request`` where its request did not land); ``write_ttl`` is
the lifetime its waste was priced at (``1h`` or ``5m``)."""

SESSIONS = pa.schema(
    [
        *_WHO,
        pa.field("project_dir", pa.string()),
        pa.field("cwd", pa.string()),
        pa.field("first_activity", TIME),
        pa.field("last_activity", TIME),
        pa.field("models", pa.list_(pa.string())),
        pa.field("calls", _TOKENS),
        pa.field("requests", _TOKENS),
        pa.field("bodies", _TOKENS),
        pa.field("transcript_lines", _TOKENS),
        pa.field("landed_bytes", _TOKENS),
        pa.field("landed_files", _TOKENS, nullable=False),
        pa.field("breaks", _TOKENS),
        pa.field("rewritten_tokens", _TOKENS),
        pa.field("input_tokens", _TOKENS),
        pa.field("output_tokens", _TOKENS),
        pa.field("cache_read_input_tokens", _TOKENS),
        pa.field("cache_creation_input_tokens", _TOKENS),
        pa.field("cost_usd", USD),
        pa.field("waste_usd", USD),
        pa.field("unpriced_models", pa.list_(pa.string())),
        pa.field("priced_by", pa.string()),
        pa.field("updated", TIME, nullable=False),
    ]
)
"""One row per session each time a pass wrote all of its calls: the latest (``updated``) is
the session; ``landed_files`` says which of its landed files the row was made from, and
``priced_by`` the price table (``PriceTable.fingerprint``)."""

TABLES: dict[str, pa.Schema] = dict(zip(TABLE_NAMES, (CALLS, SESSIONS, BREAKS), strict=True))


def with_version(schema: pa.Schema, table: str) -> pa.Schema:
    """``schema`` carrying the schema version and the table's name in its metadata."""
    return schema.with_metadata({VERSION_KEY: str(SCHEMA_VERSION).encode(), TABLE_KEY: table})
