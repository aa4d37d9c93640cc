"""Where the special events of a session go: subagents, compactions, the changes that break
the prompt cache (or, for an effort change on a model that keeps it, do not) and responses
written under a UUID name. Decided up front so that the simulation only follows it.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field, replace

from asz.synth.options import SynthOptions

__all__ = [
    "ANYWHERE_CAUSES",
    "AROUND_THE_SWITCH",
    "TURN_START_CAUSES",
    "AgentRun",
    "Position",
    "SessionPlan",
    "make_plan",
]

Position = tuple[int, int]
"""(turn, step): turns count from 1, steps are the main calls of a turn from 0."""

TURN_START_CAUSES = (
    "ttl",
    "model",
    "effort",
    "effort",
    "model",
    "system",
    "upgrade",
    "fast_mode",
)
"""Changes a user makes between turns, placed at a turn start when one is free."""
ANYWHERE_CAUSES = ("tools_added", "tools_denied", "tools_loaded")
AROUND_THE_SWITCH = ("effort", "model", "effort", "model")
"""The order of the effort changes and the model switches: one effort change on the first
model (a miss), one on the model switched to (which keeps its cache), then back to the first
model, which the price table prices (the models that keep their cache have no public price)."""


@dataclass(frozen=True)
class AgentRun:
    turn: int
    step: int
    calls: int
    pause_at: int | None = None
    """The call before which the subagent waits past its 5-minute cache lifetime."""


@dataclass
class SessionPlan:
    turns: int
    steps: int
    agents: list[AgentRun] = field(default_factory=list)
    compaction_turns: list[int] = field(default_factory=list)
    changes: dict[Position, str] = field(default_factory=dict)
    """The change the simulation makes before the main call at each position, by name."""
    uuid_main: bool = False
    uuid_agents: set[int] = field(default_factory=set)

    def agent_at(self, turn: int, step: int) -> int | None:
        for index, run in enumerate(self.agents):
            if (run.turn, run.step) == (turn, step):
                return index
        return None

    def after_compaction(self) -> set[Position]:
        """The main call that follows each compaction: it starts a new message list."""
        out = set()
        for turn in self.compaction_turns:
            out.add((turn, 1) if self.steps > 1 else (turn + 1, 0))
        return out


def _spread(count: int, candidates: list[int]) -> list[int]:
    """``count`` evenly spaced picks out of ``candidates`` (deterministic, no rng needed)."""
    n = len(candidates)
    count = min(count, n)
    return [candidates[(i * n) // count + (n // count) // 2] for i in range(count)]


def make_plan(options: SynthOptions, rng: random.Random) -> SessionPlan:
    turns = max(options.turns, 1)
    steps = max(options.tool_calls, 0) + 1
    plan = SessionPlan(turns=turns, steps=steps)
    plan.compaction_turns = _spread(max(options.compactions, 0), list(range(2, turns + 1)))

    if steps > 1:
        order = [*range(2, turns + 1), 1]
        used: set[Position] = set()
        for index in range(max(options.subagents, 0)):
            turn = order[index % len(order)]
            free = [
                s
                for s in range(steps - 1)
                if (turn, s) not in used and not (turn in plan.compaction_turns and s == 0)
            ]
            if not free:
                continue
            step = rng.choice(free)
            used.add((turn, step))
            plan.agents.append(AgentRun(turn, step, rng.randint(3, 5)))

    if options.cache_breaks:
        excluded = {(1, 0), *plan.after_compaction()}
        starts = [(t, 0) for t in range(2, turns + 1) if (t, 0) not in excluded]
        others = [
            (t, s) for t in range(1, turns + 1) for s in range(1, steps) if (t, s) not in excluded
        ]
        rng.shuffle(starts)
        rng.shuffle(others)
        for cause in TURN_START_CAUSES + ANYWHERE_CAUSES:
            first, second = (starts, others) if cause in TURN_START_CAUSES else (others, starts)
            pool = first or second
            if pool:
                plan.changes[pool.pop()] = cause
        around = sorted(at for at, cause in plan.changes.items() if cause in AROUND_THE_SWITCH)
        if len(around) == len(AROUND_THE_SWITCH):
            plan.changes.update(zip(around, AROUND_THE_SWITCH, strict=True))
        if plan.agents:  # halfway through the first subagent's calls, so no rng is drawn
            run = plan.agents[0]
            plan.agents[0] = replace(run, pause_at=run.calls // 2)

    candidates: list[int | None] = list(range(len(plan.agents)))
    if turns > 1:
        candidates.append(None)
    for pick in rng.sample(candidates, min(max(options.uuid_responses, 0), len(candidates))):
        if pick is None:
            plan.uuid_main = True
        else:
            plan.uuid_agents.add(pick)
    return plan
