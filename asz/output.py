"""Writing machine-readable output: one compact JSON document per line on stdout."""

from __future__ import annotations

import sys

import orjson


def print_json(value: object) -> None:
    sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.buffer.flush()
