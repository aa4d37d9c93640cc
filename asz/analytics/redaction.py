"""What of a break's ``detail`` may leave the machine in the tables.

A detail names what changed between two requests: a tool's name, a model, a system block's
number, sometimes words of the prompt around a rewritten message. The tables go to a team's
bucket, so every detail goes through :func:`table_detail` before it is written, and only
there: the redaction policy (``[redact]``) is applied in this one place.
"""

from __future__ import annotations

__all__ = ["table_detail"]


def table_detail(detail: str | None) -> str | None:
    """The detail as the tables hold it. The redaction policy is not wired in yet: until it
    is, the detail is written as the cache report says it."""
    return detail
