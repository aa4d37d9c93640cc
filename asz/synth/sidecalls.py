"""The two calls no transcript line records: the compaction and the session title.

Their responses are named by nothing a collector reads (no later request names their request
id, no transcript holds their message id), which is exactly what makes them hard to claim.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from asz.synth import bodies, context, dialogue
from asz.synth.catalog import TITLE_MAX_TOKENS, TITLE_MODEL, TITLE_PROMPT, TITLE_SYSTEM, fill, text
from asz.synth.project import Noun
from asz.synth.records import Stream

if TYPE_CHECKING:
    from asz.synth.conversation import SessionSimulation

__all__ = ["compact", "title"]


def _previous_main_names(sim: SessionSimulation) -> str | None:
    """The request id the last main request named: a compaction names the same one."""
    for call in reversed(sim.record.calls):
        if call.stream == "main":
            return call.request.names_request
    return None


def compact(sim: SessionSimulation) -> None:
    """Compaction after a turn's first call: it copies that call's message list up to the
    prompt, adds the instruction to the prompt's message, names no prompt, and the main list
    restarts from the summary. The compaction agent gets its own transcript file."""
    main = sim.main
    upto = main.prompt_index if main.prompt_index is not None else 0
    sent = main.sent[: upto + 1]
    instruction = {"type": "text", "text": text("compact_prompt.md")}
    messages = [*sent[:-1], {"role": "user", "content": [*sent[-1]["content"], instruction]}]
    named = _previous_main_names(sim)
    body = main.request(messages, [main.billing(sim.ids.hex(5), named, None), *main.system])
    request = sim.body("request", bodies.dumps(body), sim.clock.tick(200, 900), "compaction", None)
    request.names_request = named
    agent_id = sim.ids.compact_agent_id()
    transcript = sim.open_transcript(
        f"{sim.folder}/{sim.session_id}/subagents/agent-{agent_id}.jsonl", agent_id
    )
    sim.record.streams.append(Stream(agent_id, "compaction", agent_type="compact"))
    transcript.user(
        sim.ids.uuid(), instruction["text"], sim.prompt_id, sim.clock.tick(1, 10), root=True
    )
    summary = dialogue.compaction_summary(sim.project, sim.prompts, sim.touched, sim.prompts[-1])
    content = [{"type": "text", "text": summary}]
    usage = bodies.usage(
        prompt_tokens=bodies.tokens(request.size),
        cached=bodies.tokens(main.prev_size) - 200,
        output_tokens=bodies.tokens(len(summary)) + 300,
        uncached=4,
    )
    # The agent file records the answer under a local id, not the provider's message id.
    local = {
        "model": main.model,
        "id": sim.ids.uuid(),
        "type": "message",
        "role": "assistant",
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": usage,
    }
    transcript.assistant(sim.ids.uuid(), local, None, sim.clock.tick(20_000, 60_000))
    message_id, request_id = sim.ids.message_id(), sim.ids.request_id()
    reply = bodies.response(
        message_id=message_id,
        model=main.model,
        content=content,
        stop_reason="end_turn",
        usage=usage,
    )
    response = sim.body(
        "response", bodies.dumps(reply), sim.clock.tick(3, 40), "compaction", None, name=request_id
    )
    sim.land(
        request,
        response,
        message_id,
        request_id,
        model=main.model,
        source="compact",
        message_uuid=None,
    )
    boundary = sim.transcript.compact_boundary(
        sim.ids.uuid(), sim.clock.tick(5, 50), pre_tokens=bodies.tokens(main.prev_size)
    )
    opening = dialogue.summary_message(summary)
    summary_uuid = sim.transcript.compact_summary(
        sim.ids.uuid(), opening, sim.prompt_id, sim.clock.tick(1, 10)
    )
    reminders = context.main_reminders(sim.project, sim.today)
    main.restart([*reminders, {"type": "text", "text": opening}])
    main.add_text("system", context.token_note(len(opening)))
    sim.record.compactions.append(
        {
            "request": request.name,
            "response": response.name,
            "boundary_uuid": boundary,
            "summary_uuid": summary_uuid,
            "agent_id": agent_id,
        }
    )


def title(sim: SessionSimulation, noun: Noun) -> None:
    """The session-naming call once the first turn is done: a small haiku request that names
    the session and the prompt; its answer lands only in an ``ai-title`` line, which carries
    no message id."""
    answer = next(
        block["text"]
        for block in reversed(sim.main.messages[-1]["content"])
        if block.get("type") == "text"
    )
    prompt = fill(TITLE_PROMPT, prompt=sim.prompts[0], answer=answer[:300])
    version = sim.main.version
    billing = bodies.billing_block(
        bodies.version_suffix(prompt, version),
        sim.ids.hex(5),
        sim.main.prev_request_id,
        sim.prompt_id,
        version,
    )
    body = {
        "model": TITLE_MODEL,
        "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
        "system": [billing, {"type": "text", "text": TITLE_SYSTEM}],
        "metadata": {"user_id": sim.user},
        "max_tokens": TITLE_MAX_TOKENS,
        "stream": True,
    }
    request = sim.body("request", bodies.dumps(body), sim.clock.tick(80, 600), "title", None)
    request.names_request, request.prompt_id = sim.main.prev_request_id, sim.prompt_id
    chosen = dialogue.title(sim.rng, noun)
    prompt_tokens = bodies.tokens(request.size)
    usage = bodies.usage(
        prompt_tokens=prompt_tokens,
        cached=0,
        output_tokens=bodies.tokens(len(chosen)) + 2,
        uncached=prompt_tokens,
    )
    message_id, request_id = sim.ids.message_id(), sim.ids.request_id()
    reply = bodies.response(
        message_id=message_id,
        model=TITLE_MODEL,
        content=[{"type": "text", "text": chosen}],
        stop_reason="end_turn",
        usage=usage,
    )
    response = sim.body(
        "response", bodies.dumps(reply), sim.clock.tick(400, 1500), "title", None, name=request_id
    )
    sim.land(
        request,
        response,
        message_id,
        request_id,
        model=TITLE_MODEL,
        source="generate_session_title",
        message_uuid=None,
    )
    sim.transcript.ai_title(chosen, sim.clock.tick(2, 20))
