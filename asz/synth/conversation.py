"""Simulates one Claude Code session: prompts, model calls and tools of the main chain, and
the cache breaks the plan injects. Subagents, the compaction and the title call live in
their own modules and use the helpers here, so every body is written the same way.
"""

from __future__ import annotations

import random
from typing import Any

from asz.synth import bodies, context, dialogue, secrets, sidecalls, subagent
from asz.synth.catalog import (
    API_VERDICTS,
    EFFORT_KEEPS_CACHE,
    IDENTITY,
    MAIN_MODEL,
    OUTPUT_STYLE,
    SWITCH_MODEL,
    late_tool,
)
from asz.synth.chain import Chain
from asz.synth.ids import Ids
from asz.synth.options import CLAUDE_VERSION, UPGRADED_VERSION
from asz.synth.outputs import MAIN_WEIGHTS, Action, Workbench
from asz.synth.plan import SessionPlan
from asz.synth.project import Noun, Project
from asz.synth.records import Call, Change, Session, Stream
from asz.synth.shared import Setup, land
from asz.synth.transcripts import Transcript
from asz.synth.writer import PROJECTS_DIR, Body

__all__ = ["KEPT_CAUSES", "MINUTE_MS", "NEXT_EFFORT", "SLUGS", "TTL_PAUSE_MS", "SessionSimulation"]

MINUTE_MS = 60_000.0
TTL_PAUSE_MS = (61 * MINUTE_MS, 95 * MINUTE_MS)
SLUGS = (
    ("golden", "quiet", "brisk", "radiant", "humble", "lucid", "nimble", "patient"),
    ("harbor", "meadow", "lantern", "orchard", "signal", "compass", "ember", "river"),
    ("falcon", "otter", "heron", "badger", "lynx", "wren", "marten", "ibis"),
)
KEPT_CAUSES = ("first", "kept", "compaction")
NEXT_EFFORT = {"high": "medium", "medium": "low", "low": "high"}


class SessionSimulation:
    """Plays one session from its plan; ``run`` returns the session's ground truth."""

    def __init__(self, setup: Setup, rng: random.Random, plan: SessionPlan) -> None:
        self.setup = setup
        self.capture = setup.capture
        self.clock = setup.clock
        self.rng = rng
        self.ids = Ids(rng)
        self.plan = plan
        self.project = Project.make(rng, self.ids)
        self.bench = Workbench(self.project, rng)
        self.today = self.clock.now()
        self.session_id = self.ids.uuid()
        self.slug = "-".join(rng.choice(words) for words in SLUGS)
        encoded = context.encode_cwd(self.project.cwd)
        self.folder = f"{PROJECTS_DIR}/{encoded}"
        self.record = Session(id=self.session_id, cwd=self.project.cwd, project_dir=encoded)
        self.record.streams.append(Stream("main", "main"))
        self.transcripts: list[Transcript] = []
        self.user = bodies.user_id(setup.device_id, setup.account_uuid, self.session_id)
        self.version = CLAUDE_VERSION
        self.main = Chain(
            "main",
            model=MAIN_MODEL,
            tools=setup.main_tools,
            prompt=context.main_prompt(self.project),
            user=self.user,
        )
        self.transcript = self.open_transcript(f"{self.folder}/{self.session_id}.jsonl", None)
        self.prompt_id = ""
        self.prompts: list[str] = []
        self.touched: list[str] = []
        self.compacted = False
        self.last_assistant_uuid = ""

    def open_transcript(self, path: str, agent_id: str | None) -> Transcript:
        self.record.transcripts.append(path)
        transcript = Transcript(
            self.capture,
            path,
            session_id=self.session_id,
            cwd=self.project.cwd,
            branch=self.project.branch,
            slug=self.slug,
            agent_id=agent_id,
            version=self.version,
        )
        self.transcripts.append(transcript)
        return transcript

    def run(self) -> Session:
        for turn in range(1, self.plan.turns + 1):
            noun = self.rng.choice(self.project.nouns)
            self._prompt(turn, noun)
            turn_start = self.clock.ns
            for step in range(self.plan.steps):
                self._main_call(turn, step, noun)
                if step == 0 and turn in self.plan.compaction_turns:
                    sidecalls.compact(self)
                    self.compacted = True
            duration_ms = (self.clock.ns - turn_start) // 1_000_000
            self.transcript.turn_duration(self.ids.uuid(), duration_ms, self.clock.tick(5, 40))
            if turn == 1:
                sidecalls.title(self, noun)
        for transcript in self.transcripts:
            self.record.transcript_message_ids.update(transcript.message_ids)
        return self.record

    # -- the main chain -------------------------------------------------------------------

    def _prompt(self, turn: int, noun: Noun) -> None:
        """A typed prompt: the user pauses (past the cache TTL when the plan says so), the
        transcript records the prompt, and the chain gets it with its notes."""
        away = self.plan.changes.get((turn, 0)) == "ttl"
        ns = self.clock.tick(*(TTL_PAUSE_MS if away else (20_000.0, 180_000.0)))
        self.prompt_id = self.ids.uuid()
        typed = dialogue.prompt(self.rng, self.project, noun)
        self.prompts.append(typed)
        line_uuid = self.ids.uuid()
        self.transcript.snapshot(line_uuid, ns)
        self.transcript.prompt(
            line_uuid, typed, self.prompt_id, self.clock.tick(1, 5), root=turn == 1
        )
        block = {"type": "text", "text": typed}
        note = context.token_note(self.main.prev_size + len(typed))
        if turn == 1:
            self.main.add("user", [*context.main_reminders(self.project, self.today), block])
            note = context.environment_note(self.project) + "\n" + note
        else:
            self.main.add("user", [block])
        self.main.prompt_index = len(self.main.messages) - 1
        self.main.add_text("system", note)

    def _main_call(self, turn: int, step: int, noun: Noun) -> None:
        cause, change = self._cause(turn, step)
        agent = self.plan.agent_at(turn, step)
        action: Action | None = None
        if step == self.plan.steps - 1:
            blocks = self.answer_blocks(dialogue.answer(self.rng, self.project, noun))
        else:
            if agent is not None:
                action = subagent.spawn_action(self.project, noun)
            elif self.setup.secrets and not self.record.planted:
                action = self._plant()
            else:
                action = self.bench.action(self.bench.pick(MAIN_WEIGHTS), noun)
            blocks = self.tool_blocks(action)
        closing = action is None and turn == self.plan.turns
        call = self.call(
            self.main,
            self.transcript,
            blocks,
            cause=cause,
            change=change,
            uuid_named=closing and self.plan.uuid_main,
            source="repl_main_thread",
        )
        if action is None:
            return
        if agent is not None:
            action = subagent.run(
                self, agent, noun=noun, parent=call, tool_use_id=blocks[-1]["id"], spawn=action
            )
        note = self.rng.random() < 0.5
        self.tool_result(self.main, self.transcript, blocks[-1]["id"], action, note=note)

    def _plant(self) -> Action:
        """The first tool call of a ``--secrets`` session: its result holds the planted
        values, so the transcript records them and every later request resends them."""
        action, planted = secrets.plant(self.rng, self.ids, self.project)
        known = secrets.identity(self.project, self.setup.device_id, self.setup.account_uuid)
        self.record.planted = [item.to_json() for item in [*planted, *known]]
        return action

    def _cause(self, turn: int, step: int) -> tuple[str, Change | None]:
        """Why the cache keeps or loses its prefix at this call, applying the plan's change."""
        if not self.record.calls:
            return "first", None
        if self.compacted:
            self.compacted = False
            return "compaction", None
        planned = self.plan.changes.get((turn, step))
        if planned is None:
            return "kept", None
        if planned == "ttl":
            if step != 0:  # a pause at a turn start happened before the user typed
                self.clock.tick(*TTL_PAUSE_MS)
            detail = "more than an hour since the previous call; the 1h cache entries expired"
            return "ttl", Change("ttl", detail)
        made = self._inject(planned)
        if made is None:
            return "kept", None
        cause, detail = made
        return cause, Change(planned, detail)

    def _inject(self, planned: str) -> tuple[str, str] | None:
        """Makes the change the plan names: the cause it is, and what was done; None when the
        session offers nothing to change (no deferred tool to load)."""
        chain = self.main
        if planned == "model":
            new = SWITCH_MODEL if chain.model == MAIN_MODEL else MAIN_MODEL
            old, chain.model = chain.model, new
            return "model", f"model {old} -> {chain.model}"
        if planned == "effort":
            old, chain.effort = chain.effort, NEXT_EFFORT[chain.effort]
            said = f"output_config.effort {old} -> {chain.effort} on {chain.model}"
            return ("kept", said) if chain.model in EFFORT_KEEPS_CACHE else ("effort", said)
        if planned == "system":
            prompt = chain.system[1]
            chain.system = [chain.system[0], {**prompt, "text": prompt["text"] + OUTPUT_STYLE}]
            return "system", "system prompt: output style switched to Explanatory"
        if planned == "upgrade":
            old, self.version = self.version, UPGRADED_VERSION
            chain.version = self.transcript.version = self.version
            return "upgrade", f"Claude Code {old} -> {self.version}"
        if planned == "fast_mode":
            chain.speed = "fast"
            return "fast_mode", 'fast mode turned on: speed "fast"'
        return self._change_tools(planned)

    def _change_tools(self, planned: str) -> tuple[str, str] | None:
        """``tools_added``: a non-deferred MCP tool added; ``tools_loaded``: a deferred tool
        loaded (its definition joins the prefix); ``tools_denied``: a tool denied (its
        definition leaves the list)."""
        chain = self.main
        if planned == "tools_added":
            added = late_tool(self.setup.late_tools, chain.tools)
            chain.tools = [*chain.tools, added]
            return "tools", f"tool {added['name']} added"
        deferred = [t for t in chain.tools if t.get("defer_loading") is True]
        if planned == "tools_loaded":
            if not deferred:
                return None
            name = self.rng.choice(deferred)["name"]
            chain.tools = [
                {k: v for k, v in t.items() if k != "defer_loading"} if t["name"] == name else t
                for t in chain.tools
            ]
            return "tools", f"deferred tool {name} loaded"
        used = {name for name, _ in MAIN_WEIGHTS}
        names = [str(t.get("name")) for t in chain.tools if t not in deferred]
        optional = [n for n in names if n.startswith("mcp__") and n not in used]
        gone = self.rng.choice(optional or names)
        chain.tools = [t for t in chain.tools if t.get("name") != gone]
        return "tools", f"tool {gone} denied: removed from the list"

    # -- helpers shared with subagents and side calls -------------------------------------

    def thinking(self) -> dict[str, Any]:
        """A thinking block as the transcript holds it: display is omitted, so no text."""
        return {"type": "thinking", "thinking": "", "signature": self.ids.signature()}

    def answer_blocks(self, answer: str) -> list[dict[str, Any]]:
        return [self.thinking(), {"type": "text", "text": answer}]

    def tool_blocks(self, action: Action) -> list[dict[str, Any]]:
        blocks = [self.thinking()]
        if action.lead:
            blocks.append({"type": "text", "text": action.lead})
        use = {"type": "tool_use", "id": self.ids.tool_use_id(), "name": action.name}
        blocks.append({**use, "input": action.input})
        self.touched.extend(action.touched)
        return blocks

    def _cached_tokens(self, chain: Chain, cause: str) -> int:
        """What the cache serves: all the previous call left there when only history grew,
        the tools and system after a compaction, the part before the system prompt when only
        it changed, nothing after any other change."""
        if cause == "kept":
            return chain.cached_after or 0
        if cause == "compaction":
            return bodies.tokens(len(bodies.dumps(chain.tools)) + len(bodies.dumps(chain.system)))
        if cause == "system":
            return bodies.tokens(len(bodies.dumps(chain.tools)) + len(IDENTITY))
        return 0

    def call(
        self,
        chain: Chain,
        transcript: Transcript,
        blocks: list[dict[str, Any]],
        *,
        cause: str,
        uuid_named: bool,
        source: str,
        change: Change | None = None,
    ) -> Call:
        """One model call: request body, one transcript line per block, response body."""
        request_ns = self.clock.tick(40, 400)
        data = bodies.dumps(chain.body(self.ids.hex(5), self.prompt_id))
        request = self.body("request", data, request_ns, "call", chain.stream)
        request.names_request, request.prompt_id = chain.prev_request_id, self.prompt_id
        request.cache_cause = cause
        message_id = self.ids.message_id()
        request_id = None if uuid_named else self.ids.request_id()
        final = bodies.redact(blocks)
        output = bodies.tokens(len(bodies.dumps(final))) + self.rng.randint(40, 900)
        usage = bodies.usage(
            prompt_tokens=bodies.tokens(len(data)),
            cached=self._cached_tokens(chain, cause),
            output_tokens=output,
            uncached=self.rng.randint(1, 6),
            marker=chain.marker,
        )
        verdict = self._verdict(chain, cause, usage)
        self._record(chain, request, message_id=message_id, cause=cause, change=change, usage=usage)
        running = 0
        for block in blocks:
            running = min(running + self.rng.randint(1, 9), output)
            line = {
                "model": chain.model,
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {**usage, "output_tokens": running, "speed": chain.speed or "standard"},
                **verdict,
            }
            self.last_assistant_uuid = transcript.assistant(
                self.ids.uuid(),
                line,
                request_id,
                self.clock.tick(600, 4000),
                effort=chain.effort,
            )
        stop = "tool_use" if blocks[-1]["type"] == "tool_use" else "end_turn"
        reply = bodies.response(
            message_id=message_id, model=chain.model, content=final, stop_reason=stop, usage=usage
        )
        response = self.body(
            "response",
            bodies.dumps(reply),
            self.clock.tick(3, 60),
            "call",
            chain.stream,
            name=request_id,
        )
        self.land(
            request,
            response,
            message_id,
            request_id,
            model=chain.model,
            source=source,
            message_uuid=self.last_assistant_uuid,
        )
        chain.add("assistant", final)
        chain.prev_request_id = request_id
        chain.prev_size = len(data)
        chain.cached_after = bodies.left_cached(usage)
        call = Call(chain.stream, self.prompt_id, request, response)
        self.record.calls.append(call)
        return call

    @staticmethod
    def _verdict(chain: Chain, cause: str, usage: dict[str, Any]) -> dict[str, Any]:
        """``diagnostics`` of a break's message: the provider's verdict, with what it missed
        when it names a change; nothing on a call that broke nothing."""
        if cause in KEPT_CAUSES:
            return {}
        kind = API_VERDICTS.get(cause, "unavailable")
        reason: dict[str, Any] = {"type": kind}
        if kind != "unavailable":
            missed = (chain.cached_after or 0) - usage["cache_read_input_tokens"]
            reason["cache_missed_input_tokens"] = missed
        return {"diagnostics": {"cache_miss_reason": reason}}

    def _record(
        self,
        chain: Chain,
        request: Body,
        *,
        message_id: str,
        cause: str,
        change: Change | None,
        usage: dict[str, Any],
    ) -> None:
        """The ground truth of a call the plan changed: a break with what it re-wrote (what
        the previous call left in the cache less what this one read), or a change that kept
        the cache. Every break is a change the simulation made."""
        if change is None:
            return
        entry = {
            "session": self.session_id,
            "stream": chain.stream,
            "request": request.name,
            "message_id": message_id,
            "cause": cause,
            "injected": change.injected,
            "detail": change.detail,
        }
        if cause in KEPT_CAUSES:
            self.record.kept_changes.append(entry)
        else:
            rewritten = (chain.cached_after or 0) - usage["cache_read_input_tokens"]
            self.record.breaks.append({**entry, "rewritten_tokens": rewritten})

    def body(
        self,
        role: str,
        data: bytes,
        ns: int,
        kind: str,
        stream: str | None,
        *,
        name: str | None = None,
    ) -> Body:
        """A body named as Claude Code names it: a request by a fresh UUID, a response by its
        request id, or by a fresh UUID when there is none."""
        stem = name if name is not None else self.ids.uuid()
        return Body(
            name=f"{stem}.{role}",
            role=role,
            data=data,
            mtime_ns=ns,
            session=self.session_id,
            kind=kind,
            stream=stream,
            message_id=None,
            request_id=None,
        )

    def land(
        self,
        request: Body,
        response: Body,
        message_id: str,
        request_id: str | None,
        *,
        model: str,
        source: str,
        message_uuid: str | None,
    ) -> None:
        for body in (request, response):
            body.message_id, body.request_id = message_id, request_id
        land(self.setup, request, response, source=source, model=model, message_uuid=message_uuid)

    def tool_result(
        self, chain: Chain, transcript: Transcript, tool_use_id: str, action: Action, *, note: bool
    ) -> None:
        """The tool's result: a transcript line and a user message, then sometimes the token
        note Claude Code places after a tool result."""
        block: dict[str, Any] = {
            "tool_use_id": tool_use_id,
            "type": "tool_result",
            "content": action.result,
        }
        if action.is_error:
            block["is_error"] = True
        transcript.tool_result(
            self.ids.uuid(),
            block,
            self.prompt_id,
            self.clock.tick(150, 6000),
            result=action.structured,
            source=self.last_assistant_uuid,
        )
        chain.add("user", [block])
        if note:
            chain.add_text("system", context.token_note(chain.prev_size + len(bodies.dumps(block))))
