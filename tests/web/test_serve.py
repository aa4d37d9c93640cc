"""``asz serve`` over HTTP: the real executable on a landed root, real requests.

The pages of a synthetic root and what they show, the exact bytes of a body, the 404 pages,
and every guard of the web section of docs/security.md: the Host header, the token, the
methods, the headers, escaping, and that browsing writes nothing to the root. The browser's
view is in ``test_serve_browser.py``.
"""

from __future__ import annotations

import html
import os
import re
import signal
import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote, urlsplit

import pytest
from support.serving import (
    HIDING,
    HOSTILE,
    Served,
    child_env,
    hostile_capture,
    land,
    request,
    serve_command,
    serving,
    tree,
)

from asz.synth import SynthOptions, synthesize

TOKEN = "t0k3n-for-the-tests-0123456789abcdef"


@pytest.fixture(scope="module")
def synth_root(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, Path]:
    """The default synthetic capture landed by the real collector: the root, expected.json,
    and the Claude Code directory it came from."""
    tmp = tmp_path_factory.mktemp("synth")
    claude = tmp / "claude"
    expected = synthesize(claude, SynthOptions())
    return land(tmp, claude), expected, claude


@pytest.fixture(scope="module")
def served_synth(
    synth_root: tuple[Path, dict, Path], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Served]:
    """One ``asz serve`` of the synthetic root for the module's tests that only read pages
    and look at the answers (a test that reads the server's log or ends it starts its own)."""
    root, _expected, _claude = synth_root
    with serving(root, tmp_path_factory.mktemp("home")) as served:
        yield served


def tools_added(expected: dict) -> dict:
    return next(b for b in expected["cache_breaks"] if b["injected"] == "tools_added")


def test_the_pages_show_every_session_its_calls_and_the_tool_that_broke_the_cache(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, expected, claude = synth_root
    with serving(root, tmp_path / "home") as served:
        listing = served.get("/")
        assert listing.status == 200
        for session in expected["sessions"]:
            assert f'href="/sessions/{session["id"]}"' in listing.text
        injected = tools_added(expected)
        session_id = injected["session"]
        page = served.get(f"/sessions/{session_id}")
        assert page.status == 200
        session = next(s for s in expected["sessions"] if s["id"] == session_id)
        for call in session["calls"]:
            assert f"/sessions/{session_id}/calls/{call['message_id']}" in page.text
        assert "compaction (" in page.text and "<svg" in page.text
        call = served.get(f"/sessions/{session_id}/calls/{injected['message_id']}")
        assert call.status == 200
        difference = call.text.split('id="difference"', 1)[1].split("</section>", 1)[0]
        assert "mcp__linear__create_issue" in difference and "added" in difference
        request_id = injected["request"]
        link = f"/sessions/{session_id}/bodies/{request_id}"
        assert f'href="{link}"' in call.text
        body = served.get(link)
        source = next(b for b in expected["bodies"] if b["id"] == request_id)["file"]
        assert body.status == 200
        assert body.headers["content-type"] == "application/json"
        assert body.body == (claude / source).read_bytes()
        assert "sandbox" in body.headers["content-security-policy"]


def test_the_session_list_sorts_filters_and_finds_sessions_by_their_prompts(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, expected, _claude = synth_root
    ids = [session["id"] for session in expected["sessions"]]
    with serving(root, tmp_path / "home") as served:

        def listed(query: str) -> list[str]:
            answer = served.get("/?" + query)
            assert answer.status == 200
            return [i for i in re.findall(r'href="/sessions/([0-9a-f-]{36})"', answer.text)]

        assert sorted(listed("")) == sorted(ids)
        assert listed("sort=first&order=asc") == list(reversed(listed("sort=first&order=desc")))
        cwd = expected["sessions"][0]["cwd"]
        assert listed("project=" + quote(cwd)) == [ids[0]]
        assert listed("q=no+prompt+says+this+xyzzy") == []
        prompt = _a_prompt_of(root, ids[1])
        assert ids[1] in listed("q=" + quote(prompt[:40]))
        assert listed("until=2000-01-01") == []
        assert sorted(listed("since=&until=&q=&project=")) == sorted(ids)


@pytest.mark.parametrize(
    ("query", "said"),
    [
        ("/?since=2026-13-45", "since=&#39;2026-13-45&#39; is not a day"),
        ("/?until=junk", "until=&#39;junk&#39; is not a day"),
        ("/?page=999999999999999999999", "is not a page of this list, which has 1 page"),
        ("/?page=2", "page=&#39;2&#39; is not a page"),
        ("/?page=-1", "page=&#39;-1&#39; is not a page"),
        ("/?sort=nonsense", "sort=&#39;nonsense&#39; is no column"),
        ("/?order=sideways", "order=&#39;sideways&#39; is neither desc nor asc"),
        ("/sessions/{s}?page=0", "is not a page of this list"),
        ("/sessions/{s}?page=abc", "page=&#39;abc&#39; is not a page"),
    ],
)
def test_a_query_value_no_page_offers_is_a_400_page_that_says_what_is_wrong(
    synth_root: tuple[Path, dict, Path], served_synth: Served, query: str, said: str
) -> None:
    _root, expected, _claude = synth_root
    answer = served_synth.get(query.format(s=expected["sessions"][0]["id"]))
    assert answer.status == 400
    assert answer.headers["content-type"].startswith("text/html")
    assert said in answer.text


def _cell(page: str, pattern: str) -> str:
    found = re.search(pattern, page, re.DOTALL)
    assert found is not None, pattern
    return found.group(1).strip()


def test_moving_around_calls_in_time_with_the_list_and_the_session_agreeing(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, expected, claude = synth_root
    injected = tools_added(expected)
    session_id = injected["session"]
    with serving(root, tmp_path / "home") as served:
        listing = served.get("/").text
        page = served.get(f"/sessions/{session_id}").text
        table = page.split('id="timeline"', 1)[1].split("</table>", 1)[0]
        rows = re.findall(r'/calls/([^"]+)" class="call-link">(\d+)</a>', table)
        assert [int(n) for _, n in rows] == list(range(1, len(rows) + 1))
        times = re.findall(r'class="call-link">\d+</a></td>\s*<td>([^<]*)</td>', table)
        assert times == sorted(times)
        at = next(
            n for n, (message_id, _) in enumerate(rows) if message_id == injected["message_id"]
        )
        call = served.get(f"/sessions/{session_id}/calls/{injected['message_id']}").text
        nav = _cell(call, r'<nav class="calls" id="calls-nav">(.*?)</nav>')
        assert f'/calls/{rows[at - 1][0]}" rel="prev">call {at}</a>' in nav
        assert f'/calls/{rows[at + 1][0]}" rel="next">call {at + 2}</a>' in nav
        compared = _cell(call, r'<p id="compared">(.*?)</p>')
        assert re.search(r'href="/sessions/[^"]+/calls/[^"]+">call \d+</a>', compared)
        assert f"/sessions/{session_id}/bodies/" in compared
        body_page = served.get(_cell(call, r'<a href="([^"]+)" id="request-body"')).text
        back = _cell(body_page, r'<dd id="body-call">(.*?)</dd>')
        assert (
            f'href="/sessions/{session_id}/calls/{injected["message_id"]}">call {at + 1}</a>'
            in back
        )
        raw = served.get(_cell(body_page, r'<a href="([^"]+)" id="exact-bytes"'))
        source = next(b for b in expected["bodies"] if b["id"] == injected["request"])["file"]
        assert raw.body == (claude / source).read_bytes()
        first = served.get(f"/sessions/{session_id}/calls/{rows[0][0]}").text
        assert 'rel="prev"' not in first and "first call" in first
        icon = _cell(listing, r'<link rel="icon" href="([^"]+)"')
        favicon = served.get(icon)
        assert favicon.status == 200 and favicon.headers["content-type"] == "image/svg+xml"
    listed = listing.split(f'title="{session_id}"', 1)[1].split("</tr>", 1)[0]
    assert _cell(listed, r'class="models">(.*?)</td>') == _cell(page, r'<dd id="models">(.*?)</dd>')
    calls = _cell(listed, r'class="num calls">(.*?)</td>')
    assert calls == _cell(page, r'<dd id="calls">([0-9,]+) in')
    assert int(calls.replace(",", "")) == len(rows)


def test_pages_of_one_session_read_at_once_each_answer_whole(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    """The server keeps a session it has opened (its readers keep state between reads), so
    pages of the same session asked at once must each get their own, whole answer."""
    from concurrent.futures import ThreadPoolExecutor

    root, expected, claude = synth_root
    session = expected["sessions"][0]
    joined = {c[role] for c in session["calls"] for role in ("request", "response")}
    bodies = [b for b in expected["bodies"] if b["id"] in joined]
    calls = [f"/sessions/{session['id']}/calls/{c['message_id']}" for c in session["calls"]]
    with serving(root, tmp_path / "home") as served, ThreadPoolExecutor(8) as pool:
        got = list(
            pool.map(
                served.get, [f"/sessions/{session['id']}/bodies/{b['id']}" for b in bodies] * 2
            )
        )
        pages = list(pool.map(served.get, calls))
    assert [answer.body for answer in got] == [
        (claude / b["file"]).read_bytes() for b in bodies
    ] * 2
    assert all(page.status == 200 for page in pages)


def test_an_empty_root_says_how_sessions_land_in_it(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    with serving(root, tmp_path / "home") as served:
        page = served.get("/")
    assert page.status == 200
    empty = _cell(page.text, r'<section id="empty">(.*?)</section>')
    assert "asz collect" in empty and "OTEL_LOG_RAW_API_BODIES" in empty


def test_the_prompt_search_shows_each_matching_prompt_and_links_the_call_it_started(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, expected, _claude = synth_root
    session_id = expected["sessions"][1]["id"]
    prompt = _a_prompt_of(root, session_id)
    words = " ".join(prompt.split()[:4])
    with serving(root, tmp_path / "home") as served:
        page = served.get("/?q=" + quote(words.upper()))
        found = page.text.split('<ol class="found" id="found">', 1)[1].split("</ol>", 1)[0]
        hits = re.findall(r"<li>(.*?)</li>", found, re.DOTALL)
        assert hits and f'href="/sessions/{session_id}"' in found
        assert html.escape(words, quote=True) in found.replace("<mark>", "").replace("</mark>", "")
        calls = re.findall(r'href="(/sessions/[^"]+/calls/[^"]+)" class="found-call"', found)
        assert calls
        call = served.get(html.unescape(calls[0]))
        assert call.status == 200
        messages = call.text.split('id="messages"', 1)[1]
        assert html.escape(words, quote=True) in messages
        nothing = served.get("/?q=no+prompt+says+this+xyzzy").text
        assert "no prompt holds it" in nothing


def _a_prompt_of(root: Path, session_id: str) -> str:
    from asz.web.prompts import session_prompts
    from asz.web.readonly import open_readonly

    return session_prompts(open_readonly(root).session(session_id))[0].text


@pytest.mark.parametrize(
    ("path", "said"),
    [
        ("/sessions/not-a-session", "is not a session id"),
        ("/sessions/..%2F..%2Fetc", "no page at"),
        ("/sessions/%2E%2E", "is not a session id"),
        ("/sessions/00000000-0000-4000-8000-000000000000", "no session"),
        ("/sessions/{s}/calls/msg_nothing", "has no call msg_nothing"),
        ("/sessions/{s}/bodies/nothing.request", "holds no body nothing.request"),
        ("/sessions/{s}/bodies/..%2F..%2F..%2Fsummary.json", "no page at"),
        ("/sessions/{s}/bodies/%2E%2E", "holds no body"),
        ("/nowhere", "no page at /nowhere"),
    ],
)
def test_what_is_not_there_is_a_404_page_that_says_what(
    synth_root: tuple[Path, dict, Path], served_synth: Served, path: str, said: str
) -> None:
    _root, expected, _claude = synth_root
    answer = served_synth.get(path.format(s=expected["sessions"][0]["id"]))
    assert answer.status == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert said in answer.text
    assert "content-security-policy" in answer.headers


def test_a_foreign_host_is_refused_and_only_get_and_head_are_answered(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    """DNS rebinding: a page on another site reaches the server under its own name."""
    root, _expected, _claude = synth_root
    with serving(root, tmp_path / "home") as served:
        port = served.port
        for host in (
            "evil.example",
            f"evil.example:{port}",
            f"127.0.0.1.evil.example:{port}",
            f"localhost:{port + 1}",
            "",
            f"[::1]x:{port}",
        ):
            answer = request(port, "/", {"Host": host})
            assert answer.status == 403, host
            assert b"session" not in answer.body
        for host in (
            f"localhost:{port}",
            f"127.0.0.1:{port}",
            f"LOCALHOST:{port}",
            f"[::1]:{port}",
            f"10.1.2.3:{port}",
        ):
            assert request(port, "/", {"Host": host}).status == 200, host
        assert _without_host(port).startswith(b"HTTP/1.1 4")
        for method in ("POST", "PUT", "DELETE", "PATCH", "OPTIONS"):
            answer = request(port, "/", method=method)
            assert answer.status == 405, method
            assert answer.headers["allow"] == "GET, HEAD"
        head = request(port, "/", method="HEAD")
        assert head.status == 200 and head.body == b""


def _without_host(port: int) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(b"GET / HTTP/1.0\r\n\r\n")
        return sock.recv(100)


def test_every_answer_carries_a_policy_that_runs_no_script(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, expected, _claude = synth_root
    session = expected["sessions"][0]
    paths = [
        "/",
        f"/sessions/{session['id']}",
        "/static/asz.css",
        "/nowhere",
        f"/sessions/{session['id']}/calls/{session['calls'][0]['message_id']}",
    ]
    with serving(root, tmp_path / "home") as served:
        for path in paths:
            answer = served.get(path)
            policy = answer.headers["content-security-policy"]
            assert "default-src 'none'" in policy and "script-src" not in policy, path
            assert "'unsafe-inline'" not in policy and "http" not in policy
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["x-frame-options"] == "DENY"
            assert answer.headers["referrer-policy"] == "no-referrer"
            if answer.headers["content-type"].startswith("text/html"):
                assert "<script" not in answer.text and " style=" not in answer.text, path
                assert not re.search(r"\son\w+=", answer.text), path


def test_hostile_text_in_a_body_is_escaped_everywhere(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    session, message_id = hostile_capture(claude)
    root = land(tmp_path, claude)
    with serving(root, tmp_path / "home") as served:
        pages = [
            served.get(p)
            for p in ("/", f"/sessions/{session}", f"/sessions/{session}/calls/{message_id}")
        ]
    for page in pages:
        assert page.status == 200
        for hostile in HOSTILE:
            assert hostile not in page.text
        assert "<script" not in page.text and "<img" not in page.text
        assert 'href="javascript:' not in page.text
    call = pages[2].text
    assert "&lt;script&gt;window.aszPwned = 1&lt;/script&gt;" in call
    assert 'class="reminder"' in call and 'class="marker"' in call


@pytest.mark.slow
def test_control_and_bidi_characters_are_shown_as_markers_and_the_bytes_stay_exact(
    tmp_path: Path,
) -> None:
    claude = tmp_path / "claude"
    session, message_id = hostile_capture(claude, HIDING)
    root = land(tmp_path, claude)
    hidden = re.compile(
        "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200b-\u200f\u202a-\u202e\u2066-\u2069]"
    )
    with serving(root, tmp_path / "home") as served:
        paths = ["/", f"/sessions/{session}", f"/sessions/{session}/calls/{message_id}"]
        pages = {path: served.get(path) for path in paths}
        body = served.get(
            f"/sessions/{session}/bodies/0000beef-0000-4000-8000-000000000001.request"
        )
    for path, page in pages.items():
        assert page.status == 200
        assert hidden.search(page.text) is None, (path, hidden.search(page.text))
    listed, call = pages["/"].text, pages[paths[2]].text
    assert "left ⟨U+202E⟩right-to-left⟨U+202C⟩" in listed  # the project, from the cwd
    for marker in ("U+202E", "U+2067", "U+200F", "U+061C", "U+0000", "U+001B", "U+009B", "U+000D"):
        assert f"⟨{marker}⟩" in call, marker
    assert body.status == 200
    assert (
        body.body
        == (
            claude / "asz" / "provider-bodies" / "0000beef-0000-4000-8000-000000000001.request.json"
        ).read_bytes()
    )


@pytest.mark.slow
def test_a_listen_beyond_loopback_needs_a_token_and_then_every_request_carries_it(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, _expected, _claude = synth_root
    home = tmp_path / "home"
    refused = subprocess.run(
        serve_command(root, "--listen", "0.0.0.0:0"),
        env=child_env(home),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 1
    assert b"configure a token" in refused.stderr and refused.stdout == b""
    with serving(root, home, "--listen", "0.0.0.0:0", env={"ASZ_WEB_TOKEN": TOKEN}) as served:
        assert served.get("/").status == 401
        assert served.get("/", {"Authorization": "Bearer wrong-token-0123456789"}).status == 401
        assert served.get("/static/asz.css").status == 401
        assert served.get("/", {"Authorization": f"Bearer {TOKEN}"}).status == 200
        link = served.get(f"/?sort=calls&token={TOKEN}")
        assert link.status == 303
        assert link.headers["location"] == "/?sort=calls"
        cookie = link.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        assert served.get("/", {"Cookie": cookie.split(";")[0]}).status == 200
        assert served.get("/?token=not-the-token-0123456789").status == 401
        session = f"/sessions/{_expected['sessions'][0]['id']}"
        assert served.get(f"{session}?token={TOKEN}").headers["location"] == session
        assert (
            served.get(
                "/", {"Host": f"evil.example:{served.port}", "Authorization": f"Bearer {TOKEN}"}
            ).status
            == 403
        )
    logged = b"".join(str(line).encode() for line in served.lines)
    assert TOKEN.encode() not in logged


@pytest.mark.parametrize(
    "path",
    [
        "//evil.example/x",
        "/%5Cevil.example/",
        "/%5C%5Cevil.example/",
        "///evil.example",
        "/%2F%2Fevil.example",
        "/\\evil.example",
        "/%09/evil.example",
    ],
)
def test_signing_in_by_link_redirects_only_to_a_page_of_this_server(
    synth_root: tuple[Path, dict, Path], tmp_path: Path, path: str
) -> None:
    root, _expected, _claude = synth_root
    with serving(root, tmp_path / "home", env={"ASZ_WEB_TOKEN": TOKEN}) as served:
        answer = served.get(f"{path}?token={TOKEN}")
    assert answer.status in (303, 400)
    if answer.status == 303:
        location = answer.headers["location"]
        assert location.startswith("/") and location[1:2] not in ("/", "\\"), location
        assert urlsplit(location).netloc == "" and "evil.example" not in location


@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_control_character_in_the_path_is_refused_and_logged_as_json(
    synth_root: tuple[Path, dict, Path], tmp_path: Path, token: str | None
) -> None:
    root, _expected, _claude = synth_root
    env = {"ASZ_WEB_TOKEN": token} if token else {}
    query = f"?token={token}" if token else ""
    with serving(root, tmp_path / "home", env=env) as served:
        for path in ("/a%0d%0aSet-Cookie:x=1", "/sessions/x%0d%0aSet-Cookie:x=1/", "/%00"):
            answer = served.get(path + query)
            assert answer.status == 400, path
            assert "set-cookie" not in answer.headers
        assert served.get("/", {"Authorization": f"Bearer {token}"} if token else {}).status == 200
        served.process.terminate()
        served.process.wait(timeout=30)
        assert served.process.stderr is not None
        assert served.process.stderr.read() == b""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_stops_the_server_cleanly_with_exit_0(
    synth_root: tuple[Path, dict, Path], tmp_path: Path, sig: signal.Signals
) -> None:
    """As the collector stops: after the requests in flight, exit 0, no traceback, and the
    log's last line says so."""
    root, expected, _claude = synth_root
    with serving(root, tmp_path / "home") as served:
        assert served.get(f"/sessions/{expected['sessions'][0]['id']}").status == 200
        idle = socket.create_connection(("127.0.0.1", served.port), timeout=10)
        served.process.send_signal(sig)
        code = served.ended()
        idle.close()
        assert served.process.stderr is not None
        said = served.process.stderr.read()
    assert code == 0 and said == b""
    assert served.lines[-1]["event"] == "stopped"


def test_a_request_the_server_cannot_parse_is_a_400_and_a_json_line(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, _expected, _claude = synth_root
    with serving(root, tmp_path / "home") as served:
        for raw in (b"GARBAGE\r\n\r\n", b"GET /\x01 HTTP/1.1\r\nHost: x\r\n\r\n"):
            with socket.create_connection(("127.0.0.1", served.port), timeout=10) as sock:
                sock.sendall(raw)
                assert sock.recv(100).startswith(b"HTTP/1.1 400")
        served.process.send_signal(signal.SIGTERM)
        assert served.ended() == 0
        assert served.process.stderr is not None
        assert served.process.stderr.read() == b""
    warned = [line for line in served.lines if line["event"] == "server_warning"]
    assert len(warned) == 2 and "GARBAGE" not in str(warned)


@pytest.mark.slow
def test_a_token_file_must_be_private_and_a_token_long(
    synth_root: tuple[Path, dict, Path], tmp_path: Path
) -> None:
    root, _expected, _claude = synth_root
    home = tmp_path / "home"
    token_file = tmp_path / "web-token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o644)

    def run(*flags: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        return subprocess.run(
            serve_command(root, "--listen", "127.0.0.1:0", *flags),
            env=child_env(home, env),
            capture_output=True,
            timeout=60,
            check=False,
        )

    shown = run("--token-file", str(token_file))
    assert shown.returncode == 1 and b"must be private" in shown.stderr
    assert run(env={"ASZ_WEB_TOKEN": "short"}).returncode == 1
    token_file.chmod(0o600)
    with serving(root, home, "--token-file", str(token_file)) as served:
        assert served.get("/").status == 401
        assert served.get("/", {"Authorization": f"Bearer {TOKEN}"}).status == 200
    default = home / ".config" / "asz" / "web-token"
    default.parent.mkdir(parents=True)
    default.write_text(TOKEN)
    default.chmod(0o600)
    with serving(root, home) as served:
        assert served.get("/").status == 401


@pytest.mark.slow
def test_browsing_every_page_writes_nothing_to_the_root(tmp_path: Path) -> None:
    """With the derived files the collector keeps removed, every reader would want to write
    them again: the server must not."""
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(sessions=1, turns=3))
    root = land(tmp_path, claude)
    for derived in ("summary.json", "cache.json", "facts.json"):
        for path in root.rglob(derived):
            path.unlink()
    before = tree(root)
    session = expected["sessions"][0]
    with serving(root, tmp_path / "home") as served:
        paths = ["/", "/?q=x", f"/sessions/{session['id']}"]
        paths += [f"/sessions/{session['id']}/calls/{c['message_id']}" for c in session["calls"]]
        paths += [f"/sessions/{session['id']}/bodies/{b['id']}" for b in expected["bodies"][:6]]
        for path in paths:
            assert served.get(path).status in (200, 404), path
    assert tree(root) == before


def test_serve_refuses_a_bad_listen_and_a_missing_root(tmp_path: Path) -> None:
    home = tmp_path / "home"
    for flags, code in ((("--listen", "nonsense"), 2), (("--root", str(tmp_path / "none")), 2)):
        done = subprocess.run(
            serve_command(tmp_path, *flags),
            env=child_env(home),
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == code, done.stderr
    assert os.listdir(tmp_path) == ["home"]


@pytest.mark.slow
def test_a_long_session_is_shown_a_page_of_rows_at_a_time_with_every_call_charted(
    tmp_path: Path,
) -> None:
    from asz.web.chart import MAX_BARS
    from asz.web.pages import ROWS_PER_PAGE

    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(sessions=1, turns=60, tool_calls=3))
    root = land(tmp_path, claude)
    session = expected["sessions"][0]
    calls = {call["message_id"] for call in session["calls"]}
    assert len(calls) > ROWS_PER_PAGE
    with serving(root, tmp_path / "home") as served:
        pages = [served.get(f"/sessions/{session['id']}?page={n}") for n in (1, 2)]
        listing = served.get("/").text
    listed_calls = _cell(listing, r'class="num calls">(.*?)</td>')
    pager = _cell(pages[0].text, r'<nav class="pager">(.*?)</nav>')
    assert f": {listed_calls} calls" in pager, (listed_calls, pager)
    shown: list[list[str]] = []
    broke: set[str] = set()
    charted: list[set[str]] = []
    for page in pages:
        assert page.status == 200
        table = page.text.split('id="timeline"', 1)[1].split("</table>", 1)[0]
        shown.append(re.findall(r'/calls/([^"]+)" class="call-link"', table))
        broke |= set(
            re.findall(
                r'<tr class="broke[^"]*">\s*<td class="num"><a href="[^"]*/calls/([^"]+)"', table
            )
        )
        chart = page.text.split('<svg class="chart"', 1)[1].split("</svg>", 1)[0]
        assert 0 < chart.count('class="bar"') <= MAX_BARS
        marks = re.findall(r'/calls/([^"]+)" class="break-mark"', chart)
        assert len(marks) == len(set(marks))
        charted.append(set(marks))
    assert broke and charted[0] == charted[1] == broke
    first, second = shown
    assert 0 < len(first) <= ROWS_PER_PAGE and second
    assert not set(first) & set(second) and calls <= set(first) | set(second)
    assert 'rel="next"' in pages[0].text and 'rel="prev"' in pages[1].text


@pytest.mark.slow
def test_the_serve_benchmark_runs_and_meets_its_targets_on_a_small_session(tmp_path: Path) -> None:
    import sys

    from support.paths import REPO

    done = subprocess.run(
        [
            sys.executable,
            str(REPO / "bench" / "serve.py"),
            *("--calls", "60", "--request-kb", "50", "--sessions", "20"),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert re.search(r"session\s+first\s+\d", done.stdout) and "peak RSS" in done.stdout
    assert re.search(r"search\s+first\s+\d.*target under 1.0 s", done.stdout)
