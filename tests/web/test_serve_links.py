"""Every page ``asz serve`` links to answers: a crawler follows every same-origin link of a
landed synthetic capture, from the session list down to each body's bytes.

The capture holds what a plain walk through the happy path misses: each compaction's call
(its stream ``acompact-*`` joins no request) and a request body copied under a new uuid, as a
retry writes it, which makes the join of its call ambiguous.
"""

from __future__ import annotations

import html
import re
import shutil
from collections import deque
from pathlib import Path
from urllib.parse import urljoin, urlsplit

import pytest
from support.serving import Served, land, serving

from asz.synth import SynthOptions, synthesize

RETRY_COPY = "0000aaaa-0000-4000-8000-000000000001.request.json"
_HREF = re.compile(r'href="([^"]*)"')


@pytest.fixture(scope="module")
def retried_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, str]:
    """The default capture with one joined request copied under a new uuid (same bytes,
    same mtime), landed; expected.json and the message id of the call whose join the copy
    made ambiguous."""
    tmp = tmp_path_factory.mktemp("retried")
    claude = tmp / "claude"
    expected = synthesize(claude, SynthOptions())
    joined = [b for b in expected["bodies"] if b["role"] == "request" and b["joins"]]
    copied = joined[3]
    source = claude / copied["file"]
    shutil.copy2(source, source.parent / RETRY_COPY)
    return land(tmp, claude), expected, copied["message_id"]


def crawl(served: Served, start: str = "/") -> dict[str, int]:
    """Every same-origin path reachable from ``start`` by links, with its status."""
    seen: dict[str, int] = {}
    queue = deque([start])
    while queue:
        path = queue.popleft()
        if path in seen:
            continue
        answer = served.get(path)
        seen[path] = answer.status
        if not answer.headers.get("content-type", "").startswith("text/html"):
            continue
        for href in _HREF.findall(answer.text):
            target = urljoin(path, html.unescape(href))
            parts = urlsplit(target)
            if parts.scheme or parts.netloc:
                continue
            local = parts.path + (f"?{parts.query}" if parts.query else "")
            if local not in seen:
                queue.append(local)
    return seen


@pytest.mark.slow
def test_every_link_of_a_capture_answers_compactions_and_ambiguous_joins_included(
    retried_root: tuple[Path, dict, str], tmp_path: Path
) -> None:
    root, expected, ambiguous = retried_root
    with serving(root, tmp_path / "home") as served:
        seen = crawl(served)
    failed = {path: status for path, status in seen.items() if status >= 500}
    assert failed == {}
    every_call = {
        f"/sessions/{session['id']}/calls/{call['message_id']}"
        for session in expected["sessions"]
        for call in session["calls"]
    }
    assert every_call <= set(seen)
    compactions = {path for path in seen if "/calls/" in path} - every_call
    assert compactions, "the compactions' calls, which expected.json does not list, are linked"
    assert any(path.endswith(f"/calls/{ambiguous}") for path in seen)
    assert any("/bodies/" in path for path in seen)


def test_a_call_that_joined_no_request_shows_what_it_has(
    retried_root: tuple[Path, dict, str], tmp_path: Path
) -> None:
    root, expected, ambiguous = retried_root
    session = next(
        s for s in expected["sessions"] if any(c["message_id"] == ambiguous for c in s["calls"])
    )
    with serving(root, tmp_path / "home") as served:
        timeline = served.get(f"/sessions/{session['id']}").text
        compaction = re.search(
            r'/calls/([^"]+)" class="call-link">\d+</a></td>\s*<td>[^<]*</td>'
            r'\s*<td class="mono">acompact-',
            timeline,
        )
        assert compaction is not None
        retried = served.get(f"/sessions/{session['id']}/calls/{ambiguous}")
        copy = RETRY_COPY.removesuffix(".json")
        copied = served.get(f"/sessions/{session['id']}/bodies/{copy}/page")
        compacted = served.get(f"/sessions/{session['id']}/calls/{compaction.group(1)}")
    assert retried.status == 200 and compacted.status == 200
    assert "no request landed or joined" in retried.text
    assert 'id="response-body"' in retried.text
    assert "no request landed or joined" in compacted.text
    assert copied.status == 200
    assert "joined to no call: ambiguous" in copied.text
    assert f'href="/sessions/{session["id"]}/bodies/{copy}" id="exact-bytes"' in copied.text
