"""Identifiers in the shapes Claude Code and the Messages API use, drawn from a seeded generator.

Every id of a capture comes from here, so one seed always yields the same ids.
"""

from __future__ import annotations

import base64
import random
import uuid

__all__ = ["Ids"]

_BASE58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"


class Ids:
    """Draws ids from one ``random.Random``; the draw order is part of the output."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng

    def uuid(self) -> str:
        return str(uuid.UUID(int=self.rng.getrandbits(128), version=4))

    def hex(self, digits: int) -> str:
        return "".join(self.rng.choice("0123456789abcdef") for _ in range(digits))

    def base58(self, length: int) -> str:
        return "".join(self.rng.choice(_BASE58) for _ in range(length))

    def request_id(self) -> str:
        """A provider request id: ``req_`` and 24 characters, ``011C`` first as in 2026."""
        return "req_011C" + self.base58(20)

    def message_id(self) -> str:
        return "msg_011C" + self.base58(20)

    def tool_use_id(self) -> str:
        return "toolu_01" + self.base58(22)

    def agent_id(self) -> str:
        """A subagent id as written from about 2.1.79 on: ``a`` and 16 hex digits."""
        return "a" + self.hex(16)

    def compact_agent_id(self) -> str:
        return "acompact-" + self.hex(6)

    def signature(self) -> str:
        """An opaque thinking signature; only its length and alphabet matter to a reader."""
        raw = self.rng.getrandbits(8 * 252).to_bytes(252, "big")
        return base64.b64encode(raw).decode("ascii")
