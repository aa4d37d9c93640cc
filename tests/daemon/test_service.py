"""``asz collect`` as a service: the real process on temporary directories, watched from outside.

The settle queue, the pass schedule and the watcher are also tested on their own, with the
time passed in or with real inotify events, so a failure names the part that broke. The
harness (``Claude``, ``running_service``) is in ``support``, shared with the metrics and
notify tests.
"""

from __future__ import annotations

import logging
import shutil
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.claude_dir import Claude, request_body, response_body
from support.cli import asz_executable
from support.service import FAST, WAIT, A, B, child_env, run_asz, running_service, wait_until
from watchdog.observers import Observer

from asz.daemon.settle import (
    UNREADABLE_MARGIN,
    BodyCheck,
    Kind,
    Readiness,
    SettleQueue,
    SourcePaths,
    check_body,
)
from asz.daemon.watcher import EventKind, Target, Watcher, WatchEvent
from asz.daemon.worker import CHANGES, FIRST_SCAN, MIN_RESCAN_GAP, RESCAN, PassSchedule

# -- the service, from outside ---------------------------------------------------------------


def verify(tmp: Path, claude: Path, root: Path) -> dict[str, Any]:
    result = run_asz(tmp, claude, "verify", "--root", str(root), "--json")
    report = orjson.loads(result.stdout)
    assert result.returncode == 0, report["problems"][:5]
    return report


def assert_one_pass_lands_the_rest(
    tmp: Path, claude: Path, root: Path, landed: int, total: int
) -> None:
    """After a stopped service, one ``collect --once`` lands exactly what it had not."""
    rest = run_asz(tmp, claude, "collect", "--once", "--json", "--root", str(root))
    assert rest.returncode == 0
    assert orjson.loads(rest.stdout)["bodies_landed"] == total - landed
    assert verify(tmp, claude, root)["bodies"] == total


def landed_body(tmp: Path, claude: Path, root: Path, session: str, record: str) -> bytes:
    result = run_asz(tmp, claude, "body", "--root", str(root), session, record)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def claude(tmp_path: Path) -> Claude:
    return Claude(tmp_path / "claude")


# -- the settle queue ------------------------------------------------------------------------


def test_a_file_is_due_once_quiet_and_every_write_restarts_the_wait() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    queue.changed("/b/x.request.json", Kind.BODY, now=0.0)
    queue.changed("/b/x.request.json", Kind.BODY, now=0.8)
    assert queue.next_deadline() == pytest.approx(1.8)
    assert queue.take_due(1.7) == (0, [])
    assert queue.take_due(1.8) == (0, ["/b/x.request.json"])
    assert queue.next_deadline() is None, "a body being checked is not due again"


def test_a_body_that_parses_is_taken_and_one_that_does_not_waits_for_the_unreadable_time() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    for name in ("good", "half"):
        queue.changed(name, Kind.BODY, now=0.0)
    assert queue.take_due(1.0) == (0, ["good", "half"])
    assert queue.judge("good", BodyCheck(Readiness.TAKE), checked_at=1.0)
    assert not queue.judge("half", BodyCheck(Readiness.WAIT, age=1.0), checked_at=1.0)
    assert len(queue) == 1
    due = queue.next_deadline()
    assert due == pytest.approx(1.0 + 119.0 + UNREADABLE_MARGIN)
    assert queue.take_due(due) == (1, []), "at the unreadable time it is taken for a pass to count"
    assert len(queue) == 0


def test_a_write_during_a_check_makes_the_check_stale() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    queue.changed("x", Kind.BODY, now=0.0)
    assert queue.take_due(1.0) == (0, ["x"])
    queue.changed("x", Kind.BODY, now=1.2)
    assert not queue.judge("x", BodyCheck(Readiness.TAKE), checked_at=1.0)
    assert queue.take_due(2.2) == (0, ["x"]), "the newer write gets its own check"
    assert queue.judge("x", BodyCheck(Readiness.TAKE), checked_at=2.2)


def test_a_parked_body_that_changes_again_is_checked_again() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    queue.changed("x", Kind.BODY, now=0.0)
    queue.take_due(1.0)
    queue.judge("x", BodyCheck(Readiness.WAIT, age=1.0), checked_at=1.0)
    queue.changed("x", Kind.BODY, now=5.0)
    assert queue.take_due(6.0) == (0, ["x"])
    assert queue.judge("x", BodyCheck(Readiness.TAKE), checked_at=6.0)


def test_a_body_already_old_enough_to_be_unreadable_is_taken_at_once() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    queue.changed("old", Kind.BODY, now=0.0)
    queue.take_due(1.0)
    assert queue.judge("old", BodyCheck(Readiness.WAIT, age=500.0), checked_at=1.0)


def test_a_vanished_body_is_dropped() -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=10.0)
    queue.changed("x", Kind.BODY, now=0.0)
    queue.take_due(1.0)
    assert not queue.judge("x", BodyCheck(Readiness.GONE), checked_at=1.0)
    queue.changed("y", Kind.LINES, now=0.0)
    queue.forget("y")
    assert len(queue) == 0 and queue.next_deadline() is None


@given(st.lists(st.floats(min_value=0.0, max_value=0.9), min_size=1, max_size=60))
def test_a_transcript_that_never_goes_quiet_is_taken_by_max_wait(gaps: list[float]) -> None:
    queue = SettleQueue(settle_seconds=1.0, unreadable_after=120.0, max_wait=5.0)
    now = 0.0
    opened: float | None = None
    for gap in gaps:
        now += gap
        taken, _ = queue.take_due(now)
        if taken:
            assert opened is not None
            # Looked at no more than a gap (0.9) after it fell due.
            assert now - opened <= 5.0 + 0.9
            opened = None
        queue.changed("t.jsonl", Kind.LINES, now)
        opened = now if opened is None else opened
        deadline = queue.next_deadline()
        assert deadline is not None
        assert deadline <= min(now + 1.0, opened + 5.0)


def test_check_body_reads_real_files(tmp_path: Path) -> None:
    complete = tmp_path / "a.request.json"
    complete.write_bytes(request_body(A, "x"))
    assert check_body(complete).readiness is Readiness.TAKE
    half = tmp_path / "b.request.json"
    half.write_bytes(request_body(A, "x")[:100])
    check = check_body(half)
    assert check.readiness is Readiness.WAIT and 0 <= check.age < 60
    bad_utf8 = tmp_path / "c.response.json"
    bad_utf8.write_bytes(b'{"id":"msg_1","text":"\xff\xfe"}')
    assert check_body(bad_utf8).readiness is Readiness.TAKE, "invalid UTF-8 in a string is complete"
    assert check_body(tmp_path / "gone.request.json").readiness is Readiness.GONE


def test_source_paths_tell_bodies_and_transcripts_from_everything_else(tmp_path: Path) -> None:
    paths = SourcePaths.resolve(
        [tmp_path / "projects", tmp_path / "two" / "projects"],
        [tmp_path / "bodies", tmp_path / "two" / "bodies"],
    )
    bodies, projects = str(tmp_path / "bodies"), str(tmp_path / "projects")
    assert paths.kind_of(f"{tmp_path}/two/bodies/{A}.request.json") is Kind.BODY
    assert paths.kind_of(f"{tmp_path}/two/projects/-p/{A}.jsonl") is Kind.LINES
    assert paths.kind_of(f"{tmp_path}/two/{A}.request.json") is None
    assert paths.kind_of(f"{bodies}/{A}.request.json") is Kind.BODY
    assert paths.kind_of(f"{bodies}/req_01.response.json") is Kind.BODY
    assert paths.kind_of(f"{bodies}/index.jsonl") is Kind.LINES
    assert paths.kind_of(f"{bodies}/notes.txt") is None
    assert paths.kind_of(f"{bodies}/sub/x.request.json") is None
    assert paths.kind_of(f"{projects}/-p/{A}.jsonl") is Kind.LINES
    assert paths.kind_of(f"{projects}/-p/{A}/subagents/agent-a1.jsonl") is Kind.LINES
    assert paths.kind_of(f"{projects}/-p/{A}/subagents/agent-a1.meta.json") is None
    assert paths.kind_of(f"{projects}x/-p/{A}.jsonl") is None


# -- the pass schedule -----------------------------------------------------------------------


def test_the_first_pass_is_at_once_then_batches_wait_for_the_window() -> None:
    schedule = PassSchedule(batch_window=10.0, rescan_interval=60.0, now=100.0)
    assert schedule.due_at() == 100.0
    assert schedule.start(100.0) == FIRST_SCAN
    assert schedule.due_at() == 160.0
    schedule.item_ready(105.0)
    schedule.item_ready(108.0)
    assert schedule.due_at() == 115.0, "the window runs from the first item"
    assert schedule.start(115.0) == CHANGES
    assert not schedule.pending
    assert schedule.due_at() == 160.0, "a pass for changes is no scan: the rescan clock runs on"
    assert schedule.start(160.0) == RESCAN
    assert schedule.due_at() == 220.0


def test_a_rescan_asked_for_right_after_a_pass_waits_a_little() -> None:
    schedule = PassSchedule(batch_window=0.0, rescan_interval=60.0, now=0.0)
    schedule.start(0.0)
    schedule.rescan_soon(0.2)
    assert schedule.due_at() == MIN_RESCAN_GAP
    schedule.rescan_soon(30.0)
    assert schedule.due_at() == MIN_RESCAN_GAP


@settings(max_examples=200)
@given(
    st.floats(min_value=0.0, max_value=30.0),
    st.floats(min_value=0.5, max_value=600.0),
    st.lists(
        st.tuples(st.sampled_from(["item", "rescan", "pass"]), st.floats(0.0, 50.0)), max_size=40
    ),
)
def test_no_settled_file_waits_longer_than_the_window_and_no_gap_exceeds_the_rescan(
    window: float, rescan: float, steps: list[tuple[str, float]]
) -> None:
    schedule = PassSchedule(batch_window=window, rescan_interval=rescan, now=0.0)
    now = 0.0
    schedule.start(now)
    last_start = last_scan = now
    opened: float | None = None
    for action, gap in steps:
        now += gap
        # Whatever was due by now has run: a real worker starts a pass as soon as it is due.
        if schedule.due_at() <= now:
            due = schedule.due_at()
            if opened is not None:
                assert due <= opened + window + 1e-9
            assert due <= last_scan + rescan + 1e-9
            last_start, opened = max(due, last_start), None
            if schedule.start(last_start) != CHANGES:
                last_scan = last_start
        if action == "item":
            schedule.item_ready(now)
            opened = now if opened is None else opened
        elif action == "rescan":
            schedule.rescan_soon(now)
            assert schedule.due_at() <= max(now, last_start + MIN_RESCAN_GAP)
        else:
            if schedule.start(now) != CHANGES:
                last_scan = now
            last_start, opened = now, None


# -- the watcher, on real inotify ------------------------------------------------------------


async def events_until(
    watcher: Watcher, done: Callable[[list[WatchEvent]], bool]
) -> list[WatchEvent]:
    seen: list[WatchEvent] = []
    with anyio.fail_after(WAIT):
        while not done(seen):
            seen += await watcher.receive()
    return seen


def changed(path: Path) -> Callable[[list[WatchEvent]], bool]:
    return lambda events: any(
        event.kind is EventKind.CHANGED and event.path == str(path) for event in events
    )


async def test_the_watcher_reports_writes_and_not_reads(tmp_path: Path) -> None:
    bodies = tmp_path / "bodies"
    bodies.mkdir()
    watcher = Watcher([Target(bodies, recursive=False)])
    started = await anyio.to_thread.run_sync(watcher.start)
    try:
        assert [armed.exact for armed in started.moved] == [True]
        first, marker, second = (bodies / f"{name}.request.json" for name in "amb")
        first.write_bytes(b"{}")
        await events_until(watcher, changed(first))
        # Events come in order: once the marker's arrive, every event of the write did too.
        marker.write_bytes(b"{}")
        await events_until(watcher, changed(marker))
        first.read_bytes()
        second.write_bytes(b"{}")
        later = await events_until(watcher, changed(second))
        assert all(event.path != str(first) for event in later), "a read is not a change"
        first.unlink()
        gone = await events_until(
            watcher, lambda events: any(event.kind is EventKind.GONE for event in events)
        )
        assert [event.path for event in gone if event.kind is EventKind.GONE] == [str(first)]
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


async def test_the_watcher_follows_a_directory_that_appears_goes_and_comes_back(
    tmp_path: Path,
) -> None:
    bodies = tmp_path / "claude" / "asz" / "provider-bodies"
    watcher = Watcher([Target(bodies, recursive=False)])
    started = await anyio.to_thread.run_sync(watcher.start)

    def moved_to_target(events: list[WatchEvent]) -> bool:
        return any(
            event.kind is EventKind.MOVED and event.armed is not None and event.armed.exact
            for event in events
        )

    try:
        assert [(armed.base, armed.exact) for armed in started.moved] == [(str(tmp_path), False)]
        bodies.mkdir(parents=True)
        await events_until(watcher, moved_to_target)
        (bodies / "a.request.json").write_bytes(b"{}")
        await events_until(watcher, changed(bodies / "a.request.json"))
        shutil.rmtree(tmp_path / "claude")
        await events_until(
            watcher,
            lambda events: any(
                event.kind is EventKind.MOVED and event.armed and not event.armed.exact
                for event in events
            ),
        )
        bodies.mkdir(parents=True)
        await events_until(watcher, moved_to_target)
        (bodies / "b.request.json").write_bytes(b"{}")
        await events_until(watcher, changed(bodies / "b.request.json"))
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


async def test_two_absent_targets_sharing_a_parent_keep_it_watched_when_one_appears(
    tmp_path: Path,
) -> None:
    """Both are watched through one watch on their parent; the first to appear moves down,
    and the other must still hear of its own directory being made."""
    one, two = (tmp_path / name / "asz" / "provider-bodies" for name in ("one", "two"))
    watcher = Watcher([Target(one, recursive=False), Target(two, recursive=False)])
    started = await anyio.to_thread.run_sync(watcher.start)

    def moved_to(target: Path) -> Callable[[list[WatchEvent]], bool]:
        return lambda events: any(
            event.kind is EventKind.MOVED
            and event.armed is not None
            and event.armed.exact
            and event.armed.target.path == target
            for event in events
        )

    try:
        assert {armed.base for armed in started.moved} == {str(tmp_path)}
        two.mkdir(parents=True)
        await events_until(watcher, moved_to(two))
        one.mkdir(parents=True)
        await events_until(watcher, moved_to(one))
        (one / "a.request.json").write_bytes(b"{}")
        await events_until(watcher, changed(one / "a.request.json"))
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


class _LookCountingObserver(Observer):
    """Watchdog's own observer, counting the looks a re-arm takes at its watches, and able to
    deliver one more directory event while a look is under way, as its thread can."""

    def __init__(self) -> None:
        super().__init__()
        self.looks = 0
        self.during_next_look: Callable[[], None] | None = None

    @property
    def emitters(self) -> Any:
        self.looks += 1
        hook, self.during_next_look = self.during_next_look, None
        if hook is not None:
            hook()
        return super().emitters


async def test_a_directory_event_during_a_rearm_that_moved_nothing_is_not_lost(
    tmp_path: Path,
) -> None:
    """The event that woke the loop for one re-arm must not swallow the wake of a second
    directory event arriving while that re-arm runs: the second may be the one that matters."""
    observer = _LookCountingObserver()
    parent = tmp_path / "claude"
    watcher = Watcher([Target(parent / "bodies", recursive=False)], observer=observer)
    await anyio.to_thread.run_sync(watcher.start)
    try:
        looks_at_start = observer.looks
        observer.during_next_look = lambda: watcher.directory_event(str(parent), "")
        async with anyio.create_task_group() as receiving:
            receiving.start_soon(watcher.receive)
            watcher.directory_event(str(parent), "")
            with anyio.fail_after(WAIT):
                while observer.looks < looks_at_start + 2:
                    await anyio.sleep(0.01)
            receiving.cancel_scope.cancel()
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


async def test_the_watcher_sees_new_project_directories_below_a_recursive_target(
    tmp_path: Path,
) -> None:
    projects = tmp_path / "projects"
    projects.mkdir()
    watcher = Watcher([Target(projects, recursive=True)])
    await anyio.to_thread.run_sync(watcher.start)
    try:
        transcript = projects / "-home-u-new" / A / "subagents" / "agent-a1.jsonl"
        transcript.parent.mkdir(parents=True)
        transcript.write_bytes(b"{}\n")
        await events_until(watcher, changed(transcript))
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


async def test_trouble_watchdog_reports_becomes_a_lost_event(tmp_path: Path) -> None:
    watcher = Watcher([Target(tmp_path, recursive=False)])
    await anyio.to_thread.run_sync(watcher.start)
    try:
        # The words watchdog's inotify observer logs when the kernel queue overflowed.
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        events = await events_until(watcher, bool)
        assert [(event.kind, event.overflow) for event in events] == [(EventKind.LOST, True)]
    finally:
        await anyio.to_thread.run_sync(watcher.stop)


# -- the service end to end ------------------------------------------------------------------


@pytest.mark.slow
def test_bodies_and_transcripts_written_while_it_runs_land(tmp_path: Path, claude: Claude) -> None:
    root = tmp_path / "root"
    # Both directories exist from the start, so no watch moves (which would rescan).
    claude.bodies.mkdir(parents=True)
    (claude.path / "projects").mkdir()
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        claude.start_transcript(A)
        first = request_body(A, "one")
        claude.body("r1.request.json", first)
        claude.body("req_1.response.json", response_body("msg_1"))
        claude.assistant_line(A, "msg_1")
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 2)
        assert svc.metric("asz_transcript_lines_landed_total") == 2
        assert svc.metric("asz_rescans_total") == 0, "events did it, not a rescan"
        assert svc.stop() == 0
    assert landed_body(tmp_path, claude.path, root, A, "r1.request") == first
    assert verify(tmp_path, claude.path, root)["bodies"] == 2


@pytest.mark.slow
def test_a_half_written_body_lands_once_complete(tmp_path: Path, claude: Claude) -> None:
    root = tmp_path / "root"
    claude.start_transcript(A)
    whole = request_body(A, "half then whole")
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        claude.body("half.request.json", whole[: len(whole) // 2])
        claude.body("other.request.json", request_body(A, "other"))
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 1)
        assert svc.metric("asz_bodies_unreadable") == 0, "a fresh half body is not unreadable"
        with (claude.bodies / "half.request.json").open("ab") as handle:
            handle.write(whole[len(whole) // 2 :])
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 2)
        assert svc.stop() == 0
    assert landed_body(tmp_path, claude.path, root, A, "half.request") == whole


@pytest.mark.slow
def test_a_landed_body_rewritten_in_place_is_a_conflict_without_a_rescan(
    tmp_path: Path, claude: Claude
) -> None:
    """A pass for changes looks only at the files the watcher named: an edit in place, which
    leaves the directory's own mtime alone, must be among them."""
    root = tmp_path / "root"
    claude.start_transcript(A)
    original = request_body(A, "original")
    claude.body("r1.request.json", original)
    claude.body("r2.request.json", request_body(A, "other"))
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        assert svc.metric("asz_bodies_landed_total") == 2
        (claude.bodies / "r1.request.json").write_bytes(request_body(A, "edited"))
        svc.wait_for_metric("asz_conflicts", lambda value: value == 1)
        (claude.bodies / "r1.request.json").write_bytes(original)
        svc.wait_for_metric("asz_conflicts", lambda value: value == 0)
        assert svc.metric("asz_rescans_total") == 0, "events did it, not a rescan"
        assert svc.stop() == 0
    assert landed_body(tmp_path, claude.path, root, A, "r1.request") == original


@pytest.mark.slow
def test_a_burst_of_3000_files_all_lands(tmp_path: Path, claude: Claude) -> None:
    root = tmp_path / "root"
    for session in (A, B):
        claude.start_transcript(session, project=f"-home-u-{session[:4]}")
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        for number in range(3000):
            claude.body(
                f"r{number:05d}.request.json", request_body((A, B)[number % 2], f"{number}")
            )
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 3000)
        assert svc.metric("asz_errors_total{kind=pass}") == 0
        assert svc.stop() == 0
    assert verify(tmp_path, claude.path, root)["bodies"] == 3000


@pytest.mark.slow
def test_a_response_waiting_for_its_transcript_lands_when_the_line_arrives(
    tmp_path: Path, claude: Claude
) -> None:
    root = tmp_path / "root"
    claude.start_transcript(A)
    claude.body("r1.request.json", request_body(A, "one"))
    answer = response_body("msg_late")
    claude.body("req_late.response.json", answer)
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        assert svc.metric("asz_bodies_waiting") == 1
        assert svc.metric("asz_bodies_landed_total") == 1
        claude.assistant_line(A, "msg_late")
        svc.wait_for_metric("asz_bodies_waiting", lambda value: value == 0)
        assert svc.metric("asz_bodies_landed_total") == 2
        assert svc.metric("asz_rescans_total") == 0
        assert svc.stop() == 0
    assert landed_body(tmp_path, claude.path, root, A, "req_late.response") == answer


@pytest.mark.slow
def test_sigterm_in_a_burst_exits_0_and_leaves_a_root_that_verifies(
    tmp_path: Path, claude: Claude
) -> None:
    root = tmp_path / "root"
    claude.start_transcript(A)
    total = 1500
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        for number in range(total):
            claude.body(f"r{number:05d}.request.json", request_body(A, f"{number}"))
            if number == total // 3:
                svc.wait_for_metric("asz_bodies_landed_total", lambda value: value > 0)
                svc.process.send_signal(signal.SIGTERM)
        assert svc.process.wait(timeout=WAIT) == 0
        assert svc.logged("stopping") and svc.logged("stopped")
    landed_then = verify(tmp_path, claude.path, root)["bodies"]
    assert 0 < landed_then <= total
    assert_one_pass_lands_the_rest(tmp_path, claude.path, root, landed_then, total)


@pytest.mark.slow
def test_a_second_signal_abandons_the_pass_and_leaves_no_partial_landed_file(
    tmp_path: Path, claude: Claude
) -> None:
    root = tmp_path / "root"
    claude.start_transcript(A)
    total = 3000
    for number in range(total):
        claude.body(f"r{number:05d}.request.json", request_body(A, f"{number}"))
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_for_log("lock_held")
        # Into the first pass, which lands the whole backlog: its first body file is there.
        wait_until(lambda: any(root.glob("*/provider_body/*.asz")), "the first body landed")
        svc.process.send_signal(signal.SIGTERM)
        svc.wait_for_log("stopping")
        svc.process.send_signal(signal.SIGTERM)
        assert svc.process.wait(timeout=WAIT) in (0, -signal.SIGTERM)
    landed_then = verify(tmp_path, claude.path, root)["bodies"]
    assert_one_pass_lands_the_rest(tmp_path, claude.path, root, landed_then, total)


@pytest.mark.slow
def test_a_second_service_on_the_same_root_waits_then_takes_over(
    tmp_path: Path, claude: Claude
) -> None:
    root = tmp_path / "root"
    claude.start_transcript(A)
    flags = (*FAST, "--rescan-interval", "600")
    with (
        running_service(tmp_path, claude.path, root, *flags) as first,
        running_service(tmp_path, claude.path, root, *flags) as second,
    ):
        first.wait_ready()
        second.wait_for_log("lock_busy")
        for number in range(200):
            claude.body(f"a{number:04d}.request.json", request_body(A, f"a{number}"))
        first.wait_for_metric("asz_bodies_landed_total", lambda value: value == 200)
        assert second.get("/readyz")[0] == 503
        assert second.get("/healthz")[0] == 200, "waiting for the lock is healthy"
        assert first.stop() == 0
        second.wait_ready()
        for number in range(200):
            claude.body(f"b{number:04d}.request.json", request_body(A, f"b{number}"))
        second.wait_for_metric("asz_bodies_landed_total", lambda value: value == 200)
        assert second.stop() == 0
    assert verify(tmp_path, claude.path, root)["bodies"] == 400


@pytest.mark.slow
def test_a_claude_directory_made_after_start_is_watched(tmp_path: Path, claude: Claude) -> None:
    root = tmp_path / "root"
    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        claude.start_transcript(A)
        body = request_body(A, "late directory")
        claude.body("r1.request.json", body)
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 1)
        watched = {line["watched"] for line in svc.logged("watching") if line["exact"]}
        assert str(claude.bodies) in watched
        assert svc.stop() == 0
    assert landed_body(tmp_path, claude.path, root, A, "r1.request") == body


def test_a_listen_address_that_cannot_be_used_exits_1(tmp_path: Path, claude: Claude) -> None:
    result = subprocess.run(
        [*asz_executable(), "collect", "--root", str(tmp_path / "root"), "--listen", "nonsense"],
        env=child_env(tmp_path, claude.path),
        capture_output=True,
        timeout=WAIT,
        check=False,
    )
    assert result.returncode == 1
    assert orjson.loads(result.stdout.splitlines()[0])["event"] == "cannot_listen"
