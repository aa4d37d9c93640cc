"""The running service counts the cache's cost as calls land: after a capture lands, its token,
cost and break counters equal the totals of the kept reports ``asz cache`` reads."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import orjson
import pytest
from support.service import FAST, run_asz, running_service, wait_until

from asz.synth import SynthOptions, synthesize

FAMILY_METRICS = {
    "calls": "asz_model_calls_total",
    "cost_usd": "asz_model_cost_usd_total",
}
CAUSE_METRICS = {
    "breaks": "asz_cache_breaks_total",
    "rewritten_tokens": "asz_cache_rewritten_tokens_total",
    "waste_usd": "asz_cache_waste_usd_total",
}


def expected_samples(reports: list[dict[str, Any]]) -> dict[str, float]:
    """What the counters should hold: the reports' ``by_family`` summed, keyed as scraped."""
    found: dict[str, float] = {}

    def add(key: str, value: float) -> None:
        if value > 0:
            found[key] = found.get(key, 0) + value

    for report in reports:
        for family, entry in report["totals"]["by_family"].items():
            for field, metric in FAMILY_METRICS.items():
                add(f"{metric}{{family={family}}}", entry[field])
            for kind, tokens in entry["tokens"].items():
                add(f"asz_model_tokens_total{{family={family},kind={kind}}}", tokens)
            for field, metric in CAUSE_METRICS.items():
                for cause, value in entry[field].items():
                    add(f"{metric}{{cause={cause},family={family}}}", value)
    return found


def scraped_cache_samples(samples: dict[str, float]) -> dict[str, float]:
    names = (*FAMILY_METRICS.values(), *CAUSE_METRICS.values(), "asz_model_tokens_total")
    return {key: value for key, value in samples.items() if key.split("{")[0] in names}


@pytest.mark.slow
def test_the_counters_equal_the_reports_of_what_landed(tmp_path: Path) -> None:
    claude = tmp_path / "claude"
    claude.mkdir()
    root = tmp_path / "root"
    flags = (*FAST, "--report-interval", "0")
    with running_service(tmp_path, claude, root, *flags) as service:
        service.wait_ready()
        assert scraped_cache_samples(service.metrics()) == {}
        expected = synthesize(claude, SynthOptions(seed=5, sessions=2, turns=4, tool_calls=2))
        totals = expected["totals"]
        bodies = totals["requests"] + totals["claimable_responses"]
        service.wait_for_metric("asz_bodies_landed_total", lambda landed: landed >= bodies)
        listed = run_asz(tmp_path, claude, "cache", "--root", str(root), "--json")
        assert listed.returncode == 0, listed.stderr
        reports = []
        for entry in orjson.loads(listed.stdout):
            done = run_asz(
                tmp_path, claude, "cache", "--root", str(root), entry["session"], "--json"
            )
            assert done.returncode == 0, done.stderr
            reports.append(orjson.loads(done.stdout))
        assert len(reports) == len(expected["sessions"])
        wanted = expected_samples(reports)
        assert any(key.startswith("asz_cache_breaks_total") for key in wanted)
        assert any("cache_write_1h" in key for key in wanted)

        def counted() -> bool:
            got = scraped_cache_samples(service.metrics())
            return got.keys() == wanted.keys() and all(
                math.isclose(got[key], wanted[key], rel_tol=1e-9, abs_tol=1e-6) for key in got
            )

        wait_until(counted, "the cache counters to equal the reports' totals")
        assert service.stop() == 0
