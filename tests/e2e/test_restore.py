"""Restore: landed transcripts written back byte for byte, never over anything else."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import orjson
import pytest
from support.cli import RunAsz
from support.paths import SHARED_SAMPLES

from asz.adapters.claude_code_local import collect_transcripts
from asz.atomic import publish_new
from asz.config import AdapterConfig, Adapters, Config, SessionFilter
from asz.restore import RestoreRefused, restore_session, safe_relpath
from asz.store import TRANSCRIPT_KIND, Session, Store, open_store
from asz.store._framing import encode_file
from asz.store._layout import landed_name, stream_dir
from asz.store._root import Root, collector_lock

SESSION = "11111111-2222-4333-8444-555555555555"
PROJECT = "-work-project"
SAMPLES = Path(os.environ.get("ASZ_SAMPLES") or SHARED_SAMPLES)


def make_config(tmp_path: Path, projects: Path | None = None, budget: int = 8192) -> Config:
    if projects is None:
        projects = tmp_path / "claude" / "projects"
        projects.mkdir(parents=True, exist_ok=True)
    return Config(
        root=tmp_path / "root",
        claude_dirs=(tmp_path / "claude",),
        sessions=SessionFilter(exclude=()),
        adapters=Adapters(
            claude_code_local=AdapterConfig(source_root=str(projects), max_delta_bytes=budget)
        ),
    )


def open_root(config: Config) -> Store:
    return open_store(config.root, compression=config.compression)


def session_of(config: Config, session: str = SESSION) -> Session:
    return open_root(config).session(session)


def land(config: Config) -> int:
    """One pass that must be complete; the number of files it landed."""
    with collector_lock(Root(config.root)):
        result = collect_transcripts(config, open_root(config))
    assert not result.conflict_sources and not result.errors and not result.pending
    return result.transcript_files


def restore_all(config: Config, to_dir: Path) -> list[Path]:
    store = open_root(config)
    return [
        path
        for session in store.sessions()
        for path in restore_session(store.session(session), to_dir).files
    ]


def source_files(projects: Path) -> set[Path]:
    """Every transcript and sidecar under a projects directory, empty ones included."""
    return {
        path.relative_to(projects)
        for path in projects.rglob("*")
        if path.is_file() and path.name.endswith((".jsonl", ".meta.json"))
    }


def assert_restored(projects: Path, to_dir: Path, written: list[Path]) -> None:
    """Every transcript and sidecar is back with the same bytes, nothing else is."""
    expected = source_files(projects)
    assert {path.relative_to(to_dir) for path in written} == expected
    for relpath in expected:
        assert (to_dir / relpath).read_bytes() == (projects / relpath).read_bytes(), relpath


def line(n: int) -> bytes:
    return orjson.dumps({"type": "user", "sessionId": SESSION, "n": n}) + b"\n"


def test_a_session_comes_back_byte_for_byte(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(b"".join(line(n) for n in range(2000)) + b"\r\n" + b'{"partial')
    agents = main.parent / SESSION / "subagents"
    agents.mkdir(parents=True)
    (agents / "agent-a1.jsonl").write_bytes(line(1))
    (agents / "agent-a1.meta.json").write_bytes(b'{"agentType":"Explore"}')
    land(config)
    (agents / "agent-a1.meta.json").write_bytes(b'{"agentType":"Plan"}')
    land(config)
    to_dir = tmp_path / "back"
    written = restore_session(session_of(config), to_dir).written
    assert sorted(path.relative_to(to_dir).as_posix() for path in written) == [
        f"{PROJECT}/{SESSION}.jsonl",
        f"{PROJECT}/{SESSION}/subagents/agent-a1.jsonl",
        f"{PROJECT}/{SESSION}/subagents/agent-a1.meta.json",
    ]
    source = main.read_bytes()
    assert (to_dir / PROJECT / f"{SESSION}.jsonl").read_bytes() == source[: source.rfind(b"\n") + 1]
    assert (to_dir / PROJECT / SESSION / "subagents" / "agent-a1.meta.json").read_bytes() == (
        b'{"agentType":"Plan"}'
    )
    # Restoring again over identical files is fine, and writes none of them.
    again = restore_session(session_of(config), to_dir)
    assert again.written == [] and sorted(again.present) == sorted(written)


def test_a_deleted_transcript_is_given_back(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    original = line(1) + line(2)
    main.write_bytes(original)
    land(config)
    main.unlink()
    land(config)
    (written,) = restore_session(session_of(config), config.projects_dir).written
    assert written == main and main.read_bytes() == original
    # Put back where it was, it is the same transcript again: nothing re-lands.
    assert land(config) == 0
    main.write_bytes(original + line(3))
    assert land(config) == 1


def test_an_existing_file_with_other_bytes_is_left_and_reported(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(line(1))
    agent = main.parent / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(line(2))
    land(config)
    to_dir = tmp_path / "back"
    (to_dir / PROJECT).mkdir(parents=True)
    (to_dir / PROJECT / f"{SESSION}.jsonl").write_bytes(b"mine\n")
    with pytest.raises(RestoreRefused) as refused:
        restore_session(session_of(config), to_dir)
    assert (to_dir / PROJECT / f"{SESSION}.jsonl").read_bytes() == b"mine\n"
    assert refused.value.restored.written == [
        to_dir / PROJECT / SESSION / "subagents" / "agent-a1.jsonl"
    ]
    assert "exists with other bytes" in refused.value.refused[0]


def test_a_link_in_the_way_is_refused(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(line(1))
    land(config)
    to_dir = tmp_path / "back"
    to_dir.mkdir()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (to_dir / PROJECT).symlink_to(elsewhere)
    with pytest.raises(RestoreRefused) as refused:
        restore_session(session_of(config), to_dir)
    assert "link" in str(refused.value) and not list(elsewhere.iterdir())


@pytest.mark.parametrize("source", ["/etc/evil.jsonl", "../evil.jsonl", "a/../../evil.jsonl"])
def test_a_landed_path_leaving_the_target_is_refused(tmp_path: Path, source: str) -> None:
    store = open_store(tmp_path / "root")
    header = {
        "kind": TRANSCRIPT_KIND,
        "session": SESSION,
        "seq": 1,
        "source": source,
        "stream": "main",
        "shape": "append",
    }
    meta = {"off": 0, "line": 1, "lines": 1, "sha256": "0" * 64}
    directory = Path(store.location) / stream_dir(SESSION, source)
    publish_new(
        directory / landed_name(TRANSCRIPT_KIND, 1),
        encode_file(header, [(meta, b"x\n")], "none"),
    )
    to_dir = tmp_path / "back" / "inner"
    with pytest.raises(RestoreRefused) as refused:
        restore_session(store.session(SESSION), to_dir)
    assert refused.value.restored.files == [] and "outside" in refused.value.refused[0]
    assert [p for p in (tmp_path / "back").rglob("*") if p.is_file()] == []
    assert not Path("/etc/evil.jsonl").exists()


def test_safe_relpath() -> None:
    assert safe_relpath("-p/s.jsonl") is not None
    for bad in ("", "/a", "a//b", "./a", "a/./b", "a\\b", "a/.."):
        assert safe_relpath(bad) is None, bad


def test_a_lost_window_is_reported_not_papered_over(tmp_path: Path) -> None:
    config = make_config(tmp_path, budget=4096)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(b"".join(line(n) + b" " * 300 + b"\n" for n in range(50)))
    land(config)
    session = session_of(config)
    files = session.landed_in(stream_dir(SESSION, f"{PROJECT}/{SESSION}.jsonl"))
    windows = [window for _name, window in session.windows(files[:3])]
    assert len(windows) == 3
    (Path(session.backend.location) / files[1].path).unlink()
    with pytest.raises(RestoreRefused) as refused:
        restore_session(session_of(config), tmp_path / "back")
    # The gap is named: the bytes of the lost window never landed before the next one.
    gap = f"starts at byte {windows[2].off}, past the {windows[0].end} bytes landed before it"
    assert gap in refused.value.refused[0]
    assert files[2].name in refused.value.refused[0]
    assert not (tmp_path / "back" / PROJECT / f"{SESSION}.jsonl").exists()


def test_every_sample_transcript_restores_byte_for_byte(tmp_path: Path) -> None:
    base = SAMPLES / "transcripts"
    if not base.is_dir():
        pytest.skip(f"no samples at {SAMPLES}")
    for layout in sorted(path for path in base.iterdir() if path.is_dir()):
        projects = tmp_path / layout.name / "projects"
        shutil.copytree(layout, projects)
        config = make_config(tmp_path / layout.name, projects, budget=64 * 1024)
        land(config)
        to_dir = tmp_path / layout.name / "restored"
        assert_restored(projects, to_dir, restore_all(config, to_dir))


@pytest.mark.slow
def test_asz_restore_gives_back_every_sample_file_the_empty_ones_too(
    tmp_path: Path, samples: Path, run_asz: RunAsz
) -> None:
    """The real commands over every sample layout at once: each source file comes back, the
    0-byte session files of the v2.0.74 layout with the rest."""
    claude = tmp_path / "claude"
    for layout in sorted(path for path in (samples / "transcripts").iterdir() if path.is_dir()):
        shutil.copytree(layout, claude / "projects", dirs_exist_ok=True)
    sources = source_files(claude / "projects")
    empty = {path for path in sources if not (claude / "projects" / path).stat().st_size}
    assert len(empty) >= 2 and len(sources) >= 33
    root = tmp_path / "root"
    env = {"CLAUDE_CONFIG_DIR": str(claude)}

    def landed() -> dict[str, list[str]]:
        store = open_store(root)
        return {s: [n.path for n in store.session(s).landed()] for s in store.sessions()}

    done = run_asz("collect", "--once", "--root", str(root), env=env)
    assert done.returncode == 0, done.stderr
    first = landed()
    assert sum(len(names) for names in first.values()) >= len(sources)
    # A second process over the same sources lands nothing, the empty ones included.
    done = run_asz("collect", "--once", "--root", str(root), env=env)
    assert done.returncode == 0 and landed() == first, done.stderr
    back = tmp_path / "back"
    for session in first:
        done = run_asz("restore", session, "--to", str(back), "--root", str(root))
        assert done.returncode == 0 and not done.stderr, done.stderr
    written = {path.relative_to(back) for path in back.rglob("*") if path.is_file()}
    assert written == sources
    for relpath in sources:
        assert (back / relpath).read_bytes() == (claude / "projects" / relpath).read_bytes()
    done = run_asz("verify", "--root", str(root))
    assert done.returncode == 0, done.stdout


def test_a_synth_capture_lands_and_restores(tmp_path: Path) -> None:
    synth = pytest.importorskip("asz.synth")
    if not hasattr(synth, "synthesize"):
        pytest.skip("asz.synth has no synthesize yet")
    synth.synthesize(tmp_path / "capture", synth.SynthOptions())
    projects = [path for path in (tmp_path / "capture").rglob("projects") if path.is_dir()]
    assert len(projects) == 1
    config = make_config(tmp_path, projects[0])
    land(config)
    to_dir = tmp_path / "restored"
    written = restore_all(config, to_dir)
    assert written
    assert_restored(projects[0], to_dir, written)


def test_asz_restore_says_each_problem_and_exits_1(tmp_path: Path, run_asz: RunAsz) -> None:
    """A source lost to a damaged file is named, not silently left out; a gap is refused."""
    config = make_config(tmp_path, budget=4096)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    main.parent.mkdir(parents=True)
    main.write_bytes(b"".join(line(n) + b" " * 300 + b"\n" for n in range(50)))
    agent = main.parent / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(line(1))
    land(config)
    session = session_of(config)
    root = Path(session.backend.location)
    (agent_file,) = session.landed_in(
        stream_dir(SESSION, f"{PROJECT}/{SESSION}/subagents/agent-a1.jsonl")
    )
    (root / agent_file.path).write_bytes(b"not a landed file\n")
    restore = ("restore", "--root", str(config.root), SESSION, "--to")
    done = run_asz(*restore, str(tmp_path / "one"))
    assert done.returncode == 1
    assert done.stdout.decode() == f"restored 1 file under {tmp_path / 'one'}\n"
    (said,) = done.stderr.decode().splitlines()
    assert said.startswith(f"asz: problem: {root / agent_file.path}: ")

    main_files = session.landed_in(stream_dir(SESSION, f"{PROJECT}/{SESSION}.jsonl"))
    (root / main_files[1].path).unlink()
    done = run_asz(*restore, str(tmp_path / "two"))
    assert done.returncode == 1 and not (tmp_path / "two" / PROJECT / f"{SESSION}.jsonl").exists()
    said = done.stderr.decode().splitlines()
    assert len(said) == 3 and all(line.startswith("asz: problem: ") for line in said)
    assert said[0].startswith(f"asz: problem: {PROJECT}/{SESSION}.jsonl: ")
    assert main_files[2].name in said[0] and "past the" in said[0]
    assert [line for line in said if line.endswith("the session is incomplete")], said


def test_asz_restore_again_says_it_wrote_nothing(tmp_path: Path, run_asz: RunAsz) -> None:
    """A second restore finds every file holding its landed bytes: it writes none, and says
    that rather than counting them as restored again."""
    config = make_config(tmp_path)
    main = config.projects_dir / PROJECT / f"{SESSION}.jsonl"
    agent = main.parent / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    main.write_bytes(line(1))
    agent.write_bytes(line(2))
    land(config)
    to_dir = tmp_path / "back"
    restore = ("restore", "--root", str(config.root), SESSION, "--to", str(to_dir))
    first = run_asz(*restore)
    assert (first.returncode, first.stdout.decode()) == (0, f"restored 2 files under {to_dir}\n")
    mtimes = {path: path.stat().st_mtime_ns for path in to_dir.rglob("*.jsonl")}
    again = run_asz(*restore)
    assert again.returncode == 0, again.stderr
    assert again.stdout.decode() == (
        f"restored 0 files under {to_dir}; 2 files already held the landed bytes\n"
    )
    assert {path: path.stat().st_mtime_ns for path in to_dir.rglob("*.jsonl")} == mtimes
