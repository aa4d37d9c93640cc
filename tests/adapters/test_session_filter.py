"""The session filter: include/exclude by project dir and cwd, pruned sessions, waiting."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from asz.adapters.claude_code_local import collect_transcripts
from asz.adapters.discovery import discover
from asz.adapters.session_filter import Matcher, Pattern, SessionJudge, Verdict, encode_cwd
from asz.config import DEFAULT_EXCLUDE, AdapterConfig, Adapters, Config, SessionFilter
from asz.store import Store, open_store
from asz.store._root import Root, collector_lock

SESSION = "11111111-2222-4333-8444-555555555555"
OTHER = "99999999-8888-4777-8666-555555555555"


def make_config(
    tmp_path: Path, include: tuple[str, ...] = (), exclude: tuple[str, ...] = DEFAULT_EXCLUDE
) -> Config:
    (tmp_path / "claude" / "projects").mkdir(parents=True, exist_ok=True)
    return Config(
        root=tmp_path / "root",
        claude_dirs=(tmp_path / "claude",),
        sessions=SessionFilter(include=include, exclude=exclude),
        adapters=Adapters(claude_code_local=AdapterConfig()),
    )


def write_session(config: Config, project: str, session: str = SESSION, cwd: str = "/x") -> Path:
    path = config.projects_dir / project / f"{session}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps({"type": "user", "sessionId": session, "cwd": cwd}) + b"\n")
    return path


def open_root(config: Config) -> Store:
    return open_store(config.root, compression=config.compression)


def judge(config: Config, session: str = SESSION) -> Verdict:
    return SessionJudge(config, open_root(config)).judge(session)


def land(config: Config) -> None:
    with collector_lock(Root(config.root)):
        collect_transcripts(config, open_root(config))


def test_encoding_follows_claude_code() -> None:
    assert encode_cwd("/mnt/data/Development/claude/vr-forest") == (
        "-mnt-data-Development-claude-vr-forest"
    )
    assert encode_cwd("/x/experiments/claude_p") == "-x-experiments-claude-p"
    assert encode_cwd("/a b/c.d/é") == "-a-b-c-d--"


def test_real_path_patterns() -> None:
    tree = Pattern("/private/tmp/**")
    assert tree.matches_dir("-private-tmp")
    assert tree.matches_dir("-private-tmp-scratch")
    assert not tree.matches_dir("-private-tmpfoo")
    assert not tree.matches_dir("-private")
    exact = Pattern("/home/me/app/")
    assert exact.matches_dir("-home-me-app")
    assert not exact.matches_dir("-home-me-app-sub")
    assert not exact.matches_cwd("/home/me/app")


def test_glob_patterns_match_the_dir_name_or_a_cwd() -> None:
    glob = Pattern("*scratch*")
    assert glob.matches_dir("-home-me-scratch-1")
    assert glob.matches_cwd("/home/me/scratch")
    assert not Pattern("-home-*").matches_dir("-root-home-x")
    assert Pattern("-home-*").matches_dir("-home-x")


def test_matcher_include_exclude_and_lazy_cwds() -> None:
    asked: list[int] = []

    def cwds() -> set[str]:
        asked.append(1)
        return {"/work/secret/x"}

    assert Matcher([], ["/private/tmp/**"]).passes("-home-me", cwds) and not asked
    assert not Matcher(["/home/me/**"], []).passes("-work", set)
    assert Matcher(["/home/me/**"], []).passes("-home-me-app", cwds) and not asked
    assert not Matcher(["/home/me/**"], ["*/secret/*"]).passes("-home-me-app", cwds)
    assert asked
    assert Matcher(["*/secret/*"], []).passes("-elsewhere", cwds)


@given(
    st.lists(st.text(alphabet="abc._- Z9", min_size=1, max_size=6), min_size=1, max_size=4),
    st.lists(st.text(alphabet="abc._- Z9", min_size=1, max_size=6), max_size=3),
)
def test_a_tree_pattern_matches_every_directory_below_it(base: list[str], below: list[str]) -> None:
    root = "/" + "/".join(base)
    assert Pattern(root + "/**").matches_dir(encode_cwd("/".join([root, *below])))
    assert Pattern(root).matches_dir(encode_cwd(root))


def test_sessions_are_judged_by_the_dir_of_their_main_transcript(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    write_session(config, "-private-tmp-scratch")
    write_session(config, "-home-me-app", OTHER)
    assert judge(config) is Verdict.EXCLUDE
    assert judge(config, OTHER) is Verdict.COLLECT
    assert judge(make_config(tmp_path, exclude=())) is Verdict.COLLECT
    only = make_config(tmp_path, include=("/home/me/**",), exclude=())
    assert (judge(only), judge(only, OTHER)) == (Verdict.EXCLUDE, Verdict.COLLECT)
    both = make_config(tmp_path, include=("/home/me/**",), exclude=("/home/me/app",))
    assert judge(both, OTHER) is Verdict.EXCLUDE


def test_a_session_is_judged_by_its_cwd_before_anything_landed(tmp_path: Path) -> None:
    config = make_config(tmp_path, exclude=("*/secret/*",))
    write_session(config, "-work", cwd="/home/me/secret/plans")
    write_session(config, "-work", OTHER, cwd="/home/me/open")
    assert judge(config) is Verdict.EXCLUDE
    assert judge(config, OTHER) is Verdict.COLLECT
    land(config)
    assert open_root(config).sessions() == [OTHER]


def test_the_main_dir_decides_even_when_subagents_sit_elsewhere(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    write_session(config, "-home-me-app")
    agent = config.projects_dir / "-private-tmp-x" / SESSION / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(b"{}\n")
    assert judge(config) is Verdict.COLLECT


def test_a_session_without_main_transcript_is_excluded_only_if_every_dir_is(
    tmp_path: Path,
) -> None:
    config = make_config(tmp_path)
    for project in ("-private-tmp-a", "-home-me"):
        agent = config.projects_dir / project / SESSION / "subagents" / "agent-a1.jsonl"
        agent.parent.mkdir(parents=True)
        agent.write_bytes(b"{}\n")
    assert judge(config) is Verdict.COLLECT
    shutil.rmtree(config.projects_dir / "-home-me")
    assert judge(config) is Verdict.EXCLUDE


def test_pruned_sessions_are_judged_by_what_landed(tmp_path: Path) -> None:
    config = make_config(tmp_path, exclude=())
    write_session(config, "-private-tmp-scratch")
    write_session(config, "-home-me-app", OTHER)
    agent = config.projects_dir / "-private-tmp-b" / OTHER / "subagents" / "agent-a1.jsonl"
    agent.parent.mkdir(parents=True)
    agent.write_bytes(b"{}\n")
    land(config)
    shutil.rmtree(config.projects_dir)
    config.projects_dir.mkdir()

    strict = make_config(tmp_path)
    assert judge(strict) is Verdict.EXCLUDE
    assert judge(strict, OTHER) is Verdict.COLLECT
    assert judge(make_config(tmp_path, exclude=())) is Verdict.COLLECT
    assert judge(make_config(tmp_path, exclude=("/home/me/**",)), OTHER) is Verdict.EXCLUDE


def test_a_pruned_session_without_main_is_judged_by_every_landed_dir(tmp_path: Path) -> None:
    config = make_config(tmp_path, exclude=())
    for project in ("-private-tmp-a", "-home-me"):
        agent = config.projects_dir / project / SESSION / "subagents" / "agent-a1.jsonl"
        agent.parent.mkdir(parents=True)
        agent.write_bytes(b"{}\n")
    land(config)
    shutil.rmtree(config.projects_dir)
    assert judge(make_config(tmp_path)) is Verdict.COLLECT
    assert judge(make_config(tmp_path, exclude=("/private/tmp/**", "-home-*"))) is (Verdict.EXCLUDE)


def test_a_session_nothing_names_a_dir_for_waits(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    assert judge(config) is Verdict.WAIT
    assert judge(config, "not-a-session") is Verdict.EXCLUDE
    assert not (config.root / SESSION).exists()


def test_a_judge_given_the_discovery_uses_it(tmp_path: Path) -> None:
    config = make_config(tmp_path)
    write_session(config, "-home-me")
    discovered = discover(config.projects_dir).sessions
    shutil.rmtree(config.projects_dir)
    judge_ = SessionJudge(config, open_root(config), discovered)
    assert judge_.judge(SESSION) is Verdict.COLLECT
    assert SessionJudge(config, open_root(config)).judge(SESSION) is Verdict.WAIT
