"""Writing machine-readable output: one compact JSON document per line on stdout.

Stdout carries only what a command means to print, so ``--json`` output is JSON and nothing
else; what the parts log on the way (a rebuilt ledger, say) goes to stderr. The service sends
its log to stdout on purpose and sets that up itself.
"""

from __future__ import annotations

import sys

import orjson
import structlog


def print_json(value: object) -> None:
    sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.buffer.flush()


def log_to_stderr() -> None:
    """Sends what the parts log to stderr (structlog prints to stdout unless told)."""
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(sys.stderr))
