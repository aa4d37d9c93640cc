"""The parts of the archive that need no server: the local cache of what was read (bounded,
private, never answering for an object that changed in the bucket) and the settings."""

from __future__ import annotations

import hashlib
import os
import re
import socket
import stat
import time
from functools import partial
from pathlib import Path

import pytest

from asz.archive.ahead import KEPT, ReadAhead
from asz.archive.cache import LocalCache
from asz.archive.push import PushBusy, push_lock
from asz.archive.record import PushRecord
from asz.config import ConfigError
from asz.config_file import load_config
from asz.export.cursor import ExportBusy, export_lock


def test_the_cache_stays_under_its_bound_dropping_the_least_recently_used(
    tmp_path: Path,
) -> None:
    cache = LocalCache(tmp_path / "cache", "s3://team-archive/x", limit=10_000)
    long_ago = time.time_ns() - 3600 * 10**9

    def keep(n: int) -> None:
        """Keeps copy ``n`` as used ``n`` seconds after ``long_ago``: file times tell the
        order of use, so the test sets them rather than waiting for a clock to move."""
        cache.keep_landed(f"s/f-{n}", "etag", bytes([n]) * 1000)
        name = cache.dir / "landed" / hashlib.sha256(f"s/f-{n}\0etag".encode()).hexdigest()
        if name.exists():
            os.utime(name, ns=(long_ago + n * 10**9, long_ago + n * 10**9))

    for n in range(9):
        keep(n)
    assert cache.landed("s/f-0", "etag", 1000) == bytes([0]) * 1000  # used: now the most recent
    for n in range(9, 12):
        keep(n)
    held = [path.stat().st_size for path in (cache.dir / "landed").iterdir()]
    assert sum(held) <= 10_000
    assert cache.landed("s/f-11", "etag", 1000) == bytes([11]) * 1000  # the newest are there
    assert cache.landed("s/f-1", "etag", 1000) is None  # the least recently used went
    assert cache.landed("s/f-0", "etag", 1000) is not None  # the oldest, read since, stayed
    assert cache.landed("s/f-11", "another-etag", 1000) is None  # changed in the bucket: not it


def test_what_the_cache_holds_is_private(tmp_path: Path) -> None:
    base = tmp_path / "xdg" / "asz" / "archive"
    cache = LocalCache(base, "s3://team-archive/x", limit=1 << 20)
    cache.keep_landed("s/f", "e", b"body")
    cache.keep_derived("s/summary.json", b"{}")
    assert cache.derived("s/summary.json") == b"{}"
    for path in [base, *base.rglob("*")]:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o700 if path.is_dir() else 0o600), path


def test_archive_settings_are_checked_and_never_hold_credentials(tmp_path: Path) -> None:
    config_file = tmp_path / "asz.toml"
    for table, said in (
        ('url = "http://team-archive/x"', "s3://bucket/prefix"),
        ('url = "s3://Not_A_Bucket/x"', "not a bucket name"),
        ('url = "s3://team-archive/a//b"', "empty"),
        ("workers = 0", "at least 1"),
        ('secret_access_key = "x"', "unknown key 'archive.secret_access_key'"),
    ):
        config_file.write_text(f"[archive]\n{table}\n")
        with pytest.raises(ConfigError, match=re.escape(said)):
            load_config(config_file, env={"HOME": str(tmp_path)})
    config = load_config(root="s3://team-archive/team/", env={"HOME": str(tmp_path)})
    assert config.root_url == "s3://team-archive/team" and config.location == config.root_url
    local = load_config(root=tmp_path / "root", env={"HOME": str(tmp_path)})
    assert local.root_url == "" and local.location == str(tmp_path / "root")


def test_an_archive_that_cannot_be_read_is_said_in_one_line(run_asz, tmp_path: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    config = tmp_path / "asz.toml"
    config.write_text(f'[archive]\nendpoint = "http://127.0.0.1:{port}"\nattempts = 2\n')
    env = {"AWS_ACCESS_KEY_ID": "k", "AWS_SECRET_ACCESS_KEY": "s", "AWS_REGION": "us-east-1"}
    for command in (("sessions",), ("verify",), ("view", "1f1d87f0")):
        done = run_asz(*command, "--root", "s3://team-archive/x", "--config", str(config), env=env)
        assert done.returncode == 2, done.stderr
        said = done.stderr.decode()
        assert said.startswith("asz: cannot read the archive s3://team-archive/x: ")
        assert "Traceback" not in said and said.count("\n") == 1


def test_one_push_and_one_export_from_a_root_at_a_time(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir(mode=0o700)
    with push_lock(root):
        with pytest.raises(PushBusy, match="another push"), push_lock(root):
            pass
        with (
            export_lock(root),  # a lock of its own: an export may run beside a push
            pytest.raises(ExportBusy, match="another export"),
            export_lock(root),
        ):
            pass
    with push_lock(root):  # let go when its holder was done
        pass
    assert (root / "_state").stat().st_mode & 0o777 == 0o700


def test_what_is_read_ahead_and_never_asked_for_is_let_go() -> None:
    ahead: ReadAhead[int, int] = ReadAhead()
    calls: list[int] = []

    def call(key: int) -> int:
        calls.append(key)
        return key * 2

    for key in range(5 * KEPT):
        ahead.start(key, partial(call, key))
    assert len(ahead) == KEPT  # a server that reads ahead for ever keeps a bounded few
    newest = 5 * KEPT - 1
    assert ahead.take(newest, partial(call, -1)) == newest * 2
    assert ahead.take(0, partial(call, 0)) == 0  # let go: asked again, of the bucket


def test_the_push_record_remembers_the_extents_it_created_and_took_back(tmp_path: Path) -> None:
    """An extent known to be in the bucket is not tried again by the next push; one taken
    back is no longer known, and a record started afresh knows none."""
    record = PushRecord.for_root(tmp_path, "s3://b/p", "http://s3")
    record.start("_archive/roots/x.json")
    kept, taken = "s/extent-00000006", "t/extent-00000004"
    for path in (kept, taken):
        record.sending(path)
        record.extended(path)
    record.unextended(taken)
    again = PushRecord.for_root(tmp_path, "s3://b/p", "http://s3")
    assert not again.rebuilt
    assert again.extents == {kept} and again.tried == {taken}
    again.start("_archive/roots/y.json")
    assert PushRecord.for_root(tmp_path, "s3://b/p", "http://s3").extents == set()
