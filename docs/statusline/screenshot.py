"""The screenshot of docs/statusline.md, made from a synthetic capture: run it to make it again.

Synthesises a capture (``asz synth``'s default options) and lands it with one collector pass,
which keeps each session's cache report. In a tmux pane, ``asz statusline`` is then fed the
JSON Claude Code gives it, twice for one session: as the session stood right after the call
that added an MCP tool (that call broke the cache, so the break is coloured and its cause is
the kept report's), and as it stands at its end. The pane is captured with its colours and
drawn by Chromium (Debian's, through Playwright). Needs tmux, the test extras
(``pip install '.[test]'``) and ``/usr/bin/chromium``.

    .venv/bin/python docs/statusline/screenshot.py [--out docs/statusline/statusline.png]
"""

from __future__ import annotations

import argparse
import html
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from playwright.sync_api import sync_playwright

from asz.commands.collect import collect_once
from asz.config import Config
from asz.synth import SynthOptions, synthesize

CHROMIUM = "/usr/bin/chromium"
COLUMNS, ROWS = 118, 9
DONE = "# end"
SGR = re.compile(r"\x1b\[([0-9;]*)m")
COLOURS = {"31": "#f87171", "32": "#4ade80", "33": "#facc15", "36": "#22d3ee", "90": "#9ca3af"}


def lines_up_to(transcript: Path, message_id: str, out: Path) -> None:
    """The transcript as it stood once the call ``message_id`` was written."""
    lines = transcript.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if message_id.encode() in line)
    out.write_bytes(b"".join(lines[: last + 1]))


def pane_script(asz: Path, inputs: list[tuple[str, Path]]) -> str:
    shown = []
    for say, stdin in inputs:
        shown.append(f"printf '\\033[90m# %s\\033[0m\\n' {shlex.quote(say)}")
        shown.append(f"printf '$ asz statusline < %s\\n' {shlex.quote(stdin.name)}")
        shown.append(f"{shlex.quote(str(asz))} statusline < {shlex.quote(str(stdin))}")
    shown.append(f"printf '%s' {shlex.quote(DONE)}")
    shown.append("sleep 60")
    return "\n".join(shown)


def capture(script: Path, env: dict[str, str]) -> str:
    """The tmux pane that ran ``script``, with its colours as escape sequences."""
    name = f"asz-statusline-{os.getpid()}"
    subprocess.run(
        ["tmux", "new-session", "-d", "-s", name, "-x", str(COLUMNS), "-y", str(ROWS)]
        + ["bash", "--noprofile", "--norc", str(script)],
        env=env,
        check=True,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = subprocess.run(
                ["tmux", "capture-pane", "-p", "-e", "-t", name],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            if DONE in text:
                return text.replace(DONE, "")
            time.sleep(0.2)
        raise SystemExit("the pane did not finish within a minute")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", name], check=False)


def as_html(text: str) -> str:
    """The captured pane as a dark terminal page, its colours kept."""
    out, open_span = [], False
    at = 0
    for found in SGR.finditer(text):
        out.append(html.escape(text[at : found.start()]))
        at = found.end()
        if open_span:
            out.append("</span>")
            open_span = False
        codes = found.group(1).split(";")
        colour = next((COLOURS[code] for code in codes if code in COLOURS), None)
        if colour:
            out.append(f'<span style="color:{colour}">')
            open_span = True
    out.append(html.escape(text[at:]))
    if open_span:
        out.append("</span>")
    body = "".join(out).rstrip()
    return (
        "<!doctype html><meta charset=utf-8><style>body{margin:0;background:#111827}"
        "pre{margin:0;padding:14px 18px;color:#e5e7eb;font:15px/1.45 'DejaVu Sans Mono',"
        f"monospace}}</style><pre>{body}</pre>"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("statusline.png"))
    args = parser.parse_args()
    asz = Path(sys.executable).with_name("asz")
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        expected = synthesize(work / "claude", SynthOptions())
        config = Config(root=work / "root", claude_dirs=(work / "claude",))
        if collect_once(config, as_json=False) != 0:
            raise SystemExit("the collector pass was not complete")
        # The added tool that came latest in its session, so the line before it has a history.
        added, transcript = max(
            (
                (brk, path)
                for brk in expected["cache_breaks"]
                if brk["injected"] == "tools_added"
                for path in (work / "claude" / "projects").glob(f"*/{brk['session']}.jsonl")
            ),
            key=lambda found: found[1].read_bytes().find(found[0]["message_id"].encode())
            / found[1].stat().st_size,
        )
        session = added["session"]
        then = work / "then.jsonl"
        lines_up_to(transcript, added["message_id"], then)
        inputs = []
        for name, path in (("right-after-the-break.json", then), ("at-its-end.json", transcript)):
            stdin = work / name
            stdin.write_text(json.dumps({"session_id": session, "transcript_path": str(path)}))
            inputs.append(stdin)
        script = work / "pane.sh"
        script.write_text(
            pane_script(
                asz,
                [
                    ("the line right after a call broke the cache", inputs[0]),
                    ("the same session at its end, the break long gone", inputs[1]),
                ],
            )
        )
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(work / "home"),
            "ASZ_ROOT": str(config.root),
            "XDG_CACHE_HOME": str(work / "cache"),
            "LANG": "C.UTF-8",
            "TERM": "xterm-256color",
        }
        page_file = work / "pane.html"
        page_file.write_text(as_html(capture(script, env)))
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"]
            )
            page = browser.new_page(viewport={"width": 1100, "height": 200})
            page.goto(page_file.as_uri())
            page.locator("pre").screenshot(path=str(args.out))
            browser.close()
        print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
