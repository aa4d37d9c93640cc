"""``index.jsonl``: the line Claude Code (2.1.274 and later) appends per successful response,
linking request file, response file, message id and transcript line."""

from __future__ import annotations

import orjson

from asz.synth.clock import iso_ms
from asz.synth.writer import BODIES_DIR, Capture

__all__ = ["INDEX_FILE", "IndexLog"]

INDEX_FILE = f"{BODIES_DIR}/index.jsonl"


class IndexLog:
    def __init__(self, capture: Capture) -> None:
        self.capture = capture

    def append(
        self,
        ns: int,
        *,
        session_id: str,
        query_source: str,
        model: str,
        request_id: str | None,
        message_id: str,
        message_uuid: str | None,
        request_name: str,
        response_name: str,
    ) -> None:
        line = {
            "timestamp": iso_ms(ns),
            "session_id": session_id,
            "query_source": query_source,
            "model": model,
            "request_id": request_id,
            "message_id": message_id,
            "message_uuid": message_uuid,
            "request_file": f"{request_name}.json",
            "response_file": f"{response_name}.json",
        }
        self.capture.append(INDEX_FILE, orjson.dumps(line) + b"\n", ns)
