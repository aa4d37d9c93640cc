"""The cache report is derived state: the collector keeps it as sessions land, readers take the
kept one while the landed files are the same, and a lost or stale one is built again."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from support.counting import counting
from support.landing import land_synth

from asz.store import BODY_KIND, LocalBackend, Store
from asz.store._layout import REPORT_FILE
from asz.synth import SynthOptions
from asz.view.cache import cache_report
from asz.view.keeper import BUILD_SHARE, ReportKeeper
from asz.view.kept import KEPT_REPORT, session_report
from asz.view.prices import price_table


def kept_path(store: Store, session: str) -> Path:
    return Path(store.location) / session / REPORT_FILE


def cache_json(run_asz: Any, store: Store, *args: str) -> Any:
    done = run_asz("cache", "--root", str(store.location), *args, "--json")
    assert done.returncode == 0, done.stderr
    return orjson.loads(done.stdout)


@pytest.mark.slow
def test_a_pass_keeps_the_report_of_each_session_it_lands(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, sessions=2, turns=3))
    for session in expected["sessions"]:
        path = kept_path(store, session["id"])
        assert path.is_file()
        assert path.stat().st_mode & 0o777 == 0o600
        built = cache_report(store.session(session["id"]), price_table())
        assert cache_json(run_asz, store, session["id"]) == orjson.loads(orjson.dumps(built))


def test_a_reader_takes_the_kept_report_without_reading_the_bodies(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, sessions=1, turns=3))
    session = expected["sessions"][0]["id"]
    before = cache_json(run_asz, store, session)
    backend = counting(LocalBackend)(Path(store.location))
    assert session_report(Store(backend).session(session), price_table()) == before
    assert backend.body_reads == 0
    # Same names and sizes, other bytes: rewritten files, which the report is built from again.
    for name in store.session(session).landed(BODY_KIND):
        path = Path(store.location) / name.path
        path.write_bytes(b"\0" * path.stat().st_size)
    done = run_asz("cache", "--root", str(store.location), session)
    assert done.returncode == 1 and name.name in done.stderr.decode()


@pytest.mark.slow
def test_a_lost_report_is_built_again_and_kept(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, sessions=1, turns=3))
    session = expected["sessions"][0]["id"]
    before = cache_json(run_asz, store, session)
    path = kept_path(store, session)
    path.unlink()
    assert cache_json(run_asz, store, session) == before
    assert path.is_file()
    path.write_bytes(b"{not json")
    assert cache_json(run_asz, store, session) == before
    kept = KEPT_REPORT.read(store.session(session))
    assert kept is not None and kept.value["report"] == before


def test_other_prices_price_the_report_again(tmp_path: Path, run_asz: Any) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, sessions=1, turns=3))
    session = expected["sessions"][0]["id"]
    before = cache_json(run_asz, store, session)
    models = store.session(session).summary().models
    config = tmp_path / "config.toml"
    config.write_text(
        "".join(
            f'[prices."{model}"]\ninput = 1000.0\noutput = 1000.0\ncache_read = 1000.0\n'
            "cache_write_5m = 1000.0\ncache_write_1h = 1000.0\n"
            for model in sorted(models)
        )
    )
    after = cache_json(run_asz, store, "--config", str(config), session)
    assert after["totals"]["cost_usd"] > before["totals"]["cost_usd"]
    assert cache_json(run_asz, store, session) == before


def test_a_report_that_takes_long_is_built_again_no_sooner_than_its_share_allows(
    tmp_path: Path, run_asz: Any
) -> None:
    store, expected = land_synth(tmp_path, run_asz, SynthOptions(seed=5, sessions=1, turns=3))
    session = expected["sessions"][0]["id"]
    ticks = iter(range(0, 1000, 2))  # each build is timed as taking 2 s
    keeper = ReportKeeper(store, price_table(), interval=5.0, clock=lambda: next(ticks))
    built_at = []
    for now in range(0, 100, 3):
        keeper.landed([session])
        keeper.refresh(float(now))
        if keeper.take_gained():
            built_at.append(now)
    assert BUILD_SHARE * 2 > 5.0
    assert built_at == list(range(0, 100, 42)), "every 2 s build waits 40 s (the next pass on)"
