"""``asz sql``: SQL over the call facts (``asz export parquet``) with DuckDB, embedded.

The tables are the views ``calls``, ``sessions`` and ``breaks`` (:mod:`asz.analytics.query`),
over ``--from``, else ``[analytics] url``: a directory, or a bucket's prefix read through the
archive's client into a local copy. Out: a table, ``--json`` (a list of objects) or ``--csv``.
"""

from __future__ import annotations

import argparse
import sys
from datetime import date, datetime
from decimal import Decimal
from typing import Any

from asz.config import Config
from asz.exits import EXIT_FAILED, UsageError

__all__ = ["SUMMARY", "add_arguments", "run"]

SUMMARY = "run SQL over the call facts (asz export parquet) with DuckDB: tables calls, "
SUMMARY += "sessions, breaks"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("query", metavar="SQL", help='one SQL statement, e.g. "SELECT ..."')
    parser.add_argument(
        "--from",
        dest="source",
        metavar="DIR|s3://BUCKET/PREFIX",
        help="where the tables are (default: [analytics] url in the config)",
    )
    out = parser.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print a JSON list of the rows")
    out.add_argument("--csv", action="store_true", help="print the rows as CSV, with a header")


def run(args: argparse.Namespace, config: Config) -> int:
    import duckdb

    from asz.analytics.query import connect, local_tables

    source = args.source or config.analytics.url
    if not source:
        raise UsageError(
            "no tables named: give --from DIR|s3://bucket/prefix, or set "
            "[analytics] url in the config file"
        )
    try:
        directory = local_tables(source, config.archive)
    except OSError as err:  # a bucket that does not answer, a cache that cannot be written
        print(f"asz: {err.filename or source}: {err.strerror or err}", file=sys.stderr)
        return EXIT_FAILED
    except ValueError as err:  # a file that is no table's, or another schema version's
        print(f"asz: {source}: {err}", file=sys.stderr)
        return EXIT_FAILED
    con = connect(directory)
    try:
        result = con.execute(args.query)
        names = [column[0] for column in result.description or []]
        rows = result.fetchall()
    except duckdb.Error as err:
        print(f"asz: {err}", file=sys.stderr)
        return EXIT_FAILED
    finally:
        con.close()
    if args.json:
        from asz.output import print_json

        print_json([dict(zip(names, map(_plain, row), strict=True)) for row in rows])
    elif args.csv:
        import csv

        writer = csv.writer(sys.stdout, lineterminator="\n")
        writer.writerow(names)
        writer.writerows([[_cell(value) for value in row] for row in rows])
    else:
        from asz.table import Column, print_table

        numeric = [
            bool(rows) and isinstance(rows[0][i], int | float | Decimal) for i in range(len(names))
        ]
        columns = [Column(name, numeric=numeric[i]) for i, name in enumerate(names)]
        print_table(columns, [[_cell(value) for value in row] for row in rows])
    return 0


def _plain(value: Any) -> Any:
    """A value as JSON holds it: dollars (exact decimals) as numbers, times as ISO text."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, datetime | date):
        return value.isoformat()
    return str(value)
