"""The service and its source directories (issue 13): it watches every Claude Code directory,
runs on when they are absent and says so in its log and on ``/healthz``, collects each as it
appears; and a body still being written is counted as settling, never as waiting.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from support.claude_dir import Claude, request_body
from support.service import FAST, A, B, run_asz, running_service, wait_until

BODIES = Path("asz") / "provider-bodies"


@pytest.mark.slow
def test_absent_directories_are_reported_watched_and_collected_once_made(
    tmp_path: Path,
) -> None:
    """Both directories absent at start share one watch on their parent; the one made first
    must not take that watch away from the other."""
    one, two = Claude(tmp_path / "one"), Claude(tmp_path / "two")
    root = tmp_path / "root"
    env = {"CLAUDE_CONFIG_DIR": f"{one.path},{two.path}"}
    flags = (*FAST, "--rescan-interval", "600")
    with running_service(tmp_path, one.path, root, *flags, env=env) as svc:
        svc.wait_ready()
        status, body = svc.get("/healthz")
        assert status == 200
        every = [
            str(one.path / "projects"),
            str(two.path / "projects"),
            str(one.path / BODIES),
            str(two.path / BODIES),
        ]
        assert orjson.loads(body)["sources_absent"] == every
        (said,) = svc.logged("sources_absent")
        assert said["level"] == "warning" and said["absent"] == every
        assert "no Claude Code directory exists" in said["message"]

        two.start_transcript(A)
        two.body("r1.request.json", request_body(A, "in the second directory"))
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 1)
        one.start_transcript(B, project="-home-u-other")
        one.body("r2.request.json", request_body(B, "in the first directory"))
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 2)
        svc.wait_for_metric("asz_transcript_lines_landed_total", lambda value: value == 2)

        wait_until(
            lambda: orjson.loads(svc.get("/healthz")[1])["sources_absent"] == [],
            "the health report never saw every directory made",
        )
        assert svc.logged("sources_present")
        assert svc.stop() == 0


@pytest.mark.slow
def test_a_body_still_being_written_is_settling_not_waiting(tmp_path: Path) -> None:
    claude = Claude(tmp_path / "claude")
    claude.start_transcript(A)
    whole = request_body(A, "a large body, half written")
    half = claude.body("half.request.json", whole[: len(whole) // 2])
    root = tmp_path / "root"

    once = run_asz(tmp_path, claude.path, "collect", "--once", "--json", "--root", str(root))
    counts = orjson.loads(once.stdout)
    assert once.returncode == 0
    assert (counts["bodies_settling"], counts["bodies_waiting"]) == (1, 0)
    human = run_asz(tmp_path, claude.path, "collect", "--once", "--root", str(root))
    assert "1 body still being written" in human.stdout.decode()
    assert "waiting" not in human.stdout.decode()

    with running_service(tmp_path, claude.path, root, *FAST, "--rescan-interval", "600") as svc:
        svc.wait_ready()
        assert svc.metric("asz_bodies_settling") == 1
        assert svc.metric("asz_bodies_waiting") == 0, "an alert on waiting bodies stays quiet"
        last_pass = orjson.loads(svc.get("/healthz")[1])["last_pass"]
        assert (last_pass["bodies_settling"], last_pass["bodies_waiting"]) == (1, 0)
        with half.open("ab") as handle:
            handle.write(whole[len(whole) // 2 :])
        svc.wait_for_metric("asz_bodies_landed_total", lambda value: value == 1)
        svc.wait_for_metric("asz_bodies_settling", lambda value: value == 0)
        assert svc.stop() == 0
