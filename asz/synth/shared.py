"""What every session of one capture shares: the clock, the device and account ids, the tool
lists and the index log."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from asz.synth.catalog import agent_subset, tool_set, tools_from_file
from asz.synth.clock import Clock
from asz.synth.ids import Ids
from asz.synth.indexlog import IndexLog
from asz.synth.options import SynthOptions
from asz.synth.writer import Body, Capture

__all__ = ["Setup", "land", "make_setup"]


@dataclass
class Setup:
    capture: Capture
    clock: Clock
    device_id: str
    account_uuid: str
    main_tools: list[dict[str, Any]]
    agent_tools: list[dict[str, Any]]
    late_tools: list[dict[str, Any]]
    index: IndexLog | None
    secrets: bool = False


def make_setup(options: SynthOptions, capture: Capture, rng: random.Random) -> Setup:
    """A supplied tool list replaces the built-in one; subagents then get its share of the
    tools the built-in agent list names."""
    ids = Ids(rng)
    if options.tools_file is not None:
        main_tools = tools_from_file(options.tools_file)
        agent_tools = agent_subset(main_tools)
    else:
        main_tools, agent_tools = tool_set("main"), tool_set("agent")
    return Setup(
        capture=capture,
        clock=Clock(options.start, rng),
        device_id=ids.hex(64),
        account_uuid=ids.uuid(),
        main_tools=main_tools,
        agent_tools=agent_tools,
        late_tools=tool_set("late"),
        index=IndexLog(capture) if options.index else None,
        secrets=options.secrets,
    )


def land(
    setup: Setup,
    request: Body,
    response: Body,
    *,
    source: str,
    model: str,
    message_uuid: str | None,
) -> None:
    """Records a request/response pair, and its index line when the capture keeps one."""
    setup.capture.add_body(request)
    setup.capture.add_body(response)
    if setup.index is not None:
        setup.index.append(
            response.mtime_ns,
            session_id=response.session,
            query_source=source,
            model=model,
            request_id=response.request_id,
            message_id=str(response.message_id),
            message_uuid=message_uuid,
            request_name=request.name,
            response_name=response.name,
        )
