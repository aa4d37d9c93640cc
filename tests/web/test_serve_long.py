"""What is too long to look at: a 2 MB one-line prompt, and the next call's difference that
removes it. The pages fold it to its first few KB with a link to the exact bytes, which stay
whole; large parts start closed."""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
import pytest
from support.serving import land, serving

from asz.synth import SynthOptions, synthesize
from asz.web.diff import LINE
from asz.web.request import FOLD, PAGE_TEXT

LONG = 2_000_000
MARK = "pasted-log-line "


@pytest.fixture(scope="module")
def long_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, str, str, Path]:
    """A capture whose one request (of a chain of two in the main stream) ends with a 2 MB
    one-line prompt, landed: the root, the session, the two calls' message ids, and the
    request's file."""
    tmp = tmp_path_factory.mktemp("long")
    claude = tmp / "claude"
    expected = synthesize(claude, SynthOptions(sessions=1, turns=4, subagents=0, compactions=0))
    session = expected["sessions"][0]
    main = [call for call in session["calls"] if call["stream"] == "main" and call["request"]]
    first, second = main[1], main[2]
    source = claude / next(b["file"] for b in expected["bodies"] if b["id"] == first["request"])
    body = orjson.loads(source.read_bytes())
    line = (MARK * (LONG // len(MARK) + 1))[:LONG]
    body["messages"][-1]["content"] = [{"type": "text", "text": line}]
    stat = source.stat()
    source.write_bytes(orjson.dumps(body))
    os.utime(source, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return land(tmp, claude), session["id"], first["message_id"], second["message_id"], source


@pytest.mark.slow
def test_a_2_mb_prompt_is_folded_and_its_bytes_stay_one_click_away(
    long_root: tuple[Path, str, str, str, Path], tmp_path: Path
) -> None:
    root, session, first, second, source = long_root
    with serving(root, tmp_path / "home") as served:
        page = served.get(f"/sessions/{session}/calls/{first}")
        after = served.get(f"/sessions/{session}/calls/{second}")
        links = re.findall(
            r'<a href="(/sessions/[^"]+/bodies/[^"]+)">the exact bytes</a>', page.text
        )
        assert links, "the folded text links its exact bytes"
        whole = served.get(links[0])
        body_page = served.get(links[0] + "/page")
    assert page.status == 200 and after.status == 200
    assert len(page.body) < 2 * PAGE_TEXT, len(page.body)
    assert len(after.body) < 2 * PAGE_TEXT, len(after.body)
    assert MARK * 10 in page.text and "more characters not shown" in page.text
    longest = max(len(run) for run in re.findall(f"(?:{MARK})+", page.text))
    assert longest <= FOLD
    difference = after.text.split('id="difference"', 1)[1].split("</section>", 1)[0]
    assert "more characters not shown" in difference
    assert max(len(run) for run in re.findall(f"(?:{MARK})+", difference)) <= LINE
    assert whole.status == 200 and whole.body == source.read_bytes()
    assert body_page.status == 200 and PAGE_TEXT < len(body_page.body) < 2 * PAGE_TEXT
    assert "more characters not shown" in body_page.text
    assert re.search(r'<details class="message role-user" id="message-\d+">', page.text)
