"""Discovery of transcripts under a real projects directory, all three subagent layouts."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.paths import SHARED_SAMPLES

from asz.adapters.discovery import discover, first_session, peek_cwds
from asz.store._layout import stream_key

SESSION = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-8888-4777-8666-555555555555"
SAMPLES = Path(os.environ.get("ASZ_SAMPLES") or SHARED_SAMPLES)


def write(path: Path, data: bytes = b"{}\n") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def session_line(session: str, **fields: object) -> bytes:
    return orjson.dumps({"type": "user", "sessionId": session, **fields}) + b"\n"


def relpaths(projects: Path, session: str) -> list[tuple[str, str, bool]]:
    found = discover(projects).sessions[session]
    return [(source.relpath, source.stream, source.snapshot) for source in found.sources]


def test_the_current_layout_with_workflows_sidecars_and_compaction(tmp_path: Path) -> None:
    project = tmp_path / "-home-me-app"
    write(project / f"{SESSION}.jsonl")
    agents = project / SESSION / "subagents"
    write(agents / "agent-a1b2c3d.jsonl")
    write(agents / "agent-a1b2c3d.meta.json", b'{"agentType":"Explore"}')
    write(agents / "agent-acompact-e1f845.jsonl")
    write(agents / "workflows" / "wf_run1" / "agent-a77.jsonl")
    write(agents / "workflows" / "wf_run1" / "agent-a77.meta.json")
    write(agents / "workflows" / "wf_run1" / "journal.jsonl")
    write(agents / "notes.txt")
    write(project / SESSION / "tool-results" / "toolu_1.txt")
    write(project / "memory" / "MEMORY.md")
    write(project / "sessions-index.json")
    base = f"-home-me-app/{SESSION}/subagents"
    assert relpaths(tmp_path, SESSION) == [
        (f"-home-me-app/{SESSION}.jsonl", "main", False),
        (f"{base}/agent-a1b2c3d.jsonl", "a1b2c3d", False),
        (f"{base}/agent-a1b2c3d.meta.json", "a1b2c3d", True),
        (f"{base}/agent-acompact-e1f845.jsonl", "acompact-e1f845", False),
        (f"{base}/workflows/wf_run1/agent-a77.jsonl", "a77", False),
        (f"{base}/workflows/wf_run1/agent-a77.meta.json", "a77", True),
    ]
    found = discover(tmp_path)
    assert found.sessions[SESSION].primary_dir == "-home-me-app"
    assert not found.errors and not found.unattributed and list(found.sessions) == [SESSION]


def test_a_session_spanning_project_dirs_is_one_session(tmp_path: Path) -> None:
    write(tmp_path / "-b" / f"{SESSION}.jsonl")
    write(tmp_path / "-a" / SESSION / "subagents" / "agent-a1.jsonl")
    found = discover(tmp_path).sessions[SESSION]
    assert found.primary_dir == "-b" and found.dirs == {"-a", "-b"}


def test_a_session_without_main_transcript_has_no_primary_dir(tmp_path: Path) -> None:
    write(tmp_path / "-a" / SESSION / "subagents" / "agent-a1.jsonl")
    found = discover(tmp_path).sessions[SESSION]
    assert found.primary_dir is None and found.dirs == {"-a"}


def test_only_uuid_form_names_are_sessions(tmp_path: Path) -> None:
    write(tmp_path / "-p" / "not-a-session.jsonl")
    write(tmp_path / "-p" / f"{SESSION.upper()}x.jsonl")
    write(tmp_path / "-p" / "11111111222243338444555555555555.jsonl")
    write(tmp_path / "-p" / "not-a-session" / "subagents" / "agent-a1.jsonl")
    write(tmp_path / "loose.jsonl")
    assert discover(tmp_path).sessions == {}


def test_flat_agent_files_belong_to_their_first_named_session(tmp_path: Path) -> None:
    project = tmp_path / "-p"
    write(project / f"{SESSION}.jsonl", b"")
    write(
        project / "agent-a2b48bc.jsonl",
        b'{"type":"summary"}\n'
        + session_line("short")
        + session_line(OTHER)
        + session_line(SESSION),
    )
    write(project / "agent-a0000001.jsonl", b'{"type":"summary"}\n')
    write(project / "agent-a0000002.jsonl", b"")
    write(project / "agent-a0000003.jsonl", session_line(SESSION)[:-1])
    found = discover(tmp_path)
    assert [s.relpath for s in found.sessions[OTHER].sources] == ["-p/agent-a2b48bc.jsonl"]
    assert found.sessions[OTHER].primary_dir is None
    assert [s.relpath for s in found.sessions[SESSION].sources] == [f"-p/{SESSION}.jsonl"]
    assert sorted(found.unattributed) == ["-p/agent-a0000001.jsonl", "-p/agent-a0000003.jsonl"]


def test_links_are_not_followed_below_the_projects_dir(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    write(outside / f"{OTHER}.jsonl")
    write(outside / "-proj" / f"{OTHER}.jsonl")
    projects = tmp_path / "projects"
    write(projects / "-real" / f"{SESSION}.jsonl")
    (projects / "-linked").symlink_to(outside / "-proj")
    (projects / "-real" / f"{OTHER}.jsonl").symlink_to(outside / f"{OTHER}.jsonl")
    (projects / "-real" / OTHER).symlink_to(outside)
    found = discover(projects)
    assert list(found.sessions) == [SESSION] and not found.errors


def test_the_projects_dir_itself_may_be_a_link(tmp_path: Path) -> None:
    write(tmp_path / "real" / "-p" / f"{SESSION}.jsonl")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    found = discover(tmp_path / "link")
    assert found.dirs[0].resolved == tmp_path.resolve() / "real" and found.dirs[0].exists
    source = found.sessions[SESSION].sources[0]
    assert source.path == tmp_path.resolve() / "real" / "-p" / f"{SESSION}.jsonl"


def test_a_fifo_named_like_a_transcript_is_never_opened(tmp_path: Path) -> None:
    project = tmp_path / "-p"
    project.mkdir()
    os.mkfifo(project / f"{SESSION}.jsonl")
    os.mkfifo(project / "agent-a1.jsonl")
    (project / OTHER / "subagents").mkdir(parents=True)
    os.mkfifo(project / OTHER / "subagents" / "agent-a2.jsonl")
    done = threading.Event()
    result: list[object] = []

    def scan() -> None:
        result.append(discover(tmp_path))
        done.set()

    threading.Thread(target=scan, daemon=True).start()
    assert done.wait(10), "discovery blocked on a FIFO"
    found = result[0]
    assert found.sessions == {} and found.unattributed == []  # type: ignore[attr-defined]
    assert first_session(project / "agent-a1.jsonl") is None


def test_a_missing_projects_dir_holds_nothing(tmp_path: Path) -> None:
    found = discover(tmp_path / "nowhere")
    assert found.sessions == {} and found.errors == []


def test_an_unreadable_project_dir_is_an_error(tmp_path: Path) -> None:
    if os.geteuid() == 0:
        pytest.skip("root reads every directory")
    write(tmp_path / "-p" / f"{SESSION}.jsonl")
    (tmp_path / "-p").chmod(0)
    try:
        found = discover(tmp_path)
    finally:
        (tmp_path / "-p").chmod(0o700)
    assert found.errors and found.errors[0].startswith("-p: cannot be read")


def test_peek_reads_the_cwds_of_the_first_lines(tmp_path: Path) -> None:
    write(
        tmp_path / "-p" / f"{SESSION}.jsonl",
        b'{"type":"summary"}\n'
        + session_line(SESSION, cwd="/a")
        + session_line(SESSION, data={"cwd": "/nested"})
        + session_line(SESSION, cwd="/b")[:-1],
    )
    assert peek_cwds(discover(tmp_path).sessions[SESSION].sources) == {"/a"}


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")),
            st.sampled_from([SESSION, OTHER, "x", ""]).map(
                lambda s: orjson.dumps({"sessionId": s})
            ),
            st.just(b'{"sessionId":7}'),
        ),
        max_size=8,
    )
)
def test_first_session_is_the_first_line_naming_a_uuid(lines: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        path = write(Path(tmp) / "agent-a1.jsonl", b"".join(line + b"\n" for line in lines))
        expected = None
        for line in lines:
            try:
                value = orjson.loads(line)
            except orjson.JSONDecodeError:
                continue
            if isinstance(value, dict) and value.get("sessionId") in (SESSION, OTHER):
                expected = value["sessionId"]
                break
        assert first_session(path) == expected


def test_the_samples_three_layouts(tmp_path: Path) -> None:
    base = SAMPLES / "transcripts"
    if not base.is_dir():
        pytest.skip(f"no samples at {SAMPLES}")
    inline = discover(base / "v1.0.98-inline-sidechains")
    assert [len(s.sources) for s in inline.sessions.values()] == [1]

    flat = discover(base / "v2.0.74-flat-agent-files")
    assert len(flat.sessions) == 10 and not flat.unattributed and not flat.errors
    main = flat.sessions["b3edadab-bca0-4054-9b41-f7ffa6941260"]
    assert {s.stream for s in main.sources} == {
        "main",
        "a434715",
        "a4e24f0",
        "a6e784a",
        "a86dcdc",
        "a8a15e2",
    }
    # Lines of two sessions: the first one named wins.
    mixed = flat.sessions["e9040aa9-cf0d-4b25-a964-b30198f1f544"]
    assert {s.stream for s in mixed.sources} == {"main", "a2b48bc", "adfec6b"}
    empty = flat.sessions["0f13eeba-e6ed-42ea-ad8c-d8db37e1304e"]
    assert empty.primary_dir == "-Users-user-project"

    nested = discover(base / "v2.1.39-subagents-dir")
    (session,) = nested.sessions.values()
    assert [s.stream for s in session.sources] == ["main", "a2898e3", "acompact-e1f845"]
    keys = {stream_key(s.relpath) for s in session.sources}
    assert len(keys) == 3 and all(key.startswith("s-") and len(key) == 18 for key in keys)


# -- several projects directories ------------------------------------------------------------


def test_a_session_spread_over_two_projects_directories_is_one_session(tmp_path: Path) -> None:
    first, second = tmp_path / "one" / "projects", tmp_path / "two" / "projects"
    write(first / "-p" / f"{SESSION}.jsonl")
    write(second / "-p" / SESSION / "subagents" / "agent-a1.jsonl")
    write(second / "-q" / f"{OTHER}.jsonl")
    found = discover(first, second, tmp_path / "three" / "projects")
    assert sorted(found.sessions) == sorted([SESSION, OTHER])
    sources = found.sessions[SESSION].sources
    assert [(s.relpath, s.path) for s in sources] == [
        (f"-p/{SESSION}.jsonl", first / "-p" / f"{SESSION}.jsonl"),
        (
            f"-p/{SESSION}/subagents/agent-a1.jsonl",
            second / "-p" / SESSION / "subagents" / "agent-a1.jsonl",
        ),
    ]
    assert found.sessions[SESSION].primary_dir == "-p"
    summary = [(d.path, d.exists, len(d.sessions), d.files, d.shadowed) for d in found.dirs]
    assert summary == [
        (first, True, 1, 1, []),
        (second, True, 2, 2, []),
        (tmp_path / "three" / "projects", False, 0, 0, []),
    ]


def test_the_same_path_under_two_directories_is_taken_from_the_first_only(
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "one", tmp_path / "two"
    write(first / "-p" / f"{SESSION}.jsonl", session_line(SESSION, n=1))
    write(second / "-p" / f"{SESSION}.jsonl", session_line(SESSION, n=2) * 3)
    write(second / "-p" / "agent-a1.jsonl", session_line(OTHER))
    write(first / "-p" / "agent-a1.jsonl", session_line(SESSION))
    found = discover(first, second)
    assert {s.path for s in found.sessions[SESSION].sources} == {
        first / "-p" / f"{SESSION}.jsonl",
        first / "-p" / "agent-a1.jsonl",
    }
    assert OTHER not in found.sessions, "the later agent file is shadowed before it is read"
    assert found.dirs[1].shadowed == [f"-p/{SESSION}.jsonl", "-p/agent-a1.jsonl"]
    assert found.dirs[1].files == 0 and found.dirs[0].shadowed == []


def test_two_names_of_one_projects_directory_are_scanned_once(tmp_path: Path) -> None:
    write(tmp_path / "real" / "-p" / f"{SESSION}.jsonl")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    found = discover(tmp_path / "real", tmp_path / "link")
    assert len(found.sessions[SESSION].sources) == 1
    assert found.dirs[1].same_as == tmp_path / "real" and found.dirs[1].exists
    assert found.dirs[1].shadowed == []
