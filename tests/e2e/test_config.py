"""The config loader: precedence, path resolution, strictness about keys and types."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from asz.config import ConfigError
from asz.config_file import load_config


def test_defaults_follow_xdg_and_claude_lookup(tmp_path: Path) -> None:
    env = {"HOME": str(tmp_path)}
    config = load_config(env=env)
    assert config.root == tmp_path / ".local" / "share" / "asz"
    # Neither Claude Code directory exists: both are listed, so `asz sources` shows both.
    assert config.claude_dirs == (tmp_path / ".config" / "claude", tmp_path / ".claude")
    assert config.projects_dirs == (
        tmp_path / ".config" / "claude" / "projects",
        tmp_path / ".claude" / "projects",
    )
    assert config.bodies_dirs == (
        tmp_path / ".config" / "claude" / "asz" / "provider-bodies",
        tmp_path / ".claude" / "asz" / "provider-bodies",
    )
    assert config.sessions.exclude == ("/private/tmp/**",)
    assert config.adapters.claude_code_provider.max_delta_bytes == 2 * 1024 * 1024
    assert config.service.listen.startswith("127.0.0.1:")


@pytest.mark.parametrize(
    ("made", "expected"),
    [
        ([".claude"], [".claude"]),
        (["cfg/claude"], ["cfg/claude"]),
        ([".claude", "cfg/claude"], ["cfg/claude", ".claude"]),
        ([], ["cfg/claude", ".claude"]),
    ],
)
def test_every_claude_directory_that_exists_is_read_xdg_first(
    tmp_path: Path, made: list[str], expected: list[str]
) -> None:
    """With XDG_CONFIG_HOME set and absent, ~/.claude is still found (issue 13's first trap)."""
    for name in made:
        (tmp_path / name).mkdir(parents=True)
    env = {"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")}
    assert load_config(env=env).claude_dirs == tuple(tmp_path / name for name in expected)


def test_environment_moves_every_directory(tmp_path: Path) -> None:
    env = {
        "HOME": str(tmp_path / "home"),
        "XDG_DATA_HOME": str(tmp_path / "data"),
        "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
    }
    (tmp_path / "cfg" / "claude").mkdir(parents=True)
    config = load_config(env=env)
    assert config.root == tmp_path / "data" / "asz"
    assert config.claude_dirs == (tmp_path / "cfg" / "claude",)
    env["CLAUDE_CONFIG_DIR"] = str(tmp_path / "cc")
    env["ASZ_ROOT"] = str(tmp_path / "r")
    config = load_config(env=env)
    assert config.claude_dirs == (tmp_path / "cc",), "a named directory counts even when absent"
    assert config.root == tmp_path / "r"


def test_claude_config_dir_may_name_several_directories(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    named = f" {tmp_path}/a ,{tmp_path}/b/,, {tmp_path}/a"
    config = load_config(env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": named})
    assert config.claude_dirs == (tmp_path / "a", tmp_path / "b")
    assert config.projects_dirs == (tmp_path / "a" / "projects", tmp_path / "b" / "projects")
    only_commas = load_config(env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": ", ,"})
    assert only_commas.claude_dirs == (tmp_path / ".claude",), "names nothing: the defaults"


def test_default_config_file_is_read_when_present(tmp_path: Path) -> None:
    cfg = tmp_path / "cfg" / "asz"
    cfg.mkdir(parents=True)
    (cfg / "asz.toml").write_text(
        'root = "/srv/asz"\ncompression = "none"\n[service]\nbatch_window = 0\n'
        '[sessions]\ninclude = ["/home/me/work/**"]\nexclude = []\n'
    )
    config = load_config(env={"HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path / "cfg")})
    assert config.root == Path("/srv/asz")
    assert config.compression == "none"
    assert config.service.batch_window == 0.0
    assert config.sessions.include == ("/home/me/work/**",)
    assert config.sessions.exclude == ()
    assert config.source_file == cfg / "asz.toml"


def test_flag_beats_environment_beats_file(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text('root = "/from/file"\n')
    env = {"HOME": str(tmp_path)}
    assert load_config(path, env=env).root == Path("/from/file")
    env["ASZ_ROOT"] = "/from/env"
    assert load_config(path, env=env).root == Path("/from/env")
    assert load_config(path, root=Path("/from/flag"), env=env).root == Path("/from/flag")


def test_sources_can_be_named(tmp_path: Path) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        f'claude_dir = "{tmp_path}/cc"\n'
        f'[adapters.claude_code_provider]\nsource_root = "{tmp_path}/bodies"\n'
        "max_delta_bytes = 8192\n"
    )
    config = load_config(path, env={"HOME": str(tmp_path), "CLAUDE_CONFIG_DIR": "/elsewhere"})
    assert config.claude_dirs == (tmp_path / "cc",), "the file wins over the environment"
    assert config.projects_dirs == (tmp_path / "cc" / "projects",)
    assert config.bodies_dirs == (tmp_path / "bodies",)
    assert config.adapters.claude_code_provider.max_delta_bytes == 8192


def test_claude_dir_in_the_file_may_be_a_list_and_a_source_root_replaces_the_list(
    tmp_path: Path,
) -> None:
    path = tmp_path / "a.toml"
    path.write_text(
        f'claude_dir = ["{tmp_path}/one", "{tmp_path}/two"]\n'
        f'[adapters.claude_code_local]\nsource_root = "{tmp_path}/transcripts"\n'
    )
    config = load_config(path, env={"HOME": str(tmp_path)})
    assert config.claude_dirs == (tmp_path / "one", tmp_path / "two")
    assert config.projects_dirs == (tmp_path / "transcripts",)
    assert config.bodies_dirs == (
        tmp_path / "one" / "asz" / "provider-bodies",
        tmp_path / "two" / "asz" / "provider-bodies",
    )
    assert config.source_dirs == (tmp_path / "transcripts", *config.bodies_dirs)


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("rooot = 1\n", "'rooot'"),
        ("[service]\nbatchwindow = 1\n", "'service.batchwindow'"),
        ('[service]\nbatch_window = "soon"\n', "service.batch_window"),
        ("[adapters.claude_code_local]\nenabled = 1\n", "adapters.claude_code_local.enabled"),
        ("[adapters.claude_code_local]\nmax_delta_bytes = 1.5\n", "max_delta_bytes"),
        ("[sessions]\ninclude = [1]\n", "sessions.include"),
        ("[adapters.other]\nenabled = true\n", "'adapters.other'"),
        ("service = 3\n", "service must be a table"),
        ('compression = "lz4"\n', "compression"),
        ("root = 5\n", "root must be a string"),
        ("claude_dir = 5\n", "claude_dir must be a string or a non-empty list"),
        ("claude_dir = []\n", "claude_dir must be a string or a non-empty list"),
        ('claude_dir = ["/a", 1]\n', "claude_dir must be a string or a non-empty list"),
        ('claude_dir = ["/a", ""]\n', "claude_dir must be a string or a non-empty list"),
        ("[adapters.claude_code_provider]\nmax_delta_bytes = 10\n", "max_delta_bytes"),
    ],
)
def test_bad_keys_and_types_are_refused_naming_key_and_file(
    tmp_path: Path, text: str, named: str
) -> None:
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_config(path, env={"HOME": str(tmp_path)})
    assert named in str(caught.value)
    assert str(path) in str(caught.value)


def test_a_named_config_file_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(tmp_path / "missing.toml", env={"HOME": str(tmp_path)})


def test_broken_toml_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "broken.toml"
    path.write_text("root = \n")
    with pytest.raises(ConfigError, match=str(path)):
        load_config(path, env={"HOME": str(tmp_path)})


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_any_file_either_loads_or_is_refused_cleanly(tmp_path_factory, data: bytes) -> None:
    path = tmp_path_factory.mktemp("fuzz") / "asz.toml"
    path.write_bytes(data)
    try:
        config = load_config(path, env={"HOME": "/nonexistent"})
    except ConfigError as err:
        assert str(path) in str(err)
    else:
        assert config.root.is_absolute()
