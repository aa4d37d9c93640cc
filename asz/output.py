"""Where a command's output goes: what it means to print on stdout, what the parts log on stderr.

Stdout carries only what a command means to print, so ``--json`` output is JSON and nothing
else; what the parts log on the way (a rebuilt ledger, say) goes to stderr, in words on a
terminal and as JSON lines elsewhere (:func:`asz.logs.log_to_stderr`). The service sends its log to
stdout on purpose and sets that up itself.
"""

from __future__ import annotations

import sys

import orjson

__all__ = ["LOG_FORMATS", "print_json"]

LOG_FORMATS = ("auto", "json", "console")
"""What ``--log-format`` takes: ``auto`` is console lines on a terminal, JSON lines elsewhere."""


def print_json(value: object) -> None:
    sys.stdout.buffer.write(orjson.dumps(value) + b"\n")
    sys.stdout.buffer.flush()
