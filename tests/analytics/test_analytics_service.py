"""The service writes the facts of what it lands to ``[analytics] url`` after each pass: the
tables it leaves give the figures ``asz cache`` gives from the landed files."""

from __future__ import annotations

import signal
from pathlib import Path

import orjson
import pytest
from support.harness import Capture, Workspace, running, wait_for

pytestmark = pytest.mark.slow


def test_the_service_writes_the_facts_of_what_it_lands(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    Capture.make(ws.claude, sessions=2)
    tables = tmp_path / "tables"
    config = tmp_path / "home" / ".config" / "asz"
    config.mkdir(parents=True)
    (config / "asz.toml").write_text(f'[analytics]\nurl = "{tables}"\n')

    def sql(query: str) -> list[dict]:
        done = ws.run("sql", query, "--json")
        assert done.returncode == 0, done.stderr
        return orjson.loads(done.stdout)

    def every_session_written() -> bool:
        if not (tables / "sessions").is_dir():
            return False
        return sql("SELECT count(*) AS n FROM sessions")[0]["n"] == 2

    log = tmp_path / "service.log"
    with running(ws.start_service(log)) as service:
        wait_for(every_session_written, timeout=120, what="both sessions' facts")
        service.send_signal(signal.SIGTERM)
        service.wait(timeout=30)
    said = [orjson.loads(line) for line in log.read_bytes().splitlines() if line.startswith(b"{")]
    assert any(line.get("event") == "analytics_written" for line in said)
    [counts] = sql("SELECT count(*) AS n, count(DISTINCT message_id) AS calls FROM calls")
    assert counts["n"] > 0
    (tmp_path / "none.toml").write_text("")
    from_files = ws.run("cache", "--json", "--config", str(tmp_path / "none.toml"))
    from_tables = ws.run("cache", "--json")
    assert from_files.returncode == from_tables.returncode == 0, from_tables.stderr
    assert orjson.loads(from_tables.stdout) == orjson.loads(from_files.stdout)
