"""The store API from the outside: the example of ``docs/api.md``, run as a script that imports
``asz.store`` alone, gives back the exact bytes Claude Code wrote, on a synthetic capture, on
the real samples, and on a root written by asz 0.1.0."""

from __future__ import annotations

import ast
import gc
import hashlib
import json
import re
import shutil
import weakref
from pathlib import Path
from typing import Any

import pytest
from support.api_example import api_example, run_example
from support.paths import FIXTURE_ROOT, FIXTURE_SESSION, REPO

from asz.store import AmbiguousId, CodecError, NotASession, UnknownSession, open_store
from asz.store._framing import decode_file, frame
from asz.store._session_facts import FACTS
from asz.synth import SynthOptions, synthesize


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


@pytest.mark.slow
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
            if path.is_file() and path.suffix in (".jsonl", ".json")
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


def test_a_root_written_by_asz_0_1_0_summarises_and_resolves_pasted_ids(tmp_path: Path) -> None:
    """Its facts caches are of an older schema: they are rebuilt, and each session's summary
    agrees with what verify counts and with a summary made again without any cache."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    store = open_store(root)
    for session_id in store.sessions():
        session = store.find_session(session_id.upper()[:10])
        assert session.id == session_id
        summary = session.summary()
        assert session.problems == []
        facts = (root / session_id / "transcripts" / "facts.json").read_bytes()
        assert json.loads(facts.split(b"\n", 1)[0])["schema"] == FACTS.schema
        assert (root / session_id / "summary.json").is_file()
        verified = store.verify([session_id])
        assert (summary.bodies, summary.transcript_lines) == (
            verified.bodies,
            verified.transcript_lines,
        )
        assert summary.landed_bytes == session.landed_bytes() > 0
        assert summary.first_activity is not None and summary.models
        (root / session_id / "summary.json").unlink()
        (root / session_id / "transcripts" / "facts.json").unlink()
        assert store.open_session(session_id).summary() == summary

        body_id = session.body_ids()[0]
        for pasted in (body_id, f"{body_id}.json", f"/somewhere/{body_id}.json", body_id[:-3]):
            assert session.find_body(pasted) == body_id
    with pytest.raises(UnknownSession):
        store.find_session("0000")
    with pytest.raises(NotASession):
        store.find_session("../etc")
    with pytest.raises(AmbiguousId) as ambiguous:
        open_store(root).session(FIXTURE_SESSION).find_body("req_")
    assert len(ambiguous.value.candidates) > 1


def test_the_layout_is_described_alike_in_the_format_and_in_the_store() -> None:
    """``docs/format.md`` and the docstring of ``asz.store`` are the two places the layout of
    a root is described: the same entries with the same words."""
    import asz.store

    documented = re.search(
        r"## Layout\n.*?```\n(.*?)```", (REPO / "docs" / "format.md").read_text(), re.DOTALL
    )
    in_format = [line.split() for line in documented.group(1).splitlines() if line.strip()]
    block = asz.store.__doc__.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    in_store = [line.split() for line in block.splitlines() if line.strip()]
    assert in_format == in_store


def test_a_session_dropped_after_rebuilding_bodies_is_freed_at_once(tmp_path: Path) -> None:
    """What a session holds to rebuild bodies (every record up to the body asked for) goes
    with the session by reference count: a reader (a web page) that drops it must not leave
    it for the cycle collector, which may not run for a long while."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    session = open_store(root).session(FIXTURE_SESSION)
    requests = [key for key, body in session.manifests().items() if body.role == "request"]
    responses = [key for key, body in session.manifests().items() if body.role == "response"]
    assert session.body(requests[-1]) and session.body(responses[-1])
    dropped = weakref.ref(session)
    collecting = gc.isenabled()
    gc.disable()
    try:
        del session
        assert dropped() is None
    finally:
        if collecting:
            gc.enable()


def test_a_record_whose_bytes_were_changed_is_named_and_the_rest_still_read(
    tmp_path: Path,
) -> None:
    """A body is rebuilt from records held on their claims and proven by its digest; one
    that does not prove out is read again record by record, so the changed record is named."""
    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    session = open_store(root).session(FIXTURE_SESSION)
    manifests = session.manifests()
    requests = [key for key, body in manifests.items() if body.role == "request"]
    first = manifests[requests[0]]
    path = root / FIXTURE_SESSION / "provider_body" / first.file
    landed = decode_file(path, path.read_bytes())
    records = []
    for record in landed.records:
        payload = record.payload
        if record.row == first.row:  # one byte of its text changed, every claim still true
            at = payload.rindex(b"e")
            payload = payload[:at] + b"E" + payload[at + 1 :]
        records.append((record.meta, payload))
    header = {k: v for k, v in landed.header.items() if k in ("kind", "session", "seq")}
    path.write_bytes(frame(header, records, "zstd").data)

    reread = open_store(root).session(FIXTURE_SESSION)
    with pytest.raises(CodecError) as refused:
        reread.body(requests[0])
    assert first.file in str(refused.value) and "digest" in str(refused.value)
    responses = [key for key, body in reread.manifests().items() if body.role == "response"]
    assert all(reread.body(key) for key in responses)


def test_every_public_name_of_the_store_is_on_the_api_page() -> None:
    """``asz.store.__all__`` is the store's surface: each name is explained in docs/api.md."""
    import asz.store

    page = (REPO / "docs" / "api.md").read_text()
    missing = [name for name in asz.store.__all__ if f"`{name}" not in page]
    assert missing == []
