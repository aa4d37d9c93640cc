"""A subagent run: its own chain and transcript file, started by the parent's Agent tool use
and answered by the parent's tool result that names the agent."""

from __future__ import annotations

from typing import TYPE_CHECKING

import orjson

from asz.synth import context, dialogue
from asz.synth.catalog import AGENT_MODEL, CACHE_5M
from asz.synth.chain import Chain
from asz.synth.outputs import AGENT_WEIGHTS, Action
from asz.synth.project import Noun, Project
from asz.synth.records import Call, Change, Stream

if TYPE_CHECKING:
    from asz.synth.conversation import SessionSimulation

__all__ = ["AGENT_TYPE", "PAUSE_MS", "run", "spawn_action"]

AGENT_TYPE = "Explore"
PAUSE_MS = (6 * 60_000.0, 20 * 60_000.0)
"""A wait inside a subagent (a permission prompt nobody answered at once): past the five
minutes its cache entries live, within the hour the parent's do."""


def spawn_action(project: Project, noun: Noun) -> Action:
    """The parent's Agent call; its result is filled in once the agent has answered."""
    return Action(
        name="Agent",
        input={
            "description": f"Find {noun.singular} state changes",
            "prompt": dialogue.agent_task(project, noun),
            "subagent_type": AGENT_TYPE,
        },
        result="",
        structured=None,
        lead="I'll have an Explore agent map where the state is written.",
    )


def run(
    sim: SessionSimulation, index: int, *, noun: Noun, parent: Call, tool_use_id: str, spawn: Action
) -> Action:
    """Runs the agent's chain (its requests name the parent's session and current prompt)
    and returns the parent's Agent action with the agent's report as its result."""
    agent_id = sim.ids.agent_id()
    base = f"{sim.folder}/{sim.session_id}/subagents/agent-{agent_id}"
    started = sim.clock.tick(20, 200)
    meta = {"agentType": AGENT_TYPE, "spawnDepth": 1, "model": AGENT_MODEL}
    sim.capture.put(f"{base}.meta.json", orjson.dumps(meta), started)
    sim.record.sidecars.append(f"{base}.meta.json")
    sim.record.streams.append(
        Stream(agent_id, "subagent", tool_use_id, parent.response.message_id, AGENT_TYPE)
    )
    transcript = sim.open_transcript(f"{base}.jsonl", agent_id)
    chain = Chain(
        agent_id,
        model=AGENT_MODEL,
        tools=sim.setup.agent_tools,
        prompt=context.agent_prompt(sim.project),
        user=sim.user,
        version=sim.version,
        marker=CACHE_5M,
    )
    task = spawn.input["prompt"]
    transcript.user(sim.ids.uuid(), task, sim.prompt_id, sim.clock.tick(2, 20), root=True)
    reminders = context.agent_reminders(sim.project, sim.today)
    chain.add("user", [*reminders, {"type": "text", "text": task}])
    length = sim.plan.agents[index].calls
    pause_at = sim.plan.agents[index].pause_at
    calls = []
    report = ""
    for step in range(length):
        action: Action | None = None
        if step == length - 1:
            report = dialogue.agent_report(sim.rng, sim.project, noun)
            blocks = sim.answer_blocks(report)
        else:
            action = sim.bench.action(sim.bench.pick(AGENT_WEIGHTS), noun, brief=True)
            blocks = sim.tool_blocks(action)
        cause, change = ("first" if step == 0 else "kept"), None
        if step == pause_at:
            sim.clock.tick(*PAUSE_MS)
            waited = "a wait of over 5 minutes in the subagent; its 5m cache entries expired"
            cause, change = "ttl", Change("ttl_5m", waited)
        calls.append(
            sim.call(
                chain,
                transcript,
                blocks,
                cause=cause,
                change=change,
                uuid_named=action is None and index in sim.plan.uuid_agents,
                source=f"agent:{AGENT_TYPE}",
            )
        )
        if action is not None:
            sim.tool_result(chain, transcript, blocks[-1]["id"], action, note=False)
    usages = [call.response.parsed()["usage"] for call in calls]
    content = [{"type": "text", "text": report}]
    structured = {
        "status": "completed",
        "prompt": task,
        "agentId": agent_id,
        "content": content,
        "totalDurationMs": (sim.clock.ns - started) // 1_000_000,
        "totalTokens": sum(usage["output_tokens"] for usage in usages),
        "totalToolUseCount": length - 1,
        "usage": usages[-1],
    }
    return Action(name="Agent", input=spawn.input, result=content, structured=structured, lead="")
