"""systemd notifications through a real AF_UNIX datagram socket, as systemd would receive them."""

from __future__ import annotations

import os
import signal
import socket
import threading
from pathlib import Path

import pytest
from support.claude_dir import Claude, request_body
from support.notify import Datagrams, notify_socket
from support.service import FAST, A, running_service

from asz.daemon.notify import Notifier


def test_each_message_is_one_datagram() -> None:
    with notify_socket() as (receiver, path):
        notifier = Notifier(path, watchdog_usec=10_000_000)
        notifier.ready("first scan done")
        assert receiver.recv(4096) == b"READY=1\nSTATUS=first scan done"
        notifier.watchdog()
        assert receiver.recv(4096) == b"WATCHDOG=1"
        notifier.status("landed=3")
        assert receiver.recv(4096) == b"STATUS=landed=3"
        notifier.stopping()
        assert receiver.recv(4096) == b"STOPPING=1\nSTATUS=stopping"
        assert notifier.watchdog_interval == 5.0


def test_an_abstract_socket_address_starts_with_at() -> None:
    if not hasattr(socket, "AF_UNIX") or os.uname().sysname != "Linux":
        pytest.skip("abstract socket addresses are Linux's")
    name = f"asz-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as receiver:
        receiver.bind("\0" + name)
        receiver.settimeout(5)
        Notifier("@" + name).send("READY=1")
        assert receiver.recv(4096) == b"READY=1"


def test_outside_systemd_nothing_is_sent_and_no_watchdog_is_kept() -> None:
    notifier = Notifier.from_environ({})
    assert not notifier.enabled and notifier.watchdog_interval is None
    notifier.ready("nobody listens")


@pytest.mark.parametrize(
    ("env", "interval"),
    [
        ({"WATCHDOG_USEC": "2000000"}, 1.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": str(os.getpid())}, 1.0),
        ({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}, None),
        ({"WATCHDOG_USEC": "nonsense"}, None),
        ({"WATCHDOG_USEC": "0"}, None),
        ({}, None),
    ],
)
def test_the_watchdog_interval_is_half_the_timeout_and_only_for_this_process(
    env: dict[str, str], interval: float | None
) -> None:
    notifier = Notifier.from_environ({"NOTIFY_SOCKET": "/run/nowhere", **env})
    assert notifier.watchdog_interval == interval


def test_a_receiver_that_stops_reading_never_blocks_a_send() -> None:
    outcomes: list[str] = []
    with notify_socket() as (_receiver, path):
        notifier = Notifier(path)

        def flood() -> None:
            for _ in range(200):
                try:
                    notifier.status("x" * 1000)
                    outcomes.append("sent")
                except OSError:
                    outcomes.append("dropped")

        sender = threading.Thread(target=flood, daemon=True)
        sender.start()
        sender.join(timeout=30)
        assert not sender.is_alive(), "a send blocked on a full queue"
    assert "sent" in outcomes and "dropped" in outcomes


@pytest.mark.slow
def test_a_service_whose_manager_stops_reading_keeps_landing(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    claude.bodies.mkdir(parents=True)
    with (
        notify_socket() as (_receiver, path),
        running_service(
            tmp_path,
            claude.path,
            tmp_path / "root",
            *FAST,
            "--rescan-interval",
            "600",
            env={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "100000"},
        ) as svc,
    ):
        for number in range(20):
            claude.body(f"r{number:03d}.request.json", request_body(A, f"{number}"))
            svc.wait_for_metric("asz_bodies_landed_total", lambda value, n=number: value == n + 1)
        assert svc.metric("asz_errors_total{kind=notify}") > 0
        assert svc.get("/healthz")[0] == 200
        assert svc.stop() == 0


def test_a_send_to_a_socket_that_is_gone_raises_oserror(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        Notifier(str(tmp_path / "gone")).send("READY=1")


def test_the_service_says_ready_after_the_first_scan_feeds_the_watchdog_and_says_stopping(
    tmp_path: Path,
) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    claude.body("r1.request.json", request_body(A, "one"))
    env = {"WATCHDOG_USEC": "400000"}
    with notify_socket() as (receiver, path):
        datagrams = Datagrams(receiver)
        with running_service(
            tmp_path,
            claude.path,
            tmp_path / "root",
            *FAST,
            "--rescan-interval",
            "600",
            env={**env, "NOTIFY_SOCKET": path},
        ) as svc:
            datagrams.wait_for(lambda got: any(b"READY=1" in m for m in got), "READY=1")
            ready = datagrams.index(b"READY=1")
            assert datagrams.index(b"STATUS=first scan") < ready
            assert svc.metric("asz_bodies_landed_total") == 1, "READY comes after the first scan"
            pings = datagrams.received.count(b"WATCHDOG=1")
            datagrams.wait_for(lambda got: got.count(b"WATCHDOG=1") >= pings + 3, "pings")
            svc.process.send_signal(signal.SIGTERM)
            datagrams.wait_for(lambda got: any(b"STOPPING=1" in m for m in got), "STOPPING=1")
            assert svc.process.wait(timeout=30) == 0
