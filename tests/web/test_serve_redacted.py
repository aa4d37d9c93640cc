"""``asz serve`` beyond loopback shows the root redacted; on loopback, exact.

The real server in a subprocess, listening on every address with a token, asked over real
HTTP: its body and session pages carry markers where the synthetic capture holds a person's
home path and account ids, and the root is not written.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from support.harness import Capture, Workspace
from support.repacking import landed_in_passes, repack, sessions
from support.serving import land, serving, tree

from asz.synth import SynthOptions, synthesize

TOKEN = "a-web-token-for-the-team-0123456789"
KEY = "a team's redaction key, long enough"


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    base = tmp_path_factory.mktemp("served")
    expected = synthesize(base / "claude", SynthOptions(sessions=1, turns=3))
    return land(base, base / "claude"), expected


@pytest.mark.slow
def test_beyond_loopback_bodies_and_lines_are_redacted_and_on_loopback_exact(
    capture: tuple[Path, dict], tmp_path: Path
) -> None:
    root, expected = capture
    body = next(b for b in expected["bodies"] if b["id"].endswith(".request"))
    page = f"/sessions/{body['session']}/bodies/{body['id']}"
    before = tree(root)
    env = {"ASZ_WEB_TOKEN": TOKEN, "ASZ_REDACT_KEY": KEY}
    with serving(root, tmp_path / "home", "--listen", "0.0.0.0:0", env=env) as served:
        auth = {"Authorization": f"Bearer {TOKEN}"}
        shown = served.get(page, auth)
        assert shown.status == 200, shown.text
        session = served.get(f"/sessions/{body['session']}", auth)
        assert session.status == 200
    with serving(root, tmp_path / "home") as local:
        exact = local.get(page)
        assert exact.status == 200
    assert "«redacted:" in shown.text and "«redacted:" not in exact.text
    # The user name of the synthetic home path is in the exact page and not in the shared one.
    name = _home_user(exact.text)
    assert name and f"/{name}/" not in shown.text and f"/{name}/" not in session.text
    assert tree(root) == before  # served from a counterpart in the user's cache, never the root
    assert any((tmp_path / "home" / ".cache" / "asz" / "redacted").rglob("*.asz"))


def _home_user(text: str) -> str:
    """The first user name of a ``/Users/<name>/`` or ``/home/<name>/`` path in ``text``."""
    for start in ("/Users/", "/home/"):
        at = text.find(start)
        if at >= 0:
            return text[at + len(start) :].split("/", 1)[0]
    return ""


@pytest.mark.slow
def test_beyond_loopback_a_repacked_session_shows_its_calls_redacted(tmp_path: Path) -> None:
    ws = Workspace(tmp_path / "ws")
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=4, sessions=1, turns=4))
    session = sessions(ws)[0]
    with serving(ws.root, tmp_path / "home") as local:
        exact = local.get(f"/sessions/{session}")
    assert exact.status == 200
    repacked = repack(ws, session)
    assert repacked["sessions"][0]["state"] == "repacked", repacked
    before = tree(ws.root)
    env = {"ASZ_WEB_TOKEN": TOKEN, "ASZ_REDACT_KEY": KEY}
    with serving(ws.root, tmp_path / "home", "--listen", "0.0.0.0:0", env=env) as served:
        shown = served.get(f"/sessions/{session}", {"Authorization": f"Bearer {TOKEN}"})
    assert shown.status == 200, shown.text
    assert 'class="problems"' not in shown.text, shown.text
    calls = re.search(r'<dd id="calls">([^<]*)</dd>', shown.text)
    assert calls is not None and calls.group(1) == re.search(
        r'<dd id="calls">([^<]*)</dd>', exact.text
    ).group(1)
    assert "«redacted:" in shown.text
    assert tree(ws.root) == before
