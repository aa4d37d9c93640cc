"""Documents of the real samples' shapes, for measuring what the rules find in real text.

The request samples are proxy logs (one JSON object per line holding a request and its
response), the transcripts are Claude Code's own files; this yields each request body and
response body of a log, and each transcript line, as the redactor is given them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import orjson

__all__ = ["sample_documents"]


def sample_documents(samples: Path) -> Iterator[tuple[str, str, bytes]]:
    """``(kind, where, raw)``: kind is "body" or "line"."""
    for log in sorted((samples / "requests").rglob("*.jsonl")):
        for number, line in enumerate(log.read_bytes().splitlines(), 1):
            try:
                pair = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            for side in ("request", "response"):
                body = (pair.get(side) or {}).get("body")
                if isinstance(body, dict | list):
                    yield "body", f"{log.name}:{number}:{side}", orjson.dumps(body)
    for transcript in sorted((samples / "transcripts").rglob("*.jsonl")):
        for number, line in enumerate(transcript.read_bytes().splitlines(), 1):
            if line.strip():
                yield "line", f"{transcript.name}:{number}", line
