"""``asz statusline``: the real command fed Claude Code's JSON on stdin, as Claude Code runs it.

The figures are those ``asz cache`` gives for the same session; a run reads only what the
transcripts gained since the last one, and starts again when a transcript was replaced; no
input, however wrong, ends in anything but a line and exit 0; ``--install`` and
``--uninstall`` change only the ``statusLine`` of Claude Code's settings.
"""

from __future__ import annotations

import json
import os
import pty
import stat
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.cli import RunAsz, asz_executable
from support.landing import land_sample, land_synth

from asz.statusline.state import MAX_SESSIONS, save_state
from asz.statusline.status_input import StatusInput, parse_input
from asz.statusline.tail import LONGEST_LINE, MAIN_STREAM, Source, advance
from asz.synth import SynthOptions
from asz.view.growing import StreamFold
from asz.view.prices import price_table

SESSION = "0c0ffee0-1111-4222-8333-444455556666"
MODEL = "claude-opus-4-6"


def call_lines(
    n: int, read: int, written: int, *, model: str = MODEL, minute: int = 0
) -> list[bytes]:
    """One call as Claude Code writes it: a line per content block, then its tool's result."""
    usage = {
        "input_tokens": 3,
        "cache_read_input_tokens": read,
        "cache_creation_input_tokens": written,
        "output_tokens": 50,
    }
    stamp = f"2026-09-01T10:{minute:02d}:{n % 60:02d}.000Z"
    message = {"id": f"msg_{n:04d}", "model": model, "role": "assistant", "usage": usage}
    blocks = [{"type": "text", "text": "Reading."}, {"type": "tool_use", "id": f"tu_{n}"}]
    lines = [
        {"type": "assistant", "timestamp": stamp, "message": {**message, "content": [block]}}
        for block in blocks
    ]
    lines.append({"type": "user", "timestamp": stamp, "message": {"role": "user", "content": "ok"}})
    return [orjson.dumps(line) + b"\n" for line in lines]


def calls(start: int, count: int, *, breaks: tuple[int, ...] = ()) -> list[bytes]:
    """``count`` calls from call ``start``, each reading what the one before left, except
    those in ``breaks``, which read nothing."""
    lines = []
    for n in range(start, start + count):
        read = 0 if n in breaks or n == 1 else 1000 + 100 * (n - 1)
        written = 1000 + 100 * n - read if read else 1000 + 100 * n
        lines += call_lines(n, read, written)
    return lines


class Claude:
    """A Claude Code project directory with one session, and the status line run on it."""

    def __init__(self, tmp_path: Path, run_asz: RunAsz) -> None:
        self.transcript = tmp_path / "claude" / "projects" / "-work" / f"{SESSION}.jsonl"
        self.transcript.parent.mkdir(parents=True)
        self.cache = tmp_path / "cache"
        self.run_asz = run_asz
        self.env = {"XDG_CACHE_HOME": str(self.cache), "ASZ_ROOT": str(tmp_path / "no-root")}

    def write(self, lines: list[bytes], mode: str = "ab") -> None:
        with self.transcript.open(mode) as file:
            file.writelines(lines)

    def stdin(self) -> bytes:
        return orjson.dumps(
            {
                "session_id": SESSION,
                "transcript_path": str(self.transcript),
                "model": {"id": MODEL, "display_name": "Opus"},
                "cost": {"total_cost_usd": 1.25},
            }
        )

    def line(self, *args: str, stdin: bytes | None = None, **env: str) -> str:
        given = self.stdin() if stdin is None else stdin
        done = self.run_asz("statusline", *args, input=given, env={**self.env, **env})
        assert done.returncode == 0, done.stderr
        assert b"Traceback" not in done.stderr, done.stderr
        assert done.stdout.count(b"\n") == 1, done.stdout
        return str(done.stdout.decode())

    def figures(self, **env: str) -> dict[str, Any]:
        """The figures --json prints, the last break's age (which runs apart differ in)
        left out."""
        value: dict[str, Any] = orjson.loads(self.line("--json", **env))
        if value.get("last_break"):
            del value["last_break"]["age_seconds"]
        return value

    def state_files(self) -> list[Path]:
        return sorted((self.cache / "asz" / "statusline").glob(f"{SESSION}.*"))


@pytest.fixture
def claude(tmp_path: Path, run_asz: RunAsz) -> Claude:
    return Claude(tmp_path, run_asz)


# -- the figures are asz cache's ----------------------------------------------------------


@pytest.mark.slow
def test_the_figures_are_those_asz_cache_gives_and_the_cause_comes_from_the_kept_report(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=4, subagents=2))
    projects = tmp_path / "claude" / expected["projects_dir"]
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "ASZ_ROOT": str(store.location)}
    root = Path(store.location)
    for session in expected["sessions"]:
        done = run_asz("cache", "--root", str(store.location), session["id"], "--json")
        before = {path: path.stat().st_mtime_ns for path in root.rglob("*")}
        report = orjson.loads(done.stdout)
        totals = report["totals"]
        [transcript] = projects.glob(f"*/{session['id']}.jsonl")
        stdin = orjson.dumps({"session_id": session["id"], "transcript_path": str(transcript)})
        shown = run_asz("statusline", "--json", input=stdin, env=env)
        assert shown.returncode == 0 and shown.stderr == b"", shown.stderr
        figures = orjson.loads(shown.stdout)
        rows = [row for row in report["rows"] if row["message_id"]]
        assert figures["calls"] == len(rows) > 20
        assert figures["hit_ratio"] == totals["hit_ratio"]
        assert (
            figures["breaks"]
            == totals["breaks"]
            == len([b for b in expected["cache_breaks"] if b["session"] == session["id"]])
        )
        assert figures["rewritten_tokens"] == totals["rewritten_tokens"]
        assert figures["waste_usd"] == pytest.approx(totals["waste_usd"], abs=1e-6)
        tokens = figures["tokens"]
        assert tokens["input"] == totals["input_tokens"]
        assert tokens["cache_read"] == totals["cache_read_input_tokens"]
        written = tokens["cache_write_5m"] + tokens["cache_write_1h"]
        assert written == totals["cache_creation_input_tokens"]
        # A transcript carries the output count of the moment each line was written, not the
        # final one the response holds: the cost from transcripts counts no more output.
        assert 0 < figures["cost_usd"] <= totals["cost_usd"]
        assert figures["unpriced_models"] == totals["unpriced_models"]
        broke = [row for row in rows if row["rewritten_tokens"]]
        last = max(broke, key=lambda row: row["time"])
        assert figures["last_break"]["message_id"] == last["message_id"]
        assert figures["last_break"]["rewritten_tokens"] == last["rewritten_tokens"]
        assert (figures["last_break"]["cause"], figures["last_break"]["detail"]) == (
            last["cause"],
            last["detail"],
        )
        assert f"last: {last['cause']} (" in figures["line"]
        after = {path: path.stat().st_mtime_ns for path in root.rglob("*")}
        assert after == before, "the status line writes nothing in the root"


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["v1.0.98-inline-sidechains", "v2.1.39-subagents-dir"])
def test_on_real_transcripts_the_figures_are_those_asz_cache_gives(
    tmp_path: Path, run_asz: RunAsz, samples: Path, layout: str
) -> None:
    store = land_sample(tmp_path, run_asz, samples / "transcripts" / layout)
    env = {"XDG_CACHE_HOME": str(tmp_path / "cache"), "ASZ_ROOT": str(store.location)}
    compared = 0
    for transcript in (tmp_path / "claude" / "projects").glob("*/*.jsonl"):
        done = run_asz("cache", "--root", str(store.location), transcript.stem, "--json")
        totals = orjson.loads(done.stdout)["totals"]
        stdin = orjson.dumps({"session_id": transcript.stem, "transcript_path": str(transcript)})
        figures = orjson.loads(run_asz("statusline", "--json", input=stdin, env=env).stdout)
        assert (figures["hit_ratio"], figures["breaks"], figures["rewritten_tokens"]) == (
            totals["hit_ratio"],
            totals["breaks"],
            totals["rewritten_tokens"],
        )
        compared += figures["breaks"]
        if figures["last_break"]:
            done = run_asz("cache", "--root", str(store.location), transcript.stem, "--json")
            rows = orjson.loads(done.stdout)["rows"]
            row = next(r for r in rows if r["message_id"] == figures["last_break"]["message_id"])
            assert figures["last_break"]["cause"] == row["cause"]
    assert compared > 0, "the samples hold breaks"


def test_a_break_on_the_latest_call_is_coloured_and_said_with_its_size(claude: Claude) -> None:
    price = price_table().price_of(MODEL)
    assert price is not None
    claude.write(calls(1, 5))
    # Calls 2 to 5 read 1,100 to 1,400 tokens and wrote 100 each; call 1 wrote 1,100.
    read, written, output = 5000, 1100 + 4 * 100, 5 * 50
    cost = (15 * price.input + output * price.output + read * price.cache_read) / 1e6
    cost += written * price.cache_write_5m / 1e6
    assert claude.line() == f"cache {read / (read + written + 15):.0%} · no breaks · ${cost:.2f}\n"
    claude.write(calls(6, 1, breaks=(6,)))  # reads nothing of the 1,500 it should have
    waste = 1500 * (price.cache_write_5m - price.cache_read) / 1e6
    line = claude.line()
    # No root: the cause is the lines', here where usage says the change began.
    said = "last: prefix (read nothing of the 1500 tokens expected) "
    assert f"1 break ${waste:.2f} · \x1b[31m{said}" in line
    assert line.endswith(
        "\x1b[0m · $%.2f\n"
        % (cost + (3 * price.input + 50 * price.output + 1600 * price.cache_write_5m) / 1e6)
    )
    assert "\x1b" not in claude.line("--no-color")
    assert "\x1b" not in claude.line(NO_COLOR="1")
    ratio = read / (read + written + 1600 + 18)
    assert claude.line("--fields", "breaks,cache") == f"1 break ${waste:.2f} · cache {ratio:.0%}\n"
    claude.write(calls(7, 1))
    assert "\x1b" not in claude.line(), "the latest call kept the cache"
    figures = claude.figures()
    assert figures["last_break"]["message_id"] == "msg_0006"
    assert figures["claude_code_cost_usd"] == 1.25
    assert figures["last_call_broke"] is False


def test_with_no_report_the_cause_of_a_break_comes_from_the_lines(claude: Claude) -> None:
    """The lines say what changed: the model, then two hours idle past the hour its writes
    lasted; the fold kept between runs names them as one read in one go does."""
    claude.write(calls(1, 2))
    claude.write(call_lines(3, 0, 1400, model="claude-sonnet-4-6", minute=1))
    figures = claude.figures()
    assert figures["last_break"]["cause"] == "model"
    assert figures["last_break"]["detail"] == f"{MODEL} -> claude-sonnet-4-6"
    lines = call_lines(4, 1400, 100, model="claude-sonnet-4-6", minute=2)
    hour = {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 100}
    lines = [
        line.replace(
            b'"output_tokens"', b'"cache_creation":%s,"output_tokens"' % orjson.dumps(hour)
        )
        for line in lines
    ]
    later = call_lines(5, 0, 1600, model="claude-sonnet-4-6", minute=2)
    later = [line.replace(b"T10:02:", b"T12:02:") for line in later]
    claude.write([*lines, *later])
    line = claude.line()
    assert "last: ttl (2h00m passed the 1h00m lifetime)" in line, line
    claude.state_files()[0].unlink()
    assert "last: ttl (2h00m passed the 1h00m lifetime)" in claude.line()


# -- reading only what was added ----------------------------------------------------------


def test_a_run_reads_only_what_the_transcript_gained_since_the_last(claude: Claude) -> None:
    claude.write(calls(1, 40))
    first = claude.figures()
    [state] = claude.state_files()
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    # Lines already read, past the first few kilobytes, are changed in place (same length,
    # same line ends): a run that read them again would count call 30 as a break; a run going
    # on from the state does not.
    data = claude.transcript.read_bytes()
    changed = data.replace(b'"cache_read_input_tokens":3900', b'"cache_read_input_tokens":   0')
    assert changed.index(b"   0") > 3 * 4096
    assert len(changed) == len(data) and changed != data
    claude.transcript.write_bytes(changed)  # the same file: same inode, same start
    claude.write(calls(41, 2, breaks=(42,)))
    after = claude.figures()
    assert after["calls"] == 42
    assert after["breaks"] == 1 and after["last_break"]["message_id"] == "msg_0042"
    assert after["tokens"]["cache_read"] > first["tokens"]["cache_read"]
    fresh = claude.figures(XDG_CACHE_HOME=str(claude.cache.parent / "other-cache"))
    assert fresh["breaks"] == 2, "read whole, the changed call is a break"


def test_the_figures_gone_on_from_the_state_equal_those_read_in_one_go(claude: Claude) -> None:
    lines = calls(1, 30, breaks=(9, 22))
    for start in range(0, len(lines), 7):
        claude.write(lines[start : start + 7])
        claude.line()
    stepwise = claude.figures()
    fresh = claude.figures(XDG_CACHE_HOME=str(claude.cache.parent / "other-cache"))
    assert stepwise == fresh
    assert stepwise["breaks"] == 2 and stepwise["calls"] == 30


def test_a_half_written_last_line_waits_for_its_end(claude: Claude) -> None:
    claude.write(calls(1, 3))
    claude.line()
    last = calls(4, 1, breaks=(4,))
    half = len(last[0]) // 2
    claude.write([last[0][:half]])
    assert claude.figures()["calls"] == 3
    claude.write([last[0][half:], *last[1:]])
    figures = claude.figures()
    assert (figures["calls"], figures["breaks"]) == (4, 1)


@pytest.mark.parametrize("how", ["replaced", "truncated", "rewritten from its start"])
def test_a_transcript_that_is_no_longer_the_one_read_is_read_again(
    claude: Claude, how: str
) -> None:
    claude.write(calls(1, 8, breaks=(4,)))
    assert claude.figures()["breaks"] == 1
    other = calls(1, 3)
    if how == "replaced":
        new = claude.transcript.with_suffix(".new")
        new.write_bytes(b"".join(other))
        new.replace(claude.transcript)
    elif how == "truncated":
        claude.transcript.write_bytes(b"".join(other))
    else:  # the same length, in place, another id in the first line
        data = claude.transcript.read_bytes()
        claude.transcript.write_bytes(data.replace(b"msg_0001", b"msg_9999", 1))
    figures = claude.figures()
    fresh = claude.figures(XDG_CACHE_HOME=str(claude.cache.parent / "other-cache"))
    assert figures == fresh
    # Rewritten, the first call's two lines name two calls.
    assert figures["calls"] == (9 if how == "rewritten from its start" else 3)


def test_a_subagents_transcript_is_a_stream_of_its_own(claude: Claude) -> None:
    claude.write(calls(1, 4))
    agents = claude.transcript.with_suffix("") / "subagents"
    agents.mkdir(parents=True)
    # A subagent's first call reads nothing and is a start, not a break.
    (agents / "agent-a1b2c3.jsonl").write_bytes(b"".join(calls(100, 3)))
    (agents / "notes.jsonl").write_bytes(b"".join(calls(200, 3)))
    figures = claude.figures()
    assert (figures["calls"], figures["breaks"]) == (7, 0)


# -- bad input: a line, exit 0 ------------------------------------------------------------


@pytest.mark.parametrize(
    ("stdin", "said"),
    [
        (b"", "asz: no session on stdin"),
        (b"{not json", "asz: no session on stdin"),
        (b"[1, 2]", "asz: no session on stdin"),
        (b'{"session_id": "' + SESSION.encode() + b'"}', "asz: no transcript yet"),
        (b'{"transcript_path": "/nonexistent/x.jsonl"}', "asz: no transcript yet"),
        (b'{"transcript_path": "/dev/zero", "session_id": 7}', "asz: no transcript yet"),
    ],
)
def test_input_that_names_no_transcript_is_a_short_line(
    claude: Claude, stdin: bytes, said: str
) -> None:
    assert claude.line(stdin=stdin) == said + "\n"
    assert orjson.loads(claude.line("--json", stdin=stdin))["line"] == said


def test_a_session_with_no_calls_yet_says_so(claude: Claude) -> None:
    claude.write([b'{"type":"user","message":{"role":"user","content":"hi"}}\n', b"not json\n"])
    assert claude.line() == "cache: no calls yet\n"
    claude.write([b"\n", b"[]\n"])
    assert claude.figures()["status"] == "no_calls"


def test_a_state_file_that_is_damaged_is_not_used(claude: Claude) -> None:
    claude.write(calls(1, 5, breaks=(3,)))
    claude.line()
    for state in claude.state_files():
        state.write_bytes(b"00000000 3\n{}\n")
    assert claude.figures()["breaks"] == 1


def test_a_config_file_that_does_not_load_is_a_short_line(claude: Claude, tmp_path: Path) -> None:
    bad = tmp_path / "asz.toml"
    bad.write_text("root = 7\n")
    config_home = tmp_path / "config"
    (config_home / "asz").mkdir(parents=True)
    bad.rename(config_home / "asz" / "asz.toml")
    claude.write(calls(1, 2))
    said = claude.line(XDG_CONFIG_HOME=str(config_home))
    assert said.startswith("asz: the config file is not usable")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)
status_objects = st.fixed_dictionaries(
    {},
    optional={
        "session_id": json_values,
        "transcript_path": json_values,
        "model": json_values | st.fixed_dictionaries({"id": json_values}),
        "cost": json_values | st.fixed_dictionaries({"total_cost_usd": json_values}),
    },
)


@given(st.binary(max_size=200) | status_objects.map(lambda value: json.dumps(value).encode()))
@settings(max_examples=300)
def test_any_stdin_parses_to_fields_of_their_types(data: bytes) -> None:
    found = parse_input(data)
    assert isinstance(found, StatusInput)
    for text in (found.session_id, found.transcript_path, found.model):
        assert text is None or (isinstance(text, str) and text and "\x00" not in text)
    assert found.claude_code_cost_usd is None or isinstance(found.claude_code_cost_usd, float)


usages = st.fixed_dictionaries(
    {},
    optional={
        "input_tokens": st.integers(0, 10) | st.none(),
        "cache_read_input_tokens": st.integers(0, 5000) | st.text(max_size=2),
        "cache_creation_input_tokens": st.integers(0, 5000) | st.booleans(),
        "cache_creation": st.fixed_dictionaries(
            {"ephemeral_1h_input_tokens": st.integers(0, 5000)}
        ),
    },
)
assistant_lines = st.builds(
    lambda message_id, model, usage, time: orjson.dumps(
        {
            "type": "assistant",
            "timestamp": time,
            "message": {"id": message_id, "model": model, "usage": usage},
        }
    ),
    st.sampled_from(["msg_a", "msg_b", "msg_c", "msg_d", ""]),
    st.sampled_from([MODEL, "<synthetic>", "claude-unknown-9", None]),
    usages | st.none(),
    st.sampled_from(["2026-09-01T10:00:00.000Z", "2026-09-01T10:05:00.000Z", None]),
)
transcript_lines = st.lists(
    assistant_lines
    | st.just(b'{"type":"system","subtype":"compact_boundary"}')
    | st.binary(max_size=30).filter(lambda raw: b"\n" not in raw)
    | json_values.map(lambda value: json.dumps(value).encode()),
    max_size=25,
)


@given(transcript_lines, st.integers(0, 25))
@settings(max_examples=200, deadline=None)
def test_folding_any_lines_is_the_same_whether_the_state_is_kept_between_them(
    lines: list[bytes], cut: int
) -> None:
    prices = price_table()
    whole = StreamFold("main")
    for raw in lines:
        whole.line(raw, prices)
    first = StreamFold("main")
    for raw in lines[:cut]:
        first.line(raw, prices)
    resumed = StreamFold.of_state("main", orjson.loads(orjson.dumps(first.state())))
    for raw in lines[cut:]:
        resumed.line(raw, prices)
    assert resumed.state() == whole.state()
    assert resumed.shown(prices).state() == whole.shown(prices).state()


def test_a_file_with_no_line_end_is_not_read_whole(tmp_path: Path) -> None:
    """A run goes past its budget to finish a line, but a file at the transcript's path that
    never ends one (not a transcript) stays behind rather than filling memory."""
    endless = tmp_path / "not-a-transcript.jsonl"
    with endless.open("wb") as out:
        out.truncate(LONGEST_LINE + (64 << 20))  # zeros on disk for nothing
    done = advance(Source(MAIN_STREAM, endless), None, price_table(), budget=1 << 20)
    assert done.behind and done.kept is not None and done.kept["offset"] == 0
    assert done.read < LONGEST_LINE + (8 << 20)


# -- its start ------------------------------------------------------------------------------


def test_the_line_is_shown_without_loading_the_store_or_the_command_table(
    claude: Claude,
) -> None:
    claude.write(calls(1, 3))
    done = claude.run_asz(
        "statusline", input=claude.stdin(), env={**claude.env, "PYTHONPROFILEIMPORTTIME": "1"}
    )
    assert done.returncode == 0
    loaded = {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}
    assert "asz.statusline.reading" in loaded
    heavy = {"asz.store", "asz.commands", "rich", "structlog", "starlette", "obstore", "zstandard"}
    assert not heavy & loaded, heavy & loaded


def test_the_options_every_command_takes_go_through_the_whole_command_line(
    claude: Claude, tmp_path: Path
) -> None:
    claude.write(calls(1, 3, breaks=(3,)))
    done = claude.run_asz(
        "statusline", "--root", str(tmp_path / "elsewhere"), input=claude.stdin(), env=claude.env
    )
    assert (done.returncode, done.stdout.count(b"1 break")) == (0, 1), done.stderr
    done = claude.run_asz("statusline", "--fields", "cache,nope", input=b"", env=claude.env)
    assert done.returncode == 2 and b"nope" in done.stderr


# -- installing it ------------------------------------------------------------------------


def settings_of(tmp_path: Path) -> Path:
    return tmp_path / "home" / ".claude" / "settings.json"


def test_install_and_uninstall_keep_every_other_key_and_the_status_line_there_before(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    path = settings_of(tmp_path)
    path.parent.mkdir(parents=True)
    before = {
        "model": "opus",
        "statusLine": {"type": "command", "command": "printf 'mine\\n'", "padding": 2},
        "permissions": {"allow": ["Bash(ls:*)"]},
    }
    path.write_text(orjson.dumps(before).decode())
    path.chmod(0o640)
    shown = run_asz("statusline", "--install", "--dry-run")
    assert shown.returncode == 0, shown.stderr
    assert b'-    "command": "printf \'mine\\\\n\'",' in shown.stdout
    assert orjson.loads(path.read_bytes()) == before, "a dry run writes nothing"
    assert run_asz("statusline", "--install").returncode == 0
    installed = orjson.loads(path.read_bytes())
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert {k: v for k, v in installed.items() if k != "statusLine"} == {
        k: v for k, v in before.items() if k != "statusLine"
    }
    entry = installed["statusLine"]
    assert entry["padding"] == 2 and " statusline --with " in entry["command"]
    # The command Claude Code will run shows the old line, then asz's.
    done = run_asz("statusline", "--with", "printf 'mine\\n'", input=b"")
    assert done.stdout == b"mine \xc2\xb7 asz: no session on stdin\n"
    again = run_asz("statusline", "--install")
    assert again.returncode == 0 and b"nothing to change" in again.stdout
    assert orjson.loads(path.read_bytes()) == installed
    assert run_asz("statusline", "--uninstall").returncode == 0
    assert orjson.loads(path.read_bytes()) == before
    assert list(path.parent.iterdir()) == [path], "no temporary file is left"


def test_install_into_no_settings_and_back_leaves_no_status_line(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    path = settings_of(tmp_path)
    path.parent.mkdir(parents=True)
    assert run_asz("statusline", "--install").returncode == 0
    entry = orjson.loads(path.read_bytes())["statusLine"]
    assert entry["type"] == "command" and entry["padding"] == 0
    assert entry["command"].endswith(" statusline")
    assert run_asz("statusline", "--uninstall").returncode == 0
    assert orjson.loads(path.read_bytes()) == {}
    done = run_asz("statusline", "--uninstall")
    assert done.returncode == 0 and b"nothing to change" in done.stdout


def test_a_linked_settings_file_is_written_where_it_points(tmp_path: Path, run_asz: RunAsz) -> None:
    path = settings_of(tmp_path)
    path.parent.mkdir(parents=True)
    real = tmp_path / "dotfiles" / "settings.json"
    real.parent.mkdir()
    real.write_text('{"theme": "dark"}')
    path.symlink_to(real)
    assert run_asz("statusline", "--install").returncode == 0
    assert path.is_symlink()
    assert orjson.loads(real.read_bytes())["theme"] == "dark"
    assert "statusLine" in orjson.loads(real.read_bytes())


def test_a_settings_file_that_is_not_an_object_is_left_alone(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    path = tmp_path / "settings.json"
    for text in ("{broken", "[1]", '{"statusLine": {"type": "static", "text": "x"}}'):
        path.write_text(text)
        done = run_asz("statusline", "--install", "--settings", str(path))
        assert done.returncode == 2 and done.stderr.startswith(f"asz: {path}".encode())
        assert path.read_text() == text
    assert not [name for name in os.listdir(tmp_path) if name.endswith(".tmp")]


def test_the_state_of_the_sessions_written_last_is_kept_and_no_more(tmp_path: Path) -> None:
    directory = tmp_path / "statusline"
    stems = [directory / f"{n:08d}-0000-4000-8000-000000000000" for n in range(MAX_SESSIONS + 5)]
    for n, stem in enumerate(stems):
        save_state(stem, {"n": n})
        if n % 2:
            save_state(stem, {"n": n, "generation": 0})  # its second file
        for written in directory.glob(f"{stem.name}.*"):  # an order the clock cannot tie
            os.utime(written, ns=(n * 10**9, n * 10**9))
    kept = {path.name.rpartition(".")[0] for path in directory.iterdir()}
    assert kept == {stem.name for stem in stems[-MAX_SESSIONS:]}
    assert not any(path.name.startswith(stems[0].name) for path in directory.iterdir())


def test_the_kept_report_is_asked_no_more_often_than_the_retry_allows(
    claude: Claude, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    root.mkdir()  # a root that holds no report of this session
    claude.write(calls(1, 4, breaks=(3,)))

    def loaded() -> set[str]:
        done = claude.run_asz(
            "statusline",
            input=claude.stdin(),
            env={**claude.env, "ASZ_ROOT": str(root), "PYTHONPROFILEIMPORTTIME": "1"},
        )
        assert done.returncode == 0 and b"last: prefix (read nothing" in done.stdout
        return {line.split("|")[-1].strip() for line in done.stderr.decode().splitlines()}

    assert "asz.store" in loaded(), "the first run with a break asks the kept report"
    assert "asz.store" not in loaded(), "the next, within the retry, does not load the store"
    claude.write(calls(5, 1, breaks=(5,)))
    assert "asz.store" in loaded(), "a new break is asked about at once"


@pytest.mark.parametrize("budget", [10, 2000])
def test_a_long_transcript_is_read_over_several_runs_within_the_budget(
    tmp_path: Path, budget: int
) -> None:
    transcript = tmp_path / f"{SESSION}.jsonl"
    transcript.write_bytes(b"".join(calls(1, 20, breaks=(7, 15))))
    prices = price_table()
    source = Source(MAIN_STREAM, transcript)
    kept, runs = None, 0
    while True:
        runs += 1
        advanced = advance(
            source, orjson.loads(orjson.dumps(kept)) if kept else None, prices, budget
        )
        kept = advanced.kept
        if not advanced.behind:
            break
    assert runs >= 3
    assert advanced.fold is not None
    shown = advanced.fold.shown(prices)
    whole = advance(source, None, prices, 1 << 30)
    assert whole.fold is not None and not whole.behind
    assert shown.state() == whole.fold.shown(prices).state()
    assert (shown.counts["calls"], shown.counts["breaks"]) == (20, 2)


def test_run_by_hand_on_a_terminal_it_does_not_wait_for_stdin(claude: Claude) -> None:
    master, slave = pty.openpty()
    try:
        done = subprocess.run(
            [*asz_executable(), "statusline"],
            stdin=slave,
            capture_output=True,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **claude.env},
            timeout=30,
            check=False,
        )
    finally:
        os.close(master)
        os.close(slave)
    assert (done.returncode, done.stdout) == (0, b"asz: no session on stdin\n")


def test_a_state_file_left_half_written_gives_way_to_the_one_before(claude: Claude) -> None:
    claude.write(calls(1, 5))
    claude.line()
    claude.write(calls(6, 5, breaks=(8,)))
    claude.line()
    newer, older = sorted(claude.state_files(), key=lambda path: -path.stat().st_mtime_ns)
    whole = newer.read_bytes()
    newer.write_bytes(whole[: len(whole) // 2])  # a run stopped while writing it
    claude.write(calls(11, 3, breaks=(12,)))
    figures = claude.figures()
    assert figures == claude.figures(XDG_CACHE_HOME=str(claude.cache.parent / "other-cache"))
    assert (figures["calls"], figures["breaks"]) == (13, 2)
    assert older.exists()
