"""A chain of calls: the main conversation or one subagent, each with its own message list,
settings and previous request id (what the next request names in ``cc_prev_req``)."""

from __future__ import annotations

from typing import Any

from asz.synth import bodies
from asz.synth.catalog import CACHE_1H, THINKING
from asz.synth.context import system_blocks
from asz.synth.options import CLAUDE_VERSION

__all__ = ["Chain"]


class Chain:
    """The state Claude Code keeps per chain between two requests."""

    def __init__(
        self,
        stream: str,
        *,
        model: str,
        tools: list[dict[str, Any]],
        prompt: str,
        user: str,
        version: str = CLAUDE_VERSION,
        marker: bodies.Block = CACHE_1H,
    ) -> None:
        self.stream = stream
        self.model = model
        self.tools = list(tools)
        self.system = system_blocks(prompt)
        self.user = user
        self.version = version
        self.marker = marker
        """The marker on the newest message: how long what each call writes lives."""
        self.effort = "high"
        self.speed: str | None = None
        """``"fast"`` once fast mode is on."""
        self.thinking: dict[str, Any] = dict(THINKING)
        self.messages: list[bodies.Message] = []
        self.sent: list[bodies.Message] = []
        self.first_text = ""
        self.prev_request_id: str | None = None
        self.prev_size = 0
        self.cached_after: int | None = None
        """What the previous call left in the cache (it read plus it wrote): what the next
        call reads when nothing broke; None before the first call."""
        self.prompt_index: int | None = None

    @property
    def suffix(self) -> str:
        """``cc_version``'s suffix: the chain's first message (kept across a compaction) and
        the version."""
        return bodies.version_suffix(self.first_text, self.version)

    def add(self, role: str, blocks: list[bodies.Block]) -> None:
        if not self.messages:
            self.first_text = blocks[0].get("text", "")
        self.messages.append({"role": role, "content": blocks})

    def add_text(self, role: str, text: str) -> None:
        self.add(role, [{"type": "text", "text": text}])

    def restart(self, blocks: list[bodies.Block]) -> None:
        """A compaction: the list starts again; the chain and its previous request stay."""
        self.messages = [{"role": "user", "content": blocks}]
        self.prompt_index = None

    def billing(self, cch: str, prev_request: str | None, prompt_id: str | None) -> bodies.Block:
        return bodies.billing_block(self.suffix, cch, prev_request, prompt_id, self.version)

    def body(self, cch: str, prompt_id: str | None) -> dict[str, Any]:
        """The next request of the chain; remembers the list as sent for a compaction."""
        self.sent = list(self.messages)
        return self.request(
            self.messages, [self.billing(cch, self.prev_request_id, prompt_id), *self.system]
        )

    def request(self, messages: list[bodies.Message], system: list[bodies.Block]) -> dict[str, Any]:
        """A request with the chain's settings, tools and user, and ``messages``/``system``."""
        return bodies.request(
            model=self.model,
            messages=messages,
            system=system,
            tools=self.tools,
            user=self.user,
            thinking=self.thinking,
            effort=self.effort,
            marker=self.marker,
            speed=self.speed,
        )
