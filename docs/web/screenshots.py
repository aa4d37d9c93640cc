"""The screenshots of docs/web.md, made from a synthetic root: run it to make them again.

Synthesises a capture (``asz synth``'s default options), lands it with one collector pass,
starts ``asz serve`` on a free port and has Chromium (Debian's, through Playwright) take each
page. Needs the test extras (``pip install '.[test]'``) and ``/usr/bin/chromium``.

    .venv/bin/python docs/web/screenshots.py [--out docs/web]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from asz.commands.collect import collect_once
from asz.config import Config
from asz.synth import SynthOptions, synthesize

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path(__file__).parent)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        expected = synthesize(work / "claude", SynthOptions())
        config = Config(root=work / "root", claude_dirs=(work / "claude",))
        if collect_once(config, as_json=False) != 0:
            raise SystemExit("the collector pass was not complete")
        injected = next(b for b in expected["cache_breaks"] if b["injected"] == "tools_added")
        session = injected["session"]
        system = next(
            b
            for b in expected["cache_breaks"]
            if b["injected"] == "system" and b["session"] == session
        )
        asz = shutil.which("asz", path=str(Path(sys.executable).parent)) or "asz"
        server = subprocess.Popen(
            [
                asz,
                "serve",
                "--root",
                str(config.root),
                "--listen",
                "127.0.0.1:0",
                "--log-format",
                "json",
            ],
            stdout=subprocess.PIPE,
        )
        try:
            assert server.stdout is not None
            port = json.loads(server.stdout.readline())["port"]
            base = f"http://127.0.0.1:{port}"
            call = f"/sessions/{session}/calls/{injected['message_id']}"
            shots = {
                "sessions.png": ("/", None, 600),
                "session.png": (f"/sessions/{session}", None, 1500),
                "call.png": (call, None, 1100),
                "difference.png": (
                    f"/sessions/{session}/calls/{system['message_id']}",
                    "#difference-head",
                    900,
                ),
                "messages.png": (call, "#messages", 900),
            }
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
                page = browser.new_page(viewport={"width": 1400, "height": 900})
                # Each page is taken from its top or from ``anchor``, ``height`` pixels tall.
                for name, (path, anchor, height) in shots.items():
                    page.goto(base + path)
                    if anchor == "#messages":  # large messages start closed: open them
                        page.evaluate(
                            "document.querySelectorAll('details').forEach(d => d.open = true)"
                        )
                    top = page.locator(anchor).bounding_box()["y"] - 8 if anchor else 0
                    page.screenshot(
                        path=str(args.out / name),
                        full_page=True,
                        clip={"x": 0, "y": top, "width": 1400, "height": height},
                    )
                    print(f"wrote {args.out / name}")
                browser.close()
        finally:
            server.terminate()
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
