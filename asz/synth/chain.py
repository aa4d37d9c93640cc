"""A chain of calls: the main conversation or one subagent, each with its own message list,
settings and previous request id (what the next request names in ``cc_prev_req``)."""

from __future__ import annotations

from typing import Any

from asz.synth import bodies
from asz.synth.catalog import THINKING
from asz.synth.context import system_blocks


class Chain:
    """The state Claude Code keeps per chain between two requests."""

    def __init__(
        self, stream: str, *, model: str, tools: list[dict[str, Any]], prompt: str, user: str
    ) -> None:
        self.stream = stream
        self.model = model
        self.tools = list(tools)
        self.system = system_blocks(prompt)
        self.user = user
        self.effort = "high"
        self.thinking: dict[str, Any] = dict(THINKING)
        self.messages: list[bodies.Message] = []
        self.sent: list[bodies.Message] = []
        self.suffix = ""
        self.prev_request_id: str | None = None
        self.prev_size = 0
        self.prompt_index: int | None = None

    def add(self, role: str, blocks: list[bodies.Block]) -> None:
        if not self.messages:
            self.suffix = bodies.version_suffix(blocks[0].get("text", ""))
        self.messages.append({"role": role, "content": blocks})

    def add_text(self, role: str, text: str) -> None:
        self.add(role, [{"type": "text", "text": text}])

    def restart(self, blocks: list[bodies.Block]) -> None:
        """A compaction: the list starts again; the chain and its previous request stay."""
        self.messages = [{"role": "user", "content": blocks}]
        self.prompt_index = None

    def body(self, cch: str, prompt_id: str | None) -> dict[str, Any]:
        """The next request of the chain; remembers the list as sent for a compaction."""
        self.sent = list(self.messages)
        system = [
            bodies.billing_block(self.suffix, cch, self.prev_request_id, prompt_id),
            *self.system,
        ]
        return bodies.request(
            model=self.model,
            messages=self.messages,
            system=system,
            tools=self.tools,
            user=self.user,
            thinking=self.thinking,
            effort=self.effort,
        )
