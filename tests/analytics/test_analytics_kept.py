"""The facts of a session are written from its kept cache report: the report keeps, beside its
rows, what the tables take of them besides (call numbers, models, versions, response bodies,
a side request's place in time), so a write reads no transcript nor body of a session the
collector reported. The rows must be those the view document and the report say, column for
column; a report kept by an older asz, without those facts, is built again once, never read
as if it had them."""

from __future__ import annotations

import hashlib
import shutil
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import orjson
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.analytics_roots import FactsMachine

from asz.analytics.schema import CALLS
from asz.config import AnalyticsConfig, Config
from asz.store import LocalBackend, Store, open_store
from asz.store._layout import LANDED_SUFFIX, REPORT_FILE
from asz.synth import SynthOptions


@pytest.fixture(scope="module")
def landed(tmp_path_factory: pytest.TempPathFactory) -> FactsMachine:
    """Three sessions with a subagent, a compaction and side requests each, landed once (the
    pass keeps each session's report); tests copy the root before changing it."""
    machine = FactsMachine(tmp_path_factory.mktemp("laptop"))
    machine.land(SynthOptions(seed=7, sessions=3, subagents=1))
    return machine


@pytest.fixture
def machine(landed: FactsMachine, tmp_path: Path) -> FactsMachine:
    """A copy of the landed machine of the test's own, its reports kept again (a copied file
    has another stamp, so the reports kept for the originals do not hold for it)."""
    copy = FactsMachine(tmp_path / "m")
    shutil.copytree(landed.base, copy.base, symlinks=True)
    json_of(copy, "cache")
    return copy


def read_table(tables: Path, table: str) -> list[dict[str, Any]]:
    """Every row of ``table`` in the files under ``tables``."""
    files = sorted((tables / table).rglob("*.parquet"))
    return pa.concat_tables([pq.read_table(path) for path in files]).to_pylist()


def json_of(machine: FactsMachine, *args: str) -> Any:
    done = machine.asz(*args, "--root", str(machine.root), "--json")
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


def moment(text: str | None) -> datetime | None:
    """A transcript time as the tables keep it: UTC, to the millisecond."""
    if text is None:
        return None
    parsed = datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)
    return parsed.replace(microsecond=parsed.microsecond // 1000 * 1000)


def dollars(value: float | None) -> Decimal | None:
    return None if value is None else Decimal(f"{value:.6f}")


def expected_calls(machine: FactsMachine, session: str, root_id: str) -> list[dict[str, Any]]:
    """The session's call rows as ``asz view --json`` and ``asz cache --json`` say them: a
    call's number, model, version and bodies from the view document, a side request's time
    from the call its chain follows, every figure from the report."""
    view = json_of(machine, "view", session)
    report = json_of(machine, "cache", session)
    project = open_store(machine.root).session(session).summary().project
    calls = {call["message_id"]: call for call in view["calls"]}
    call_of_body = {body["id"]: call for call in view["calls"] for body in call["provider_bodies"]}
    rows = []
    for row in report["rows"]:
        call = calls.get(row["message_id"])
        if call is not None:
            bodies = {body["role"]: body["id"] for body in call["provider_bodies"]}
            time = call["time"]
        else:
            bodies = {"request": row["request_id"]}
            before = call_of_body.get(row["previous"])
            time = (before["last_time"] or before["time"]) if before else None
        copied = (
            "stream", "message_id", "input_tokens", "output_tokens", "cache_read_input_tokens",
            "cache_creation_input_tokens", "cache_write_5m_input_tokens",
            "cache_write_1h_input_tokens", "expected_read", "rewritten_tokens", "cause",
            "cause_from", "detail", "stop_reason",
        )  # fmt: skip
        rows.append(
            {
                "session": session,
                "project": project,
                "machine": root_id,
                **{name: row[name] for name in copied},
                "call": call["n"] if call else None,
                "time": moment(time),
                "model": call["model"] if call else None,
                "version": call["version"] if call else None,
                "side": call is None,
                "request_body": bodies.get("request"),
                "response_body": bodies.get("response"),
                "cost_usd": dollars(row["cost_usd"]),
                "waste_usd": dollars(row["waste_usd"]),
            }
        )
    return rows


@pytest.mark.slow
def test_the_rows_are_what_the_view_and_the_report_say_column_for_column(
    machine: FactsMachine,
) -> None:
    reports = sorted(machine.root.glob(f"*/{REPORT_FILE}"))
    assert len(reports) == 3, "the pass keeps every session's report"
    before = {path: path.stat().st_mtime_ns for path in reports}
    written = machine.export()
    assert written["problems"] == [] and written["sessions"] == 3
    assert {path: path.stat().st_mtime_ns for path in reports} == before, "reports kept"

    root_id = (machine.root / "_state" / "root-id").read_text().strip()
    found = read_table(machine.tables, "calls")
    expected = []
    for session in sorted({row["session"] for row in found}):
        expected += expected_calls(machine, session, root_id)
    assert len(found) == len(expected) == written["calls"]
    key = lambda row: (row["session"], row["message_id"] or "", row["request_body"] or "")  # noqa: E731
    for got, want in zip(sorted(found, key=key), sorted(expected, key=key), strict=True):
        assert got == want
    assert set(expected[0]) == set(CALLS.names), "every column is compared"

    sides = [row for row in found if row["side"]]
    assert sides and all(row["time"] is not None for row in sides), "side requests placed"
    assert all(row["version"] for row in found if not row["side"])

    breaks = read_table(machine.tables, "breaks")
    assert breaks and len(breaks) == written["breaks"]
    calls = {(row["session"], row["message_id"]): row for row in found if not row["side"]}
    said = ("call", "time", "model", "message_id", "stream")
    for row in breaks:
        call = calls[row["session"], row["message_id"]]
        assert {name: row[name] for name in said} == {name: call[name] for name in said}


def old_kept_report(path: Path, schema: int) -> None:
    """Rewrites a kept report as one holding no facts beside the report, whole (its sha256
    matches), under ``schema``: as an older asz kept it."""
    head, _, body = path.read_bytes().partition(b"\n")
    header = orjson.loads(head)
    value = orjson.loads(body)
    body = orjson.dumps({"report": value["report"]})
    header.update(schema=schema, sha256=hashlib.sha256(body).hexdigest())
    path.write_bytes(orjson.dumps(header) + b"\n" + body)


@pytest.mark.parametrize("schema", [4, 5], ids=["older schema", "same schema, no facts"])
def test_a_report_kept_without_the_facts_is_built_again_once(
    machine: FactsMachine, schema: int
) -> None:
    reports = sorted(machine.root.glob(f"*/{REPORT_FILE}"))
    kept = {path: path.read_bytes() for path in reports}
    printed = {path: json_of(machine, "cache", path.parent.name) for path in reports}
    for path in reports:
        old_kept_report(path, schema)
    assert machine.export()["problems"] == []
    for path in reports:
        assert path.read_bytes() == kept[path], "built again, with the facts, and kept"
        assert json_of(machine, "cache", path.parent.name) == printed[path]
    mtimes = {path: path.stat().st_mtime_ns for path in reports}
    json_of(machine, "cache")
    assert {path: path.stat().st_mtime_ns for path in reports} == mtimes, "once"
    assert read_table(machine.tables, "calls"), "the rows were written"


def test_a_write_reads_no_transcript_nor_body_of_a_reported_session(
    machine: FactsMachine,
) -> None:
    from asz.analytics.run import write_facts

    class Counting(LocalBackend):
        """Notes the path of every read, whole or in part."""

        def __init__(self, path: Path) -> None:
            super().__init__(path)
            self.reads: list[str] = []

        def read(self, path: str, limit: int) -> bytes:
            self.reads.append(path)
            return super().read(path, limit)

        def read_range(self, path: str, start: int, length: int) -> bytes:
            self.reads.append(path)
            return super().read_range(path, start, length)

    backend = Counting(machine.root)
    store = Store(backend)
    config = Config(
        root=machine.root,
        claude_dirs=(machine.claude,),
        analytics=AnalyticsConfig(url=str(machine.tables)),
    )
    tally = write_facts(config, store, machine.root, str(machine.tables), store.sessions())
    assert tally.sessions == 3 and tally.calls > 0 and tally.problems == []
    assert backend.reads, "the kept reports were read"
    assert [path for path in backend.reads if path.endswith(LANDED_SUFFIX)] == []
