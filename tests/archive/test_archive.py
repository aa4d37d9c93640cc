"""``asz push`` and ``--root s3://...`` against a real S3-protocol server on the loopback.

A synthetic capture is landed by the real collector, pushed by the real ``asz push`` through a
counting proxy (``s3server``), and read back by every reading command over the bucket, which
must say exactly what it says over the local root.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support.api_example import run_example
from support.archive_roots import Machine, bucket_prefix, is_extent, landed_keys, pushed_files
from support.harness import wait_for
from support.s3server import BUCKET, S3Server, another_server, proxied
from support.serving import serving

from asz.archive import open_root
from asz.archive.record import PushRecord
from asz.store import StoreError, extent_path, open_store
from asz.synth import SynthOptions

pytestmark = pytest.mark.slow
"""Each test pushes a landed capture to moto and reads it back: most take over 5 s, and the
module's landed capture takes over 5 s before the first starts."""


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Machine, dict]:
    """One machine with a capture landed (shared: the tests copy nothing into it)."""
    machine = Machine(tmp_path_factory.mktemp("laptop"))
    expected = machine.land(SynthOptions(sessions=2, index=True))
    return machine, expected


@pytest.fixture
def prefix(tmp_path: Path) -> str:
    return bucket_prefix(tmp_path)


def test_push_sends_every_landed_file_once_and_nothing_derived(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        done = machine.push(config, "--json")
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        want = landed_keys(machine.store(), prefix)
        assert counts["files"] == len(want) and counts["complete"]
        assert counts["bytes"] == sum(len(data) for data in want.values())
        again = machine.push(config, "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["files"] == 0
        puts = proxy.puts()
    held = s3.objects(prefix + "/")
    files = pushed_files(held)
    assert files == want  # every landed file, byte for byte, under the root's own path
    claims = [key for key in held if "/_archive/claims/" in key]
    assert len(claims) == len(machine.store().sessions())
    # Each object was sent once, the second push sent none, nothing derived went.
    assert set(puts) == set(held) and set(puts.values()) == {1}
    assert proxy.puts(412) == {}
    for key in held:
        assert not key.endswith((".json", "/seq")) or "/_archive/" in key, key
        assert "/_state/" not in key


def test_dry_run_lists_what_would_go_and_sends_nothing(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        done = machine.push(config, "--dry-run")
        assert done.returncode == 0, done.stderr
        assert proxy.seen == []
    listed = done.stdout.decode()
    want = landed_keys(machine.store(), prefix)
    for key in want:
        assert key.split("/", 1)[1] in listed
    sessions = machine.store().sessions()
    for session in sessions:  # the claims are created too: listed with the files
        assert f"_archive/claims/{session}.json" in listed
    assert "_archive/roots/<new id>.json" in listed  # and the new record's marker
    for session in sessions:  # and each session's extent, which goes before its files
        store = machine.store().session(session)
        assert extent_path(session, store.landed()[-1].seq) in listed
    objects = len(want) + 2 * len(sessions) + 1
    assert f"would push {len(want)} landed files and create {objects} objects" in listed
    assert s3.objects(prefix + "/") == {}
    # What the push then creates is what was listed, one for one.
    with proxied(s3) as proxy:
        assert machine.push(machine.configure(proxy.endpoint, prefix)).returncode == 0
        assert len(proxy.puts(200)) == objects


def _same(machine: Machine, config: Path, prefix: str, *args: str) -> bytes:
    """The command over the bucket says exactly what it says over the local root."""
    local = machine.read_local(*args)
    remote = machine.read(config, prefix, *args)
    assert local.returncode == 0, local.stderr
    assert remote.returncode == 0, remote.stderr
    assert remote.stdout == local.stdout, args
    return remote.stdout


def test_every_reading_command_reads_the_bucket_as_the_root(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str, tmp_path: Path
) -> None:
    machine, expected = landed
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    sessions = json.loads(_same(machine, config, prefix, "sessions", "--json"))
    assert len(sessions) == 2
    _same(machine, config, prefix, "verify", "--json")
    _same(machine, config, prefix, "cache", "--json")
    _same(machine, config, prefix, "sessions")  # the words too, a second time from the cache
    for session in sessions:
        sid = session["id"]
        _same(machine, config, prefix, "view", sid, "--json")
        _same(machine, config, prefix, "cache", sid[:8], "--json")
    # body: the exact bytes Claude Code wrote
    bodies = [b for b in expected["bodies"] if b["session"] == sessions[0]["id"]][:3]
    assert bodies
    for body in bodies:
        source = machine.claude / "asz" / "provider-bodies" / f"{body['id']}.json"
        got = machine.read(config, prefix, "body", sessions[0]["id"], body["id"])
        assert got.returncode == 0, got.stderr
        assert got.stdout == source.read_bytes()
    # restore: the transcripts back, byte for byte
    sid = sessions[1]["id"]
    back = machine.read(config, prefix, "restore", sid, "--to", str(tmp_path / "back"))
    assert back.returncode == 0, back.stderr
    restored = sorted(p for p in (tmp_path / "back").rglob("*") if p.is_file())
    assert restored
    for path in restored:
        source = machine.claude / "projects" / path.relative_to(tmp_path / "back")
        assert path.read_bytes() == source.read_bytes()


def test_reading_the_bucket_writes_nothing_to_it(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    before = s3.objects(prefix + "/")
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        assert machine.read(config, prefix, "sessions").returncode == 0
        assert machine.read(config, prefix, "cache").returncode == 0
        assert machine.read(config, prefix, "verify").returncode == 0
        assert {s.method for s in proxy.seen} <= {"GET", "HEAD"}
    assert s3.objects(prefix + "/") == before


def test_verify_fails_naming_an_object_changed_in_the_bucket(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    assert machine.read(config, prefix, "verify").returncode == 0  # and cached locally
    key = next(k for k in s3.objects(prefix + "/") if "/provider_body/" in k)
    data = bytearray(s3.objects(key)[key])
    data[len(data) // 2] ^= 0xFF
    s3.client().put_object(Bucket=BUCKET, Key=key, Body=bytes(data))
    done = machine.read(config, prefix, "verify")
    assert done.returncode == 1
    assert f"s3://{BUCKET}/{key}" in done.stderr.decode()


def test_an_object_with_other_bytes_is_a_named_conflict_left_as_it_is(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    want = landed_keys(machine.store(), prefix)
    taken = sorted(want)[0]
    s3.client().put_object(Bucket=BUCKET, Key=taken, Body=b"someone else's bytes")
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        done = machine.push(config, "--json")
        assert done.returncode == 1
        counts = json.loads(done.stdout)
        assert counts["conflicts"] == [taken] and not counts["complete"]
        assert counts["files"] == len(want) - 1 and counts["waiting_files"] == 1
        assert f"conflict: {taken}" in done.stderr.decode()
        # Every pass counts it while it stays, by looking: its bytes are not sent again.
        again = machine.push(config, "--json")
        assert again.returncode == 1
        assert json.loads(again.stdout)["conflicts"] == [taken]
        assert proxy.puts(412) == {taken: 1} and proxy.puts(200)[taken] == 0
    held = s3.objects(prefix + "/")
    assert held[taken] == b"someone else's bytes"
    assert all(held[key] == data for key, data in want.items() if key != taken)


def test_prune_leaves_each_session_its_highest_extent_only(
    s3: S3Server, prefix: str, tmp_path: Path
) -> None:
    """Each push that sends a session new files creates a higher extent; a push with nothing
    new creates none; ``--prune`` removes all but the highest, once it is ``prune_after``
    old, and the archive still reads whole."""
    machine = Machine(tmp_path / "m")  # its own: it lands more
    expected = machine.land(SynthOptions(sessions=1))
    session = expected["sessions"][0]["id"]
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    machine.say(session, "one more prompt")
    assert machine.push(config).returncode == 0
    with proxied(s3) as proxy:
        again = machine.push(machine.configure(proxy.endpoint, prefix), "--json")
        assert json.loads(again.stdout)["files"] == 0 and proxy.sent() == {}
    highest = extent_path(session, machine.store().session(session).landed()[-1].seq)
    extents = [key for key in s3.objects(f"{prefix}/{session}/") if is_extent(key)]
    assert len(extents) == 2 and max(extents) == f"{prefix}/{highest}"
    later = machine.configure(s3.endpoint, prefix, prune_after=3600.0)
    waiting = json.loads(machine.push(later, "--prune", "--json").stdout)["pruned"]
    assert waiting["objects"] == 0 and waiting["waiting"] == 1
    now = machine.configure(s3.endpoint, prefix, prune_after=0.0)  # the one file, rewritten
    done = machine.push(now, "--prune", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["pruned"]["objects"] == 1, done.stdout
    left = [key for key in s3.objects(f"{prefix}/{session}/") if is_extent(key)]
    assert left == [f"{prefix}/{highest}"]
    assert machine.read(now, prefix, "verify").returncode == 0


def test_a_lost_record_is_rebuilt_by_listing_and_nothing_is_sent_again(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        assert machine.push(config).returncode == 0
        sent = proxy.sent()
        (machine.root / "_state" / "archive-pushed.jsonl").unlink()
        done = machine.push(config, "--json")
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        assert counts["rebuilt"] and counts["files"] == 0
        assert counts["already_there"] == len(landed_keys(machine.store(), prefix))
        assert proxy.sent() == sent
        again = machine.push(config, "--json")
        assert json.loads(again.stdout)["already_there"] == 0


def test_the_session_filter_keeps_a_session_on_the_machine(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    store = machine.store()
    project = store.session(store.sessions()[0]).summary().project_dir
    config = machine.configure(s3.endpoint, prefix)
    with config.open("a") as handle:
        handle.write(f'[sessions]\nexclude = ["{project}"]\n')
    dry = machine.push(config, "--dry-run")
    assert dry.returncode == 0, dry.stderr
    assert f"left out: {store.sessions()[0]}: {project}: matched by sessions.exclude" in (
        dry.stdout.decode()
    )
    done = machine.push(config, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["sessions_excluded"] == 1
    held = s3.objects(prefix + "/")
    assert not any(store.sessions()[0] in key for key in held)
    assert any(store.sessions()[1] in key for key in held)


def test_push_refuses_an_archive_root_and_a_missing_archive(landed: tuple[Machine, dict]) -> None:
    machine, _ = landed
    done = machine.asz("push", "--root", str(machine.root))
    assert done.returncode == 2 and b"[archive]" in done.stderr
    done = machine.asz("collect", "--once", "--root", f"s3://{BUCKET}/x")
    assert done.returncode == 2 and b"not on s3://" in done.stderr


def test_the_record_remembers_what_went(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, _ = landed
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    record = PushRecord.for_root(machine.root, f"s3://{BUCKET}/{prefix}", s3.endpoint)
    assert not record.rebuilt
    assert {f"{prefix}/{path}" for path in record.done} == set(landed_keys(machine.store(), prefix))


def test_the_api_example_reads_the_bucket_as_it_reads_the_root(
    s3: S3Server,
    landed: tuple[Machine, dict],
    prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``open_root("s3://...")`` from the environment alone, as docs/api.md says, and
    ``open_store`` refuses the URL, since the store reaches no bucket itself."""
    machine, _ = landed
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    local = run_example(tmp_path, machine.root)
    monkeypatch.setenv("AWS_ENDPOINT_URL", s3.endpoint)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    remote = run_example(tmp_path, f"s3://{BUCKET}/{prefix}", archive=True)
    assert remote == local and len(local) == 2
    assert run_example(tmp_path, machine.root, archive=True) == local
    with pytest.raises(StoreError, match="open_root"):
        open_store(f"s3://{BUCKET}/{prefix}")


def test_a_range_of_an_object_is_a_ranged_read(
    s3: S3Server,
    landed: tuple[Machine, dict],
    prefix: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    machine, _ = landed
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    with proxied(s3) as proxy:
        assert machine.push(machine.configure(proxy.endpoint, prefix)).returncode == 0
        monkeypatch.setenv("AWS_ENDPOINT_URL", proxy.endpoint)
        store = open_root(f"s3://{BUCKET}/{prefix}")
        session = store.session(store.sessions()[0])
        name = session.landed()[0]
        whole = machine.store().backend.read(name.path, 1 << 30)

        def reads() -> int:  # GETs of objects (a listing's names the bucket alone)
            return sum(1 for s in proxy.seen if s.method == "GET" and s.key != BUCKET)

        gets = reads()
        assert store.backend.read_range(name.path, 5, 40) == whole[5:45]
        assert store.backend.read_range(name.path, len(whole) - 3, 40) == whole[-3:]
        assert reads() == gets + 2  # nothing cached yet: two ranged GETs
        with pytest.raises(OSError):
            store.backend.write_temp(name.path, b"x")  # a reader never writes to the bucket


@pytest.mark.parametrize("redact", [False, True], ids=["raw", "redacted"])
def test_push_writes_nothing_through_a_link_in_the_root(
    s3: S3Server, landed: tuple[Machine, dict], tmp_path: Path, redact: bool
) -> None:
    """Not the push record, nor the redaction key a redacting push keeps under ``_state``."""
    machine, _ = landed
    copy = Machine(tmp_path / "copy")
    shutil.copytree(machine.root, copy.root, ignore=shutil.ignore_patterns("_state"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (copy.root / "_state").symlink_to(elsewhere)
    done = copy.push(copy.configure(s3.endpoint, "linked", redact=redact))
    assert done.returncode == 1 and b"symbolic link" in done.stderr
    assert list(elsewhere.iterdir()) == []
    assert s3.objects("linked/") == {}


def test_asz_serve_serves_the_bucket_as_the_root(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, expected = landed
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    sid = expected["sessions"][0]["id"]
    body = next(b for b in expected["bodies"] if b["session"] == sid)
    source = machine.claude / "asz" / "provider-bodies" / f"{body['id']}.json"
    remote = f"s3://{BUCKET}/{prefix}"
    home = machine.base / "home"
    with serving(remote, home, "--config", str(config), env=machine.env()) as served:
        listing = served.get("/")
        assert listing.status == 200
        assert all(session["id"] in listing.text for session in expected["sessions"])
        assert served.get(f"/sessions/{sid}").status == 200
        got = served.get(f"/sessions/{sid}/bodies/{body['id']}")
        assert got.status == 200 and got.body == source.read_bytes()


def test_a_reader_lists_each_session_once_not_each_directory(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str
) -> None:
    machine, expected = landed
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    with proxied(s3) as proxy:
        config = machine.configure(proxy.endpoint, prefix)
        assert machine.read(config, prefix, "sessions").returncode == 0  # reads into the cache
        proxy.seen.clear()
        again = machine.read(config, prefix, "sessions", "--json")
        assert again.returncode == 0, again.stderr
        # The files come from the local cache: what is left is listing, one per session
        # (its whole prefix at once) and the root's own.
        assert len(proxy.seen) <= len(expected["sessions"]) + 2, proxy.seen
        assert {seen.method for seen in proxy.seen} <= {"GET", "HEAD"}


def test_a_record_belongs_to_its_bucket_not_to_the_bucket_s_name(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str, tmp_path: Path
) -> None:
    """The archive moved to another endpoint (a bucket of the same name, empty), or the
    bucket emptied behind the record's back: the next push notices and pushes it all."""
    machine, _ = landed
    root = Machine(tmp_path / "copy")
    shutil.copytree(machine.root, root.root)
    want = landed_keys(root.store(), prefix)
    assert root.push(root.configure(s3.endpoint, prefix)).returncode == 0
    with another_server() as endpoint:
        done = root.push(root.configure(endpoint, prefix), "--json")
        assert done.returncode == 0, done.stderr
        counts = json.loads(done.stdout)
        assert counts["files"] == len(want) and counts["rebuilt"], counts
        assert (
            "no local record of what was pushed to this bucket"
            in root.push(root.configure(endpoint, prefix), "--relist").stdout.decode()
        )
    # Back at the first endpoint: the record names the other one, so it lists, sends nothing.
    with proxied(s3) as proxy:
        done = root.push(root.configure(proxy.endpoint, prefix), "--json")
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout)["already_there"] == len(want)
        assert proxy.sent() == {}
    # The bucket emptied behind the record's back (the same endpoint, the same name).
    config = root.configure(s3.endpoint, prefix)
    assert root.push(config).returncode == 0  # the record names this endpoint now
    client = s3.client()
    for key in s3.objects(prefix + "/"):
        client.delete_object(Bucket=BUCKET, Key=key)
    done = root.push(config)
    assert done.returncode == 0, done.stderr
    said = done.stdout.decode()
    assert f"pushed {len(want)} landed files" in said, said
    assert "no longer holds this root's marker" in said
    held = s3.objects(prefix + "/")
    assert pushed_files(held) == want


def test_a_copy_damaged_in_the_local_cache_is_read_again_never_blamed(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str, tmp_path: Path
) -> None:
    machine, _ = landed
    reader = Machine(tmp_path / "reader")  # its own cache
    config = machine.configure(s3.endpoint, prefix)
    assert machine.push(config).returncode == 0
    assert reader.read(config, prefix, "verify").returncode == 0  # every copy cached
    copies = sorted((reader.base / "cache").rglob("landed/*"), key=lambda p: p.stat().st_size)
    damaged = copies[-1]
    data = bytearray(damaged.read_bytes())
    data[len(data) // 3] ^= 0x01  # one bit, on this disk only
    damaged.write_bytes(bytes(data))

    def objects_read() -> list[str]:  # GETs of objects, not listings (which name the bucket)
        return [s.key for s in proxy.seen if s.method == "GET" and s.key.startswith(prefix)]

    with proxied(s3) as proxy:
        done = reader.read(machine.configure(proxy.endpoint, prefix), prefix, "verify")
        assert done.returncode == 0, done.stderr  # the object is intact: nothing is blamed
        assert len(objects_read()) == 1  # the damaged copy was read again from the bucket
        proxy.seen.clear()
        again = reader.read(machine.configure(proxy.endpoint, prefix), prefix, "verify")
        assert again.returncode == 0, again.stderr
        assert objects_read() == []  # the copy is whole again


def test_an_empty_prefix_and_a_bad_bucket_are_said_plainly(
    s3: S3Server, landed: tuple[Machine, dict], tmp_path: Path
) -> None:
    machine, _ = landed
    config = machine.configure(s3.endpoint, "nothing-here")
    done = machine.read(config, "nothing-here", "sessions")
    assert done.returncode == 2
    assert done.stderr.decode().strip() == (
        f"asz: nothing under s3://{BUCKET}/nothing-here: is the prefix right?"
    )
    # A bucket name that is not one, given with --root, is --root's, not the config file's.
    bad = machine.asz("sessions", "--root", "s3://Not_A_Bucket/x", "--config", str(config))
    assert bad.returncode == 2
    said = bad.stderr.decode()
    assert said.startswith("asz: --root: s3://Not_A_Bucket/x") and str(config) not in said


def test_a_reader_asks_the_bucket_several_things_at_once(
    s3: S3Server, prefix: str, tmp_path: Path
) -> None:
    """With latency between it and the bucket, a reader does not wait for one answer before
    asking the next: a session's files, and the sessions' listings, are asked for together.
    (One at a time, an answer's sending and the next request may still overlap at the proxy:
    two at once.)"""
    machine = Machine(tmp_path / "laptop")
    machine.land(SynthOptions(seed=12, sessions=6))
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    with proxied(s3, lambda method, key, n: "slow") as proxy:
        proxy.delay = 0.05  # 50 ms to every answer
        config = machine.configure(proxy.endpoint, prefix)
        reader = Machine(tmp_path / "reader")
        assert reader.read(config, prefix, "sessions").returncode == 0
        assert proxy.most_at_once > 4, proxy.most_at_once  # cold: files read ahead
        proxy.most_at_once = 0
        assert reader.read(config, prefix, "sessions").returncode == 0
        assert proxy.most_at_once > 4, proxy.most_at_once  # warm: listings read ahead


def test_a_second_asz_serve_over_a_bucket_answers_its_list_before_listing_a_session(
    s3: S3Server, prefix: str, tmp_path: Path
) -> None:
    """A second start answers its first index page from the session list it kept in the
    local cache, before any session is listed (here every listing after the first is refused,
    so a list made afresh could not be answered), and makes the list afresh behind it: what
    was pushed since shows up without another start."""
    machine = Machine(tmp_path / "m")  # its own: it lands more
    expected = machine.land(SynthOptions(sessions=2))
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    reader = Machine(tmp_path / "reader")
    reader.base.mkdir()
    remote = f"s3://{BUCKET}/{prefix}"
    home = reader.base / "home"
    direct = reader.configure(s3.endpoint, prefix)
    with serving(remote, home, "--config", str(direct), env=reader.env()) as served:
        first = served.get("/")
        assert first.status == 200
    machine.say(expected["sessions"][0]["id"], "a prompt about zebras")
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    listings = [0]

    def refused(method: str, key: str, n: int) -> str:
        """A listing is a GET of the bucket itself (an object's key holds its prefix)."""
        if method != "GET" or "/" in key:
            return ""
        listings[0] += 1
        return "error:AccessDenied:403" if listings[0] > 1 else ""

    with proxied(s3, refused) as proxy:
        config = reader.configure(proxy.endpoint, prefix)
        with serving(remote, home, "--config", str(config), env=reader.env()) as served:
            second = served.get("/")
            assert second.status == 200 and second.text == first.text
    with proxied(s3) as proxy:
        config = reader.configure(proxy.endpoint, prefix)
        with serving(remote, home, "--config", str(config), env=reader.env()) as served:
            assert served.get("/").text == first.text  # kept: the refused one kept nothing
            found = "&ldquo;zebras&rdquo; (1)"
            wait_for(lambda: found in served.get("/?q=zebras").text, what="the list made afresh")
    with serving(remote, home, "--config", str(config), env=reader.env()) as served:
        assert found in served.get("/?q=zebras").text  # and kept for the next start


def test_asz_serve_keeps_what_it_derives_of_a_bucket_in_the_local_cache(
    s3: S3Server, landed: tuple[Machine, dict], prefix: str, tmp_path: Path
) -> None:
    """Its first page over a bucket builds each session's cache report; a second start
    reads them back from the local cache instead of building them all again, and the bucket
    is not written to."""
    machine, expected = landed
    assert machine.push(machine.configure(s3.endpoint, prefix)).returncode == 0
    reader = Machine(tmp_path / "reader")
    reader.base.mkdir()
    config = reader.configure(s3.endpoint, prefix)
    remote = f"s3://{BUCKET}/{prefix}"
    home = reader.base / "home"
    with serving(remote, home, "--config", str(config), env=reader.env()) as served:
        first = served.get("/")
        assert first.status == 200
    derived = (reader.base / "cache").rglob("derived/*/cache.json")
    kept = sorted(path.parent.name for path in derived)
    assert kept == sorted(session["id"] for session in expected["sessions"])
    with proxied(s3) as proxy:
        again = reader.configure(proxy.endpoint, prefix)
        with serving(remote, home, "--config", str(again), env=reader.env()) as served:
            second = served.get("/")
            assert second.status == 200 and second.text == first.text
        assert {seen.method for seen in proxy.seen} <= {"GET", "HEAD"}
