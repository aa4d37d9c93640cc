"""Damage that derived state could hide, met by every reading command.

Each damage is made on a root freshly landed by the real collector (``asz synth`` and
``asz collect --once``, every derived file already kept), then one reading command runs on
it. What each command says and its exit code is the table of ``docs/reliability.md``, which
this file reads: the table is what these tests measure, so the two cannot drift apart.
"""

from __future__ import annotations

import errno
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.archive_roots import Machine
from support.cli import RunAsz
from support.paths import REPO
from support.s3server import BUCKET, S3Server, proxied

from asz.atomic import LocalTemp
from asz.store import BODY_KIND, TRANSCRIPT_KIND, LocalBackend, open_store
from asz.store._layout import MANIFESTS_FILE, stream_dir
from asz.synth import SynthOptions, synthesize

DOC = REPO / "docs" / "reliability.md"
CONFIG = "[adapters.claude_code_provider]\nmax_delta_bytes = 4096\n"
"""Small landed files: a session's bodies in many files, so one can be in the middle."""


@dataclass(slots=True)
class Landed:
    root: Path
    session: str
    damaged: str
    """The name of the landed file damaged (or of the session's directory, or derived file)."""
    record_id: str
    """A body of that file (any body, for damage that touches no body file)."""


def _middle(root: Path, session: str) -> tuple[Path, str]:
    """The body file in the middle of the session's sequence, and a body it holds."""
    store = open_store(root)
    landed = store.session(session)
    names = landed.landed(BODY_KIND)
    name = names[len(names) // 2]
    record_id = next(m.record_id for m in landed.manifests().values() if m.file == name.name)
    return root / name.path, record_id


def flip_in_place(root: Path, session: str) -> tuple[str, str]:
    path, record_id = _middle(root, session)
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x01
    with path.open("r+b") as handle:  # the same file, the same size
        handle.write(data)
    return path.name, record_id


def damage_derived(root: Path, session: str) -> tuple[str, str]:
    _path, record_id = _middle(root, session)
    index = root / session / MANIFESTS_FILE
    text = index.read_text()
    found = re.search(r'"prompt[a-z_]*":"[0-9a-f]', text)
    assert found is not None, "a prompt id in the manifest index"
    at = found.end() - 1
    text = text[:at] + ("1" if text[at] == "0" else "0") + text[at + 1 :]
    index.write_text(text)
    return MANIFESTS_FILE, record_id


def remove_mid_sequence(root: Path, session: str) -> tuple[str, str]:
    path, record_id = _middle(root, session)
    path.unlink()
    return session, record_id


def truncate(root: Path, session: str) -> tuple[str, str]:
    path, record_id = _middle(root, session)
    path.write_bytes(path.read_bytes()[:-9])
    return path.name, record_id


def remove_session(root: Path, session: str) -> tuple[str, str]:
    _path, record_id = _middle(root, session)
    shutil.rmtree(root / session)
    return session, record_id


DAMAGES: dict[str, Callable[[Path, str], tuple[str, str]]] = {
    "a body file changed in place at the same size": flip_in_place,
    "the manifest index changed": damage_derived,
    "a body file missing mid-sequence": remove_mid_sequence,
    "a body file truncated": truncate,
    "the session removed": remove_session,
}
COMMANDS = ("sessions", "view", "cache SESSION", "cache", "body", "restore", "verify")


def said(stderr: str, landed: Landed) -> str:
    """What a command's stderr says, in the table's words."""
    if f"no session {landed.session}" in stderr:
        return "no such session"
    if "no sessions have landed" in stderr:
        return "says no session has landed"
    if "the session is incomplete" in stderr:
        return "says the session is incomplete"
    if "a derived file, made again" in stderr:
        return "names the derived file"
    if landed.damaged in stderr:
        return "names the file"
    return "says nothing" if not stderr else f"says {stderr!r}"


def documented() -> dict[tuple[str, str], str]:
    """The table of ``docs/reliability.md``: (damage, command) -> its cell."""
    text = DOC.read_text()
    after = text[text.index("<!-- damage table -->") :].splitlines()[1:]
    rows = after[: next(i for i, line in enumerate(after) if not line.startswith("|"))]
    header = [cell.strip().strip("`") for cell in rows[0].strip("|").split("|")]
    assert header[1:] == list(COMMANDS), header
    table = {}
    for row in rows[2:]:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        for command, cell in zip(COMMANDS, cells[1:], strict=True):
            table[cells[0], command] = cell
    return table


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    claude = tmp_path_factory.mktemp("capture") / "claude"
    synthesize(claude, SynthOptions(seed=7, sessions=1, turns=3))
    return claude


def land(tmp_path: Path, run_asz: RunAsz, claude: Path) -> tuple[Path, Path, str]:
    """A root freshly landed from ``claude`` with its derived files kept; its config, its
    session."""
    root, config = tmp_path / "root", tmp_path / "asz.toml"
    config.write_text(CONFIG)
    env = {"CLAUDE_CONFIG_DIR": str(claude)}
    done = run_asz("collect", "--once", "--root", str(root), "--config", str(config), env=env)
    assert done.returncode == 0, done.stderr
    assert run_asz("sessions", "--root", str(root)).returncode == 0
    (session,) = open_store(root).sessions()
    return root, config, session


def run_command(run_asz: RunAsz, command: str, landed: Landed, out: Path) -> tuple[int, str]:
    args = {
        "sessions": ["sessions"],
        "view": ["view", landed.session],
        "cache SESSION": ["cache", landed.session],
        "cache": ["cache"],
        "body": ["body", landed.session, landed.record_id],
        "restore": ["restore", "--to", str(out), landed.session],
        "verify": ["verify"],
    }[command]
    done = run_asz(*args, "--root", str(landed.root))
    return done.returncode, done.stderr.decode()


@pytest.mark.slow
@pytest.mark.parametrize("command", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES)
def test_each_reading_command_says_what_the_table_says_of_each_damage(
    tmp_path: Path, run_asz: RunAsz, capture: Path, damage: str, command: str
) -> None:
    root, _config, session = land(tmp_path, run_asz, capture)
    damaged, record_id = DAMAGES[damage](root, session)
    landed = Landed(root, session, damaged, record_id)
    code, stderr = run_command(run_asz, command, landed, tmp_path / "restored")
    assert f"exit {code}, {said(stderr, landed)}" == documented()[damage, command], stderr


# -- each damage on its own ---------------------------------------------------------------------


@pytest.mark.slow
def test_a_body_file_changed_in_place_makes_the_kept_report_and_summary_be_made_again(
    tmp_path: Path, run_asz: RunAsz, capture: Path
) -> None:
    root, _config, session = land(tmp_path, run_asz, capture)
    assert run_asz("cache", session, "--root", str(root)).returncode == 0
    size = {path: path.stat().st_size for path in (root / session).rglob("*.asz")}
    name, _record_id = flip_in_place(root, session)
    assert {path: path.stat().st_size for path in size} == size, "nothing changed size"
    for command in (["cache", session], ["sessions"], ["cache"]):
        done = run_asz(*command, "--root", str(root))
        assert done.returncode == 1, command
        assert name in done.stderr.decode(), command


@pytest.mark.slow
def test_a_damaged_manifest_index_is_never_believed_and_verify_names_it(
    tmp_path: Path, run_asz: RunAsz, capture: Path
) -> None:
    root, _config, session = land(tmp_path, run_asz, capture)
    before = run_asz("view", session, "--json", "--root", str(root))
    assert before.returncode == 0
    damage_derived(root, session)
    after = run_asz("view", session, "--json", "--root", str(root))
    assert after.returncode == 0 and after.stdout == before.stdout, "the same joins"
    damage_derived(root, session)
    done = run_asz("verify", "--root", str(root))
    assert done.returncode == 1 and MANIFESTS_FILE in done.stderr.decode()
    assert b"not whole" in done.stderr
    assert run_asz("verify", "--root", str(root)).returncode == 0, "made again by verify"


@pytest.mark.slow
def test_verify_names_a_derived_file_whole_but_not_what_the_landed_files_give(
    tmp_path: Path, run_asz: RunAsz, capture: Path
) -> None:
    from asz.store._summary import SUMMARY

    root, _config, session = land(tmp_path, run_asz, capture)
    landed = open_store(root).session(session)
    kept = SUMMARY.read(landed)
    assert kept is not None
    SUMMARY.write(landed, kept.mark, {**kept.value, "calls": kept.value["calls"] + 1})
    listed = run_asz("sessions", "--json", "--root", str(root))
    assert listed.returncode == 0, "whole, and made at the files' mark: a reader takes it"
    done = run_asz("verify", "--root", str(root))
    assert done.returncode == 1
    assert b"summary.json: does not hold what the landed files give" in done.stderr
    assert run_asz("verify", "--root", str(root)).returncode == 0


@pytest.mark.slow
def test_a_body_landed_whole_is_a_row_of_the_report_not_a_problem(
    tmp_path: Path, run_asz: RunAsz
) -> None:
    import orjson

    claude = tmp_path / "claude"
    synthesize(claude, SynthOptions(seed=7, sessions=1, turns=2))
    bodies = claude / "asz" / "provider-bodies"
    request = next(
        path
        for path in sorted(bodies.glob("*.request.json"))
        if b"cc_prev_req=" in path.read_bytes()
    )
    value = orjson.loads(request.read_bytes())
    data = orjson.dumps(value).replace(b'"role":"user"', b'"role":"us\xe9r"', 1)
    assert data != orjson.dumps(value)
    request.write_bytes(data)
    root, _config, session = land(tmp_path, run_asz, claude)
    record_id = request.name.removesuffix(".json")
    assert open_store(root).session(session).manifest(record_id).why
    done = run_asz("cache", session, "--json", "--root", str(root))
    assert done.returncode == 0, done.stderr
    report = orjson.loads(done.stdout)
    (row,) = [row for row in report["rows"] if row["request_id"] == record_id]
    # The row says why the body could not be compared (another evidence may name the cause).
    assert "the body is not valid UTF-8" in row["detail"]
    assert row["cause"] == "unreadable" or row["cause_from"] != "bodies"
    assert report["problems"] == []
    for command in (["cache", session], ["view", session], ["verify"]):
        assert run_asz(*command, "--root", str(root)).returncode == 0, command


def test_a_legitimately_landed_root_has_no_gap(tmp_path: Path, run_asz: RunAsz) -> None:
    from support.paths import FIXTURE_ROOT

    root = tmp_path / "root"
    shutil.copytree(FIXTURE_ROOT, root)
    for command in (["verify"], ["sessions"], ["cache"]):
        done = run_asz(*command, "--root", str(root))
        assert done.returncode == 0 and b"incomplete" not in done.stderr, command


# -- the same damage in a bucket ----------------------------------------------------------------


@pytest.fixture
def pushed(s3: S3Server, tmp_path: Path, capture: Path) -> tuple[Machine, Path, str, str]:
    """A capture landed in small files and pushed to the test's own prefix: the machine, its
    config, the prefix and the session."""
    machine = Machine(tmp_path / "laptop")
    shutil.copytree(capture, machine.claude)
    prefix = "d-" + tmp_path.name[-10:]
    config = machine.configure(s3.endpoint, prefix)
    config.write_text(config.read_text() + CONFIG)
    done = machine.asz("collect", "--once", "--root", str(machine.root), "--config", str(config))
    assert done.returncode == 0, done.stderr
    assert machine.push(config).returncode == 0
    (session,) = machine.store().sessions()
    return machine, config, prefix, session


def _middle_key(s3: S3Server, prefix: str, session: str) -> str:
    keys = sorted(k for k in s3.objects(f"{prefix}/{session}/") if "/provider_body/" in k)
    return keys[len(keys) // 2]


@pytest.mark.slow
def test_an_object_put_again_at_the_same_size_is_read_again(
    s3: S3Server, pushed: tuple[Machine, Path, str, str]
) -> None:
    machine, config, prefix, session = pushed
    for command in (["cache", session], ["sessions"]):
        assert machine.read(config, prefix, *command).returncode == 0  # kept in the cache
    key = _middle_key(s3, prefix, session)
    data = bytearray(s3.objects(key)[key])
    data[len(data) // 2] ^= 0x01
    s3.client().put_object(Bucket=BUCKET, Key=key, Body=bytes(data))
    for command in (["cache", session], ["sessions"]):
        done = machine.read(config, prefix, *command)
        assert done.returncode == 1, command
        assert key in done.stderr.decode(), command


@pytest.mark.slow
def test_a_body_file_deleted_from_the_bucket_mid_session_is_a_gap(
    s3: S3Server, pushed: tuple[Machine, Path, str, str]
) -> None:
    machine, config, prefix, session = pushed
    assert machine.read(config, prefix, "cache", session).returncode == 0
    s3.client().delete_object(Bucket=BUCKET, Key=_middle_key(s3, prefix, session))
    for command in (["verify"], ["view", session], ["cache", session], ["cache"], ["sessions"]):
        done = machine.read(config, prefix, *command)
        assert done.returncode == 1, command
        assert b"the session is incomplete" in done.stderr, command


# -- no gap where nothing was lost --------------------------------------------------------------


class FullOnce(LocalBackend):
    """A disk that is full for the first file written under ``full``, then has room."""

    def __init__(self, path: Path, full: str) -> None:
        super().__init__(path)
        self.full = full

    def write_temp(self, path: str, data: bytes) -> LocalTemp:
        if self.full in path:
            self.full = "\0"
            raise OSError(errno.ENOSPC, "No space left on device", path)
        return super().write_temp(path, data)


def test_a_file_that_could_not_be_staged_gives_its_number_back(tmp_path: Path) -> None:
    session = "0b6d3c52-4a8e-4f51-9a34-3b9c4f0de1a7"
    store = open_store(FullOnce(tmp_path / "root", stream_dir(session, "a")))
    writer = store.writer(session, store.batch())
    with pytest.raises(OSError):
        writer.land(TRANSCRIPT_KIND, stream_dir(session, "a"), {}, [({}, b"lost\n")])
    writer.land(TRANSCRIPT_KIND, stream_dir(session, "b"), {}, [({}, b"landed\n")])
    writer.batch.commit()
    landed = open_store(tmp_path / "root").session(session)
    assert [name.seq for name in landed.landed()] == [1]
    assert landed.gaps() == []


def test_a_gap_the_collector_landed_past_knowing_it_is_said_no_more(tmp_path: Path) -> None:
    """Files a power cut lost after the ``seq`` file remembered them: the next file lands past
    them and says so, so the gap is no damage (a file removed later is)."""
    session = "0b6d3c52-4a8e-4f51-9a34-3b9c4f0de1a7"
    store = open_store(tmp_path / "root")
    for name in ("a", "b", "c"):
        writer = store.writer(session, store.batch())
        writer.land(TRANSCRIPT_KIND, stream_dir(session, name), {}, [({}, b"x\n")])
        writer.batch.commit()
    (tmp_path / "root" / stream_dir(session, "c") / "transcript-00000003.asz").unlink()
    assert "number 3" in str(store.session(session).gaps())
    writer = store.writer(session, store.batch())
    writer.land(TRANSCRIPT_KIND, stream_dir(session, "d"), {}, [({}, b"x\n")])
    writer.batch.commit()
    assert [name.seq for name in store.session(session).landed()] == [1, 2, 4]
    assert store.session(session).gaps() == []
    (tmp_path / "root" / stream_dir(session, "a") / "transcript-00000001.asz").unlink()
    assert "number 1)" in str(store.session(session).gaps())


@pytest.mark.slow
def test_a_session_a_push_left_with_gaps_reads_as_incomplete_until_it_is_whole(
    s3: S3Server, tmp_path: Path, capture: Path
) -> None:
    machine = Machine(tmp_path / "laptop")
    shutil.copytree(capture, machine.claude)
    prefix = "i-" + tmp_path.name[-10:]
    config = machine.configure(s3.endpoint, prefix)
    config.write_text(config.read_text() + CONFIG)
    done = machine.asz("collect", "--once", "--root", str(machine.root), "--config", str(config))
    assert done.returncode == 0, done.stderr
    (session,) = machine.store().sessions()
    names = machine.store().session(session).landed(BODY_KIND)
    held_back = names[len(names) // 2].path

    def fault(method: str, key: str, n: int) -> str:
        return "reset-before" if method == "PUT" and key.endswith(held_back) else ""

    with proxied(s3, fault) as proxy:
        stopped = machine.asz(
            "push",
            "--root",
            str(machine.root),
            "--config",
            str(machine.configure(proxy.endpoint, prefix, attempts=1)),
        )
    assert stopped.returncode == 1
    assert s3.objects(f"{prefix}/{session}/{BODY_KIND}/"), "the files around it went"
    remote = machine.configure(s3.endpoint, prefix)
    config.write_text(remote.read_text() + CONFIG)
    for command in (["verify"], ["view", session], ["cache", session], ["cache"]):
        done = machine.read(config, prefix, *command)
        assert done.returncode == 1, command
        assert b"the session is incomplete" in done.stderr, command
    assert machine.push(config).returncode == 0
    for command in (["verify"], ["view", session], ["cache", session], ["cache"]):
        assert machine.read(config, prefix, *command).returncode == 0, command


@pytest.mark.slow
def test_a_session_whose_newest_files_are_not_pushed_yet_reads_as_incomplete(
    s3: S3Server, tmp_path: Path, capture: Path
) -> None:
    """A push says how far a session's files reach before it sends them (``extent-<n>``):
    a reader of a bucket the push is still filling, or that it left short, says the session
    is incomplete rather than reading a shorter session as whole."""
    machine = Machine(tmp_path / "laptop")
    shutil.copytree(capture, machine.claude)
    prefix = "n-" + tmp_path.name[-10:]
    config = machine.configure(s3.endpoint, prefix)
    config.write_text(config.read_text() + CONFIG)
    done = machine.asz("collect", "--once", "--root", str(machine.root), "--config", str(config))
    assert done.returncode == 0, done.stderr
    (session,) = machine.store().sessions()
    newest = machine.store().session(session).landed()[-1].path

    def fault(method: str, key: str, n: int) -> str:
        return "reset-before" if method == "PUT" and key.endswith(newest) else ""

    with proxied(s3, fault) as proxy:
        stopped = machine.asz(
            "push",
            "--root",
            str(machine.root),
            "--config",
            str(machine.configure(proxy.endpoint, prefix, attempts=1)),
        )
    assert stopped.returncode == 1
    held = s3.objects(f"{prefix}/{session}/")
    assert f"{prefix}/{newest}" not in held and len(held) > 2, "all but the newest went"
    remote = machine.configure(s3.endpoint, prefix)
    config.write_text(remote.read_text() + CONFIG)
    for command in (["verify"], ["view", session], ["cache", session]):
        done = machine.read(config, prefix, *command)
        assert done.returncode == 1, command
        assert b"the session is incomplete" in done.stderr, command
    assert machine.push(config).returncode == 0
    for command in (["verify"], ["view", session], ["cache", session]):
        assert machine.read(config, prefix, *command).returncode == 0, command
