"""``asz serve`` in a real browser: Chromium (Debian's, driven by Playwright) on the real
server over a landed root.

It walks from the session list to a call as a person would, sees the tool that broke the
cache in the difference, fetches a body by its link and compares its bytes with the file
Claude Code wrote; and it opens a call whose body holds script in every place a body can,
to see it shown as text and never run. ``.ci/run`` installs Chromium when it is missing, so
in CI (``CI`` set) these tests never skip.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect, sync_playwright
from support.serving import HOSTILE, hostile_capture, land, serving, tree

from asz.synth import SynthOptions, synthesize

pytestmark = pytest.mark.slow
"""Chromium and the captures its fixtures land take over 5 s before a test starts."""

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not CHROMIUM.exists():
        if os.environ.get("CI"):
            pytest.fail(f"{CHROMIUM} is missing: .ci/run installs it (apt-get install chromium)")
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield launched
        launched.close()


def test_a_person_finds_every_session_clicks_to_the_break_and_fetches_the_body(
    browser: Browser, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions())
    root = land(tmp_path, claude)
    before = tree(root)
    injected = next(b for b in expected["cache_breaks"] if b["injected"] == "tools_added")
    session_id = injected["session"]
    with serving(root, tmp_path / "home") as served:
        page = browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(str(error)))
        page.goto(served.base + "/")
        sessions = page.locator("#sessions a.session-link")
        shown = {sessions.nth(n).get_attribute("title") for n in range(sessions.count())}
        assert shown == {session["id"] for session in expected["sessions"]}

        page.locator(f'#sessions a[title="{session_id}"]').click()
        expect(page).to_have_url(f"{served.base}/sessions/{session_id}")
        expect(page.locator("svg.chart rect.break").first).to_be_attached()
        page.locator(f'#timeline a.call-link[href$="/calls/{injected["message_id"]}"]').click()
        expect(page).to_have_url(re.compile(f"/calls/{injected['message_id']}$"))

        difference = page.locator("#difference")
        expect(difference).to_contain_text("mcp__linear__create_issue")
        change = difference.locator("details.change", has_text="mcp__linear__create_issue")
        expect(change.locator(".what")).to_have_text("added")
        expect(change.locator("tr.added td.new").first).to_be_visible()
        expect(page.locator("#cache")).to_contain_text("tools")

        link = page.locator("#request-bytes")
        assert link.get_attribute("href") == f"/sessions/{session_id}/bodies/{injected['request']}"
        response = page.request.get(served.base + str(link.get_attribute("href")))
        source = next(b for b in expected["bodies"] if b["id"] == injected["request"])["file"]
        assert response.status == 200
        assert response.body() == (claude / source).read_bytes()
        assert errors == []
        page.close()
    assert tree(root) == before


def test_script_in_a_body_is_shown_as_text_and_never_runs(browser: Browser, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    session, message_id = hostile_capture(claude)
    root = land(tmp_path, claude)
    with serving(root, tmp_path / "home") as served:
        page = browser.new_page()
        dialogs: list[str] = []
        page.on("dialog", lambda dialog: dialogs.append(dialog.message))
        for path in ("/", f"/sessions/{session}", f"/sessions/{session}/calls/{message_id}"):
            page.goto(served.base + path)
            page.wait_for_load_state("load")
            assert page.evaluate("typeof window.aszPwned") == "undefined", path
            assert page.locator("script").count() == 0
            assert page.locator('a[href^="javascript:"]').count() == 0
            assert page.locator("img").count() == 0
        messages = page.locator("#messages")
        for hostile in HOSTILE:
            expect(messages.get_by_text(hostile).first).to_be_visible()
        expect(page.locator("#messages .reminder").first).to_contain_text(HOSTILE[0])
        expect(page.locator("#response")).to_contain_text(HOSTILE[2])
        for text in page.locator("#messages a").all_inner_texts():
            assert "click me" not in text
        assert page.evaluate("typeof window.aszPwned") == "undefined"
        assert dialogs == []
        page.close()


def test_a_phone_never_scrolls_the_page_sideways_only_the_tables_in_their_box(
    browser: Browser, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions())
    root = land(tmp_path, claude)
    injected = next(b for b in expected["cache_breaks"] if b["injected"] == "tools_added")
    session = injected["session"]
    paths = [
        "/",
        f"/sessions/{session}",
        f"/sessions/{session}/calls/{injected['message_id']}",
        "/?since=2026-13-45",
        "/nowhere",
    ]
    with serving(root, tmp_path / "home") as served:
        page = browser.new_page(viewport={"width": 390, "height": 844})
        for path in paths:
            page.goto(served.base + path)
            width = page.evaluate("document.documentElement.scrollWidth")
            assert width <= 390, (path, width)
            header = page.evaluate("document.querySelector('header.top').scrollWidth")
            assert header <= 390, (path, header)
        page.goto(served.base + paths[2])
        page.evaluate("document.querySelectorAll('details').forEach(d => { d.open = true })")
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, ("every part open", width)
        sides = page.evaluate(
            "[...document.querySelectorAll('#difference details[open] table.sbs td.new')]"
            ".map(cell => cell.getBoundingClientRect().width)"
        )
        assert sides and min(sides) >= 200, sides
        page.close()


def test_every_break_of_a_long_session_keeps_a_mark_that_can_be_seen_and_clicked(
    browser: Browser, tmp_path: Path
) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(sessions=1, turns=60, tool_calls=3))
    root = land(tmp_path, claude)
    session = expected["sessions"][0]["id"]
    with serving(root, tmp_path / "home") as served:
        for width in (1280, 390):  # a laptop, a phone
            page = browser.new_page(viewport={"width": width, "height": 800})
            broke: set[str] = set()
            for number in (2, 1):
                page.goto(f"{served.base}/sessions/{session}?page={number}")
                links = page.locator("#timeline tr.broke a.call-link").all()
                broke |= {str(link.get_attribute("href")) for link in links}
            marks = page.locator("svg.chart a.break-mark")
            assert broke and {str(m.get_attribute("href")) for m in marks.all()} == broke
            for n in range(marks.count()):
                rect = marks.nth(n).locator("rect")
                rect.scroll_into_view_if_needed()
                box = rect.bounding_box()
                assert box is not None and box["width"] >= 3 and box["height"] >= 3, (width, box)
                hit = page.evaluate(
                    "([x, y]) => document.elementFromPoint(x, y).closest('a').getAttribute('href')",
                    [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2],
                )
                assert hit == marks.nth(n).get_attribute("href"), width
            bars = page.locator("svg.chart a.bar rect.read")
            widths = [bars.nth(n).bounding_box()["width"] for n in range(bars.count())]  # type: ignore[index]
            assert min(widths) >= 3, (width, min(widths))
            assert page.evaluate("document.documentElement.scrollWidth") <= width
            target = str(marks.first.get_attribute("href"))
            marks.first.locator("rect").click()
            expect(page).to_have_url(served.base + target)
            page.close()


def test_signing_in_by_a_crafted_link_leaves_the_browser_on_this_server(
    browser: Browser, tmp_path: Path
) -> None:
    token = "t0k3n-for-the-browser-0123456789"
    claude = tmp_path / "claude"
    synthesize(claude, SynthOptions(sessions=1, turns=2))
    root = land(tmp_path, claude)
    with serving(root, tmp_path / "home", env={"ASZ_WEB_TOKEN": token}) as served:
        page = browser.new_page()
        for crafted in ("//evil.example/x", "/%5Cevil.example/", "/%5C%5Cevil.example/x"):
            page.goto(f"{served.base}{crafted}?token={token}")
            assert page.url.startswith(served.base + "/"), (crafted, page.url)
            assert "evil.example" not in page.url
        page.close()
