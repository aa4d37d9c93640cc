"""A repacked session in the archive: its generation goes after its files, and a reader of the
bucket sees each body and line once, whether the objects from before the repack are there too
or not."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard
from support.archive_roots import bucket_prefix, is_extent
from support.cli import RunAsz
from support.handmade import SESSION, HandMade, chain
from support.harness import Capture, Workspace, asz_command
from support.repacking import landed_in_passes, repack, sessions, without_refs
from support.s3server import BUCKET, CREDENTIALS, S3Server, archive_config, proxied

from asz.adapters.session_filter import landed_admits
from asz.archive import open_bucket
from asz.archive.push import Pusher
from asz.archive.record import PushRecord
from asz.archive.redacted import RedactedRoot, redacted_root
from asz.config_file import load_config
from asz.locations import ArchiveUrl
from asz.redact import Redacted, Redactor
from asz.store import (
    MAIN_STREAM,
    REPACK_LEVELS,
    Generation,
    budgets_of,
    landing_lock,
    open_store,
    repack_session,
)


def run(ws: Workspace, *args: str, root: str) -> subprocess.CompletedProcess[bytes]:
    env = ws.env({**CREDENTIALS, "XDG_CACHE_HOME": str(ws.base / "cache")})
    return subprocess.run(
        [*asz_command(), *args, "--root", root], env=env, capture_output=True, check=False
    )


def json_of(ws: Workspace, *args: str, root: str) -> Any:
    done = run(ws, *args, "--json", root=root)
    assert done.returncode == 0, done.stderr.decode()
    return orjson.loads(done.stdout)


def readers(ws: Workspace, config: Path, root: str) -> dict[str, Any]:
    """What the reading commands say of the root (the archive's or the local one)."""
    seen: dict[str, Any] = {"cache": json_of(ws, "cache", "--config", str(config), root=root)}
    for session in sessions(ws):
        seen[session] = {
            what: without_refs(json_of(ws, what, session, "--config", str(config), root=root))
            for what in ("view", "cache")
        }
    verified = json_of(ws, "verify", "--config", str(config), root=root)
    seen["verify"] = {k: verified[k] for k in ("bodies", "transcript_lines", "index_lines")}
    assert verified["problems"] == []
    return seen


def push(ws: Workspace, config: Path) -> dict[str, Any]:
    return json_of(ws, "push", "--config", str(config), root=str(ws.root))


@pytest.mark.slow
@pytest.mark.parametrize("pushed_before", [True, False])
def test_a_reader_of_the_bucket_sees_each_body_and_line_once_across_a_repack(
    s3: S3Server, tmp_path: Path, pushed_before: bool
) -> None:
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=6, sessions=2, turns=4))
    prefix = f"r{int(pushed_before)}-{abs(hash(tmp_path)) % 10**8}"
    bucket = f"s3://{BUCKET}/{prefix}"
    with proxied(s3) as proxy:
        config = archive_config(tmp_path / "asz.toml", proxy.endpoint, prefix)
        local = readers(ws, config, str(ws.root))
        if pushed_before:
            assert push(ws, config)["complete"]
        repack(ws, *sessions(ws))
        pushed = push(ws, config)
        assert pushed["complete"], pushed
        puts = [seen.key for seen in proxy.seen if seen.method == "PUT" and seen.status == 200]

    held = s3.objects(prefix + "/")
    store = open_store(ws.root)
    for session in sessions(ws):
        generation = store.session(session).generation()
        assert generation is not None
        manifest = f"{prefix}/{generation.path}"
        assert held[manifest] == (ws.root / generation.path).read_bytes()
        files = [f"{prefix}/{name.path}" for name in generation.files]
        assert all(puts.index(key) < puts.index(manifest) for key in files)
        old = [key for key in held if f"/{session}/provider_body/" in key]
        assert bool(old) == pushed_before  # retired objects stay until a prune
    direct = archive_config(tmp_path / "direct.toml", s3.endpoint, prefix)
    assert readers(ws, direct, bucket) == local
    assert push(ws, direct)["files"] == 0

    # What the generations replaced leaves only with --prune, once they are old enough.
    later = archive_config(tmp_path / "later.toml", s3.endpoint, prefix, prune_after=3600.0)
    waiting = json_of(ws, "push", "--prune", "--config", str(later), root=str(ws.root))
    assert waiting["pruned"]["objects"] == 0
    assert (waiting["pruned"]["waiting"] > 0) == pushed_before
    now = archive_config(tmp_path / "now.toml", s3.endpoint, prefix, prune_after=0.0)
    pruned = json_of(ws, "push", "--prune", "--config", str(now), root=str(ws.root))["pruned"]
    assert (pruned["objects"] > 0) == pushed_before and not pruned["errors"]
    left = set(s3.objects(prefix + "/"))
    assert {key for key in held if key not in left} == {
        key
        for key in held
        if "/g-" not in key and "/generation-" not in key and "/_" not in key
        if not is_extent(key)  # a session's highest extent is never pruned
    }
    assert readers(ws, direct, bucket) == local


class RepackingRedactor(Redactor):
    """The push's redactor, which calls ``repack`` as it redacts its first body."""

    def __init__(self, real: Redactor, repack: Callable[[], None]) -> None:
        super().__init__(real.policy, real._key)
        self.repack = repack

    def body(self, raw: bytes) -> Redacted:
        self.repack()
        return super().body(raw)


@pytest.mark.slow
@pytest.mark.parametrize("redact", [False, True])
def test_a_session_repacked_while_a_push_reads_it_goes_whole_with_no_failure(
    s3: S3Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, redact: bool
) -> None:
    """A repack retires the files of the first session after the push listed them, before it
    reads them: raw, once the push asks whether it admits the second session (it then sends
    the files it listed); redacted, as it makes the counterpart of the first one's files. It
    reads the session again from its generation, once."""
    for name, value in CREDENTIALS.items():
        monkeypatch.setenv(name, value)
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=6, sessions=2, turns=3), 4)
    first, second = sessions(ws)
    prefix = bucket_prefix(tmp_path)
    toml = archive_config(tmp_path / "asz.toml", s3.endpoint, prefix, redact=redact)
    config = load_config(toml, root=ws.root, env={"HOME": str(tmp_path)})
    local = readers(ws, toml, str(ws.root))
    store = open_store(ws.root)
    admits = landed_admits(config, store)
    repacked: list[str] = []

    def repack_first() -> None:
        if not repacked:
            landing = partial(landing_lock, ws.root)
            repacked.append(repack_session(store, first, budgets_of(config), landing=landing).state)

    def repacking(session: str) -> bool | None:
        if session == second and not redact:
            repack_first()
        return admits(session)

    redacted = redacted_root(config, ws.root, store)
    if redacted is not None:
        redacted = RedactedRoot(
            redacted.path, store, RepackingRedactor(redacted.redactor, repack_first)
        )
    bucket = open_bucket(config.archive.url, config.archive)
    url = ArchiveUrl.parse(str(config.archive.url))
    tally = Pusher(ws.root, store, repacking, url, bucket, workers=2, redacted=redacted).run()

    assert repacked == ["repacked"]
    assert tally.complete and not tally.errors and not tally.redaction_failed, tally
    held = readers(ws, toml, f"s3://{BUCKET}/{prefix}")
    assert (held if not redact else held["verify"]) == (local if not redact else local["verify"])


def repacked_and_mirrored(
    tmp_path: Path, run_asz: RunAsz, *, subagent: bool
) -> tuple[Generation, RedactedRoot]:
    """A hand-made session (with a subagent's stream, or not) repacked by ``asz repack``, and
    its redacted counterpart made under the default policy."""
    made = HandMade(tmp_path)
    made.prompt(MAIN_STREAM, "p1")
    chain(made, MAIN_STREAM, "p1", [("msg_1", "req_1"), ("msg_2", "req_2")])
    if subagent:
        made.prompt("a1b2c3d", "p2")
        chain(made, "a1b2c3d", "p2", [("msg_3", "req_3")])
    store = made.land()
    done = run_asz("repack", SESSION, "--root", str(tmp_path / "root"))
    assert done.returncode == 0, done.stderr.decode()
    generation = store.open_session(SESSION).generation()
    assert generation is not None
    config = load_config(
        archive_config(tmp_path / "asz.toml", "http://127.0.0.1:9", "p", redact=True),
        root=tmp_path / "root",
        env={"HOME": str(tmp_path)},
    )
    redacted = redacted_root(config, tmp_path / "root", store)
    assert redacted is not None
    assert redacted.make(SESSION, generation.files[-1]).failed is None
    return generation, redacted


def test_a_repacked_session_re_redacted_keeps_its_streams_in_a_pack(
    tmp_path: Path, run_asz
) -> None:
    generation, redacted = repacked_and_mirrored(tmp_path, run_asz, subagent=True)
    assert generation.streams
    mirrored = redacted.shadow.open_session(SESSION)
    before = {path: mirrored.transcript(path) for path in mirrored.transcript_paths()}

    again = redacted.reredact(SESSION, generation.replaces + 1)

    assert list(again.streams.values()) == list(generation.streams.values())
    shadow = redacted.shadow.open_session(SESSION)
    assert shadow.generation() == again
    assert {path: shadow.transcript(path) for path in shadow.transcript_paths()} == before
    assert len(before) == 2 and not shadow.problems


def compressed_at_repack_levels(files: list[Path]) -> dict[str, bool]:
    """For each landed file, whether its bytes are its content compressed at the repack level
    of its kind (zstd gives the same bytes for the same content, level and version)."""
    seen = {}
    for path in files:
        data = path.read_bytes()
        content = zstandard.ZstdDecompressor().decompress(data)
        kind = orjson.loads(content[: content.index(b"\n")])["kind"]
        level = REPACK_LEVELS[kind]
        again = zstandard.ZstdCompressor(level=level, write_checksum=True).compress(content)
        seen[str(path)] = again == data
    return seen


def test_the_counterparts_of_a_repacked_session_are_compressed_as_its_files_are(
    tmp_path: Path, run_asz
) -> None:
    generation, redacted = repacked_and_mirrored(tmp_path, run_asz, subagent=False)
    own = sorted((tmp_path / "root" / SESSION).glob("g-*/**/*.asz"))
    mirrored = sorted((tmp_path / "root" / "_state" / "redacted").glob(f"*/{SESSION}/g-*/**/*.asz"))
    assert {p.parent.name for p in own} >= {"provider_body", "transcripts"}
    assert len(mirrored) == len(own)
    assert all(compressed_at_repack_levels(own).values())
    assert compressed_at_repack_levels(mirrored) == dict.fromkeys(map(str, mirrored), True)

    again = redacted.reredact(SESSION, generation.replaces + 1)
    reredacted = sorted(
        (tmp_path / "root" / "_state" / "redacted").glob(f"*/{again.directory}/**/*.asz")
    )
    assert reredacted and all(compressed_at_repack_levels(reredacted).values())


@pytest.mark.slow
def test_the_push_record_forgets_what_a_prune_removed(s3: S3Server, tmp_path: Path) -> None:
    """A record keeps only what is in the bucket: the objects a prune removed leave it, so it
    does not grow by every object a session ever had, and the next push still sends nothing."""
    ws = Workspace(tmp_path)
    landed_in_passes(ws, Capture.make(tmp_path / "capture", seed=8, sessions=1, turns=3), 4)
    prefix = f"f-{abs(hash(tmp_path)) % 10**8}"
    config = archive_config(tmp_path / "asz.toml", s3.endpoint, prefix, prune_after=0.0)
    assert push(ws, config)["complete"]
    repack(ws, *sessions(ws))
    assert push(ws, config)["complete"]
    held = set(s3.objects(prefix + "/"))
    pruned = json_of(ws, "push", "--prune", "--config", str(config), root=str(ws.root))
    assert pruned["pruned"]["objects"] > 0 and pruned["files"] == 0
    left = {key.removeprefix(prefix + "/") for key in s3.objects(prefix + "/")}
    gone = {key.removeprefix(prefix + "/") for key in held} - left
    assert gone and not any("/g-" in key for key in gone)

    record = PushRecord.for_root(ws.root, f"s3://{BUCKET}/{prefix}", s3.endpoint)
    assert not record.rebuilt
    assert (record.done.keys() | record.tried | record.extents) & gone == set()
    assert {key for key in left if not key.startswith("_")} <= record.done.keys() | record.extents
    snapshot = (ws.root / "_state" / "archive-pushed.json").read_text()
    assert not any(key in snapshot for key in gone)
    assert push(ws, config)["files"] == 0
