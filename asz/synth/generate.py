"""A whole synthetic capture: the shared setup, then the sessions one after another on one
clock."""

from __future__ import annotations

import random

from asz.synth.conversation import MINUTE_MS, SessionSimulation
from asz.synth.options import SynthOptions
from asz.synth.plan import make_plan
from asz.synth.records import Session
from asz.synth.shared import make_setup
from asz.synth.writer import Capture

__all__ = ["generate"]


def generate(options: SynthOptions, capture: Capture) -> list[Session]:
    setup = make_setup(options, capture, random.Random(f"asz.synth:{options.seed}"))
    sessions = []
    for number in range(max(options.sessions, 0)):
        rng = random.Random(f"asz.synth:{options.seed}:session:{number}")
        sessions.append(SessionSimulation(setup, rng, make_plan(options, rng)).run())
        setup.clock.tick(5 * MINUTE_MS, 40 * MINUTE_MS)
    return sessions
