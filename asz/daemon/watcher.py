"""File-system events (inotify, FSEvents, kqueue through watchdog), delivered to the event loop.

Watchdog calls back from its own thread. The callback only puts the event on a thread-safe
queue and, if the loop has not been woken yet, writes one byte to a socket pair the loop
waits on; it never waits for the loop, so a busy loop cannot make the kernel's event queue
overflow, and the loop never waits for the watcher.

Events are hints, not truth: a pass lists the directories itself. What the watcher must get
right is to say when it may have missed something, so the service rescans: when watchdog
reports a dropped event queue or any other trouble, when a watch is lost, and when a watched
directory is replaced.

A directory that does not exist yet (the bodies directory before Claude Code's first body, the
whole Claude Code directory on a new machine) cannot be watched, so its nearest existing
parent is watched instead, for directories only, and the watch moves down as the path
appears, and back up if it is removed. Several targets (a user's several Claude Code
directories) may share such a parent, and so one watch.
"""

from __future__ import annotations

import contextlib
import enum
import logging
import os
import queue
import socket
import threading
import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio
from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver, ObservedWatch

__all__ = ["Armed", "EventKind", "Rearmed", "Target", "WatchEvent", "Watcher"]

_MAX_PLACEMENTS = 8
_DIR_EVENTS: list[type[FileSystemEvent]] = [DirCreatedEvent, DirDeletedEvent, DirMovedEvent]
# Opening and closing without a write are left out: every pass reads the sources, and those
# reads must not look like changes.
_FILE_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent,
    FileModifiedEvent,
    FileClosedEvent,
    FileMovedEvent,
    FileDeletedEvent,
    *_DIR_EVENTS,
]


@dataclass(frozen=True, slots=True)
class Target:
    """A directory to watch; ``recursive`` for the projects tree, not for the flat body dir."""

    path: Path
    recursive: bool


class EventKind(enum.Enum):
    CHANGED = "changed"
    GONE = "gone"
    LOST = "lost"
    """Events may have been missed; only a rescan can tell what changed."""
    MOVED = "moved"
    """A watch moved; what arrived before it was in place is for a rescan to find."""


@dataclass(frozen=True, slots=True)
class Armed:
    """Where a target is watched from: itself, or its nearest existing parent."""

    target: Target
    base: str
    exact: bool
    identity: tuple[int, int]
    watch: ObservedWatch


@dataclass(frozen=True, slots=True)
class WatchEvent:
    kind: EventKind
    path: str = ""
    reason: str = ""
    overflow: bool = False
    armed: Armed | None = None


@dataclass(slots=True)
class Rearmed:
    moved: list[Armed] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    """A target left unwatched until the next try; rescans still cover it."""


class _Bridge(FileSystemEventHandler):
    """Runs in watchdog's thread: turns events into WatchEvents on the watcher's queue."""

    def __init__(self, watcher: Watcher) -> None:
        self._watcher = watcher

    def dispatch(self, event: FileSystemEvent) -> None:
        put = self._watcher.put
        src = os.fsdecode(event.src_path)
        dest = os.fsdecode(event.dest_path) if event.dest_path else ""
        if event.is_directory:
            self._watcher.directory_event(src, dest)
        elif isinstance(event, FileDeletedEvent):
            put(WatchEvent(EventKind.GONE, src))
        elif isinstance(event, FileMovedEvent):
            put(WatchEvent(EventKind.GONE, src))
            put(WatchEvent(EventKind.CHANGED, dest))
        else:
            put(WatchEvent(EventKind.CHANGED, src))


class _TroubleHandler(logging.Handler):
    """Watchdog recovers from a dropped inotify queue by itself and only logs it; a record at
    WARNING or above from watchdog is the one sign that events were lost."""

    def __init__(self, watcher: Watcher) -> None:
        super().__init__(logging.WARNING)
        self._watcher = watcher

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        self._watcher.put(
            WatchEvent(EventKind.LOST, reason=message, overflow="overflow" in message.lower())
        )


class Watcher:
    """Watches targets and hands their events to the loop in batches."""

    def __init__(self, targets: Sequence[Target], observer: BaseObserver | None = None) -> None:
        self._targets = list(targets)
        self._resolved = [os.path.realpath(target.path) for target in self._targets]
        self._observer = observer or Observer()
        self._armed: dict[Target, Armed] = {}
        self._queue: queue.SimpleQueue[WatchEvent] = queue.SimpleQueue()
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._wake_w.setblocking(False)
        self._signalled = threading.Event()
        self._rearm_wanted = threading.Event()
        self._rearm_lock = threading.Lock()
        self._bridge = _Bridge(self)
        self._trouble = _TroubleHandler(self)

    # -- any thread ---------------------------------------------------------------------

    def put(self, event: WatchEvent) -> None:
        """Queues an event and wakes the loop once per batch; never blocks."""
        self._queue.put(event)
        self._wake()

    def directory_event(self, src: str, dest: str) -> None:
        """A directory appeared, went or moved: if it is on the way to a target, re-arm."""
        for path in (src, dest):
            if path and any(_is_at_or_above(path, target) for target in self._resolved):
                self._rearm_wanted.set()
                self._wake()
                return

    def _wake(self) -> None:
        if not self._signalled.is_set():
            self._signalled.set()
            with contextlib.suppress(OSError):
                self._wake_w.send(b"\0")

    # -- blocking (call from a worker thread) ---------------------------------------------

    def start(self) -> Rearmed:
        # Watchdog warns when a directory tree made at once (``mkdir -p``) gets a watch both
        # from the walk and from its creation event; the second replaces the first, and
        # nothing is missed, so the warning only adds noise to the log.
        warnings.filterwarnings(
            "ignore", message="Callback with id", category=RuntimeWarning, module="watchdog"
        )
        logging.getLogger("watchdog").addHandler(self._trouble)
        self._observer.start()
        return self.rearm()

    def stop(self) -> None:
        logging.getLogger("watchdog").removeHandler(self._trouble)
        self._observer.stop()
        self._observer.join()
        self._wake_r.close()
        self._wake_w.close()

    def rearm(self) -> Rearmed:
        """Moves each watch to where it belongs now; says which moved and which failed.

        A watch belongs on the target itself when it exists, else on its nearest existing
        parent. It is moved when that place changed, when the directory there was replaced
        (another inode under the same name), or when watchdog's thread for it died.
        """
        with self._rearm_lock:
            return self._rearm()

    def _rearm(self) -> Rearmed:
        alive = {emitter.watch for emitter in self._observer.emitters if emitter.is_alive()}
        result = Rearmed()
        for target in self._targets:
            # A directory made between a look and the watch would go unseen, so look again
            # once the watch is in place, until the place holds (``mkdir -p`` makes several).
            for _attempt in range(_MAX_PLACEMENTS):
                base = _nearest_existing(target.path)
                try:
                    info = os.stat(base)
                except OSError:
                    break
                identity = (info.st_dev, info.st_ino)
                armed = self._armed.pop(target, None)
                in_place = armed and (armed.base, armed.identity) == (base, identity)
                if armed and in_place and armed.watch in alive:
                    self._armed[target] = armed
                    break
                if armed and not self._shared(armed.watch):
                    with contextlib.suppress(KeyError):
                        self._observer.unschedule(armed.watch)
                exact = base == os.path.realpath(target.path)
                try:
                    watch = self._observer.schedule(
                        self._bridge,
                        base,
                        recursive=target.recursive and exact,
                        event_filter=_FILE_EVENTS if exact else _DIR_EVENTS,
                    )
                except OSError as err:
                    result.errors.append(f"cannot watch {base}: {err}")
                    break
                alive.add(watch)
                self._armed[target] = Armed(target, base, exact, identity, watch)
                result.moved.append(self._armed[target])
        return result

    def _shared(self, watch: ObservedWatch) -> bool:
        """Whether another target is watched through ``watch``: watchdog keeps one watch per
        place, so two absent targets under one parent share it, and removing it for one would
        leave the other deaf."""
        return any(armed.watch == watch for armed in self._armed.values())

    # -- the event loop -------------------------------------------------------------------

    async def receive(self) -> list[WatchEvent]:
        """Waits for events and returns every one queued since the last call.

        When a directory on the way to a target changed, the watches are re-armed (in a
        worker thread: arming a recursive watch walks the tree), and each watch moved comes
        back as a MOVED event.
        """
        while True:
            if self._rearm_wanted.is_set():
                self._rearm_wanted.clear()
                # Shielded, and its findings queued rather than held, so that a caller's
                # timeout cannot lose them.
                with anyio.CancelScope(shield=True):
                    rearmed = await anyio.to_thread.run_sync(self.rearm)
                for armed in rearmed.moved:
                    self.put(WatchEvent(EventKind.MOVED, armed.base, armed=armed))
                for error in rearmed.errors:
                    self.put(WatchEvent(EventKind.LOST, reason=error))
            events = self._drain()
            if events:
                return events
            # A directory event during the re-arm found the loop already woken and wrote no
            # byte, and the drain took the byte that woke it: only the flag still tells.
            if not self._rearm_wanted.is_set():
                await anyio.wait_readable(self._wake_r)

    def _drain(self) -> list[WatchEvent]:
        # Cleared before draining, so an event put after the drain wakes the loop again.
        self._signalled.clear()
        with contextlib.suppress(BlockingIOError):
            while self._wake_r.recv(4096):
                pass
        events = []
        with contextlib.suppress(queue.Empty):
            while True:
                events.append(self._queue.get_nowait())
        return events


def _nearest_existing(path: Path) -> str:
    current = os.path.realpath(path)
    while not os.path.isdir(current):
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    return current


def _is_at_or_above(path: str, target: str) -> bool:
    return target == path or target.startswith(path.rstrip(os.sep) + os.sep)
