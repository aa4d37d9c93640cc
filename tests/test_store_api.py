"""The store API from the outside: the example of ``docs/api.md``, run as a script that imports
``asz.store`` alone, gives back the exact bytes Claude Code wrote, on a synthetic capture, on
the real samples, and on a root written by asz 0.1.0."""

from __future__ import annotations

import ast
import hashlib
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURE_ROOT, REPO

from asz.store import NotASession, UnknownSession, open_store
from asz.synth import SynthOptions, synthesize

EXAMPLE = re.compile(r"```python\n(.*?)```", re.DOTALL)


def api_example(tmp_path: Path) -> Path:
    """The example of ``docs/api.md``, written out as a script."""
    code = EXAMPLE.search((REPO / "docs" / "api.md").read_text()).group(1)
    script = tmp_path / "read_root.py"
    script.write_text(code)
    return script


def run_example(tmp_path: Path, root: Path) -> dict[str, Any]:
    done = subprocess.run(
        [sys.executable, str(api_example(tmp_path)), str(root)],
        capture_output=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def collect(run_asz, claude: Path, root: Path) -> dict[str, Any]:
    done = run_asz(
        "collect", "--once", "--json", "--root", str(root), env={"CLAUDE_CONFIG_DIR": str(claude)}
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def test_the_example_imports_nothing_of_asz_but_the_store(tmp_path: Path) -> None:
    imported: set[str] = set()
    for node in ast.walk(ast.parse(api_example(tmp_path).read_text())):
        if isinstance(node, ast.ImportFrom):
            imported.add(node.module or "")
        elif isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
    assert {name for name in imported if name.startswith("asz")} == {"asz.store"}


def test_a_synthetic_capture_reads_back_exactly_through_the_store(run_asz, tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    expected = synthesize(claude, SynthOptions(seed=5, index=True, uuid_responses=2))
    counts = collect(run_asz, claude, tmp_path / "root")
    report = run_example(tmp_path, tmp_path / "root")

    want_bodies: dict[str, dict[str, str]] = {}
    for body in expected["bodies"]:
        if body["claim"] is not None:
            want_bodies.setdefault(body["session"], {})[body["id"]] = body["sha256"]
    want_transcripts: dict[str, dict[str, str]] = {}
    for session in expected["sessions"]:
        for path in [*session["transcripts"], *session["sidecars"]]:
            relpath = path.removeprefix("projects/")
            want_transcripts.setdefault(session["id"], {})[relpath] = digest(claude / path)

    assert sorted(report) == sorted(want_bodies) == [s["id"] for s in expected["sessions"]]
    for session_id, read in report.items():
        assert read["bodies"] == want_bodies[session_id]
        assert read["transcripts"] == want_transcripts[session_id]
        assert read["problems"] == []
    assert sum(read["index_lines"] for read in report.values()) == len(
        (claude / "asz" / "provider-bodies" / "index.jsonl").read_bytes().splitlines()
    )
    assert counts["bodies_landed"] == sum(len(bodies) for bodies in want_bodies.values())


def test_the_real_samples_read_back_exactly_through_the_store(
    run_asz, samples: Path, tmp_path: Path
) -> None:
    """Each layout of real transcripts (no bodies: none were published) is collected and read
    back: every transcript that landed is its source byte for byte, and every non-empty
    source either landed or is counted as belonging to no session."""
    for layout in sorted((samples / "transcripts").iterdir()):
        claude = tmp_path / layout.name / "claude"
        shutil.copytree(layout, claude / "projects")
        root = tmp_path / layout.name / "root"
        counts = collect(run_asz, claude, root)
        report = run_example(tmp_path, root)
        sources = {
            str(path.relative_to(claude / "projects")): digest(path)
            for path in (claude / "projects").rglob("*")
            if path.is_file() and path.suffix in (".jsonl", ".json") and path.stat().st_size
        }
        landed: dict[str, str] = {}
        for read in report.values():
            assert read["problems"] == []
            assert not set(read["transcripts"]) & set(landed), "a source landed in two sessions"
            landed.update(read["transcripts"])
        assert landed, layout.name
        assert {path: sources[path] for path in landed} == landed, layout.name
        assert len(sources) - len(landed) == counts["transcripts_unattributed"], layout.name


def test_a_root_written_by_asz_0_1_0_reads_back_and_verifies(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    sources = json.loads((FIXTURE_ROOT.parent / "sources.json").read_text())
    report = run_example(tmp_path, root)
    assert {s: read["bodies"] for s, read in report.items()} == sources["bodies"]
    assert {s: read["transcripts"] for s, read in report.items()} == sources["transcripts"]
    lines = [line.data for s in report for line in open_store(root).session(s).index_lines()]
    assert sorted(hashlib.sha256(line + b"\n").hexdigest() for line in lines) == sorted(
        sources["index_lines"]
    )
    verified = open_store(root).verify()
    assert verified.problems == []
    assert (verified.sessions, verified.bodies, verified.index_lines) == (2, 36, 18)


def test_an_unknown_or_malformed_session_is_a_clear_error(tmp_path: Path) -> None:
    store = open_store(FIXTURE_ROOT)
    with pytest.raises(UnknownSession, match="no session 11111111"):
        store.session("11111111-2222-4333-8444-555555555555")
    with pytest.raises(NotASession):
        store.session("../etc")
    assert open_store(tmp_path / "missing").sessions() == []
