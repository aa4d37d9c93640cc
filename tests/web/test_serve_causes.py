"""The web view shows the causes the cache report names without bodies: a synthetic capture
with its bodies removed, landed by the real collector and served by the real ``asz serve``."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.serving import land, serving
from support.synth_causes import INJECTED

from asz.synth import SynthOptions, synthesize


@pytest.mark.slow
def test_a_session_without_bodies_shows_each_break_with_its_cause(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=4))
    for body in expected["bodies"]:
        (claude / body["file"]).unlink()
    root = land(tmp_path, claude)
    session = expected["sessions"][0]["id"]
    breaks = [b for b in expected["cache_breaks"] if b["session"] == session]
    with serving(root, tmp_path / "home") as served:
        page = served.get(f"/sessions/{session}")
        assert page.status == 200
        for cause in {INJECTED[b["injected"]][0] for b in breaks}:
            assert f'<span class="cause cause-{cause}"' in page.text, cause
        for brk in breaks:
            call = served.get(f"/sessions/{session}/calls/{brk['message_id']}")
            assert call.status == 200
            cause = INJECTED[brk["injected"]][0]
            assert f'<span class="cause cause-{cause}">{cause}</span>' in call.text, brk
