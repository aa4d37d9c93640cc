"""The Grafana dashboard, the alert examples, and the cache-cost metrics they are built on.

The dashboard is checked for the structure Grafana's dashboard model needs (there is no
schema to validate it against offline), and every metric name its queries, and the alert
examples in docs/operations.md, use is checked against what the real ``asz collect`` serves
on ``/metrics``, scraped over HTTP, so a renamed metric breaks this test and not a dashboard.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from itertools import combinations
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families
from support.claude_dir import Claude
from support.paths import REPO
from support.service import FAST, A, running_service

from asz import __version__
from asz.daemon.metrics import ServiceMetrics
from asz.view.families import CACHE_CAUSES, FAMILIES, TOKEN_KINDS, CacheCounts, model_family

DASHBOARD = REPO / "deploy" / "grafana" / "asz-cache.json"
OPERATIONS = REPO / "docs" / "operations.md"
DATASOURCE = {"type": "prometheus", "uid": "${DS_PROMETHEUS}"}
GRID_WIDTH = 24

CACHE_METRICS = {
    "asz_model_calls_total": ("family",),
    "asz_model_tokens_total": ("family", "kind"),
    "asz_model_cost_usd_total": ("family",),
    "asz_cache_breaks_total": ("family", "cause"),
    "asz_cache_rewritten_tokens_total": ("family", "cause"),
    "asz_cache_waste_usd_total": ("family", "cause"),
}


# -- PromQL names ----------------------------------------------------------------------------

_STRING = re.compile(r'"(?:[^"\\]|\\.)*"|\'(?:[^\'\\]|\\.)*\'|`[^`]*`')
_ASZ_NAME = re.compile(r"(?<![\w:$.])asz_[A-Za-z0-9_:]*")


def asz_names(expr: str) -> set[str]:
    """The ``asz_`` metric names a PromQL expression reads (label values left out)."""
    return set(_ASZ_NAME.findall(_STRING.sub('""', expr)))


def test_asz_names_skips_strings_and_grafana_variables() -> None:
    expr = (
        'sum by (le) (rate(asz_pass_duration_seconds_bucket{instance=~"asz_x",job="a"}'
        "[$__rate_interval])) / on() group_left asz_build_info"
    )
    assert asz_names(expr) == {"asz_pass_duration_seconds_bucket", "asz_build_info"}


def exported_names(exposition: str, *, families: bool = False) -> set[str]:
    """Every name a query can use against this exposition: each ``# TYPE`` line's name (so
    a labelled metric counts before its first sample), but for a histogram its ``_bucket``,
    ``_sum`` and ``_count`` instead (and a summary's ``_sum`` and ``_count`` beside its
    quantiles), and every sample's name. With ``families``, a histogram's own name too, as
    the docs name it."""
    names: set[str] = set()
    for line in exposition.splitlines():
        if line.startswith("# TYPE "):
            _, _, name, kind = line.split(" ", 3)
            if kind == "histogram":
                names |= {f"{name}_bucket", f"{name}_sum", f"{name}_count"}
            elif kind == "summary":
                names |= {f"{name}_sum", f"{name}_count"}
            if kind != "histogram" or families:
                names.add(name)
        elif line and not line.startswith("#"):
            names.add(re.split(r"[{\s]", line, maxsplit=1)[0])
    return names


# -- the real service's exposition ------------------------------------------------------------


@pytest.fixture(scope="module")
def served_exposition(tmp_path_factory: pytest.TempPathFactory) -> str:
    """``/metrics`` of a real ``asz collect``, once it is ready, before any call landed; with
    an OTLP endpoint (nothing listens there), so that the export's own metrics are there."""
    tmp = tmp_path_factory.mktemp("service")
    config = tmp / "home" / ".config" / "asz" / "asz.toml"
    config.parent.mkdir(parents=True)
    config.write_text('[otlp]\nendpoint = "http://127.0.0.1:9"\n')
    claude = Claude(tmp / "claude")
    claude.start_transcript(A)
    with running_service(tmp, claude.path, tmp / "root", *FAST) as svc:
        svc.wait_ready()
        status, body = svc.get("/metrics")
        assert status == 200
        assert svc.stop() == 0
    return body.decode()


def test_the_service_exports_every_cache_metric_before_any_sample(served_exposition: str) -> None:
    families = {f.name: f for f in text_string_to_metric_families(served_exposition)}
    for name, labels in CACHE_METRICS.items():
        assert f"# TYPE {name} counter" in served_exposition
        assert f"# HELP {name} " in served_exposition
        family = families[name.removesuffix("_total")]
        assert family.type == "counter"
        # no label beyond the bounded ones, on whatever samples there are
        for sample in family.samples:
            assert set(sample.labels) <= set(labels)


# -- the dashboard ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def dashboard() -> dict[str, Any]:
    return orjson.loads(DASHBOARD.read_bytes())


def panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """Every panel, those inside collapsed rows too."""
    for panel in dashboard["panels"]:
        yield panel
        yield from panel.get("panels", [])


def exprs(dashboard: dict[str, Any]) -> list[str]:
    found = [target["expr"] for panel in panels(dashboard) for target in panel.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if variable["type"] == "query":
            found.append(query["query"] if isinstance(query, dict) else query)
    return found


def test_the_dashboard_has_what_grafana_needs(dashboard: dict[str, Any]) -> None:
    assert isinstance(dashboard["title"], str) and dashboard["title"]
    assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", dashboard["uid"])
    assert isinstance(dashboard["schemaVersion"], int) and 36 <= dashboard["schemaVersion"] <= 41
    assert dashboard["id"] is None  # an import gets a fresh id
    assert isinstance(dashboard["time"]["from"], str) and dashboard["time"]["to"] == "now"
    # imported by hand, Grafana asks which Prometheus ${DS_PROMETHEUS} is ...
    (ds_input,) = dashboard["__inputs"]
    assert ds_input["name"] == "DS_PROMETHEUS"
    assert (ds_input["type"], ds_input["pluginId"]) == ("datasource", "prometheus")
    # ... and provisioned from a file, the variable of that name answers it
    variables = {variable["name"]: variable for variable in dashboard["templating"]["list"]}
    assert variables["DS_PROMETHEUS"]["type"] == "datasource"
    assert variables["DS_PROMETHEUS"]["query"] == "prometheus"
    for variable in variables.values():
        if variable["type"] == "query":
            assert variable["datasource"] == DATASOURCE
    required = {(entry["type"], entry["id"]) for entry in dashboard["__requires"] if entry["type"]}
    assert ("datasource", "prometheus") in required
    for panel in panels(dashboard):
        if panel["type"] != "row":
            assert ("panel", panel["type"]) in required


def test_every_panel_has_an_id_a_place_and_queries(dashboard: dict[str, Any]) -> None:
    found = list(panels(dashboard))
    assert len(found) >= 10
    ids = [panel["id"] for panel in found]
    assert all(isinstance(i, int) and i > 0 for i in ids) and len(set(ids)) == len(ids)
    for panel in found:
        assert panel["type"] in {"timeseries", "stat", "gauge", "bargauge", "table", "row"}
        assert panel["title"]
        grid = panel["gridPos"]
        assert all(isinstance(grid[key], int) for key in ("x", "y", "w", "h")), panel["title"]
        assert grid["x"] >= 0 and grid["y"] >= 0 and grid["w"] > 0 and grid["h"] > 0
        assert grid["x"] + grid["w"] <= GRID_WIDTH, panel["title"]
        if panel["type"] == "row":
            continue
        assert panel["datasource"] == DATASOURCE
        targets = panel["targets"]
        assert targets, panel["title"]
        ref_ids = [target["refId"] for target in targets]
        assert len(set(ref_ids)) == len(ref_ids), panel["title"]
        for target in targets:
            assert isinstance(target["expr"], str) and target["expr"].strip(), panel["title"]
            assert target["datasource"] == DATASOURCE, panel["title"]
            assert target["expr"].count("(") == target["expr"].count(")"), target["expr"]
            assert target["expr"].count("{") == target["expr"].count("}"), target["expr"]
            assert target["expr"].count("[") == target["expr"].count("]"), target["expr"]


def test_no_two_panels_overlap(dashboard: dict[str, Any]) -> None:
    def box(panel: dict[str, Any]) -> tuple[int, int, int, int]:
        grid = panel["gridPos"]
        return grid["x"], grid["y"], grid["x"] + grid["w"], grid["y"] + grid["h"]

    for one, other in combinations(dashboard["panels"], 2):
        x0, y0, x1, y1 = box(one)
        u0, v0, u1, v1 = box(other)
        overlap = x0 < u1 and u0 < x1 and y0 < v1 and v0 < y1
        assert not overlap, (one["title"], other["title"])


def test_the_dashboard_shows_cost_waste_breaks_tokens_ratio_and_health(
    dashboard: dict[str, Any],
) -> None:
    used = set().union(*(asz_names(expr) for expr in exprs(dashboard)))
    assert set(CACHE_METRICS) - {"asz_model_calls_total"} <= used
    assert {
        "asz_errors_total",
        "asz_bodies_waiting",
        "asz_last_pass_timestamp_seconds",
        "asz_pass_duration_seconds_bucket",
    } <= used
    by_title = {panel["title"]: panel for panel in panels(dashboard)}
    tokens = by_title["Tokens per hour by kind"]
    assert tokens["fieldConfig"]["defaults"]["custom"]["stacking"]["mode"] == "normal"
    assert "by (kind)" in tokens["targets"][0]["expr"]
    ratio = by_title["Cache hit ratio"]["targets"][0]["expr"]
    for kind in ("cache_read", "cache_write_5m", "cache_write_1h", "input"):
        assert kind in ratio
    for title, by in (
        ("Cost per hour by model family", "family"),
        ("Cache waste per hour by cause", "cause"),
        ("Cache breaks per hour by cause", "cause"),
        ("Re-written tokens per hour by cause", "cause"),
    ):
        assert f"by ({by})" in by_title[title]["targets"][0]["expr"], title


def test_every_dashboard_query_names_only_what_the_service_exports(
    dashboard: dict[str, Any], served_exposition: str
) -> None:
    exported = exported_names(served_exposition)
    for expr in exprs(dashboard):
        names = asz_names(expr)
        assert names, expr
        assert names <= exported, (expr, names - exported)


# -- the alert examples ----------------------------------------------------------------------


def fenced(text: str, language: str) -> list[str]:
    return re.findall(rf"^```{language}\n(.*?)^```$", text, flags=re.DOTALL | re.MULTILINE)


def yaml_exprs(block: str) -> list[str]:
    """Each ``expr:`` of a rules file: inline, or a ``|``/``>`` block of deeper lines."""
    found = []
    lines = block.splitlines()
    for index, line in enumerate(lines):
        match = re.match(r"^(\s*)(?:- )?expr:\s*(.*)$", line)
        if not match:
            continue
        indent, value = len(match.group(1)), match.group(2).strip()
        if value and value[0] not in "|>":
            found.append(value)
            continue
        body = []
        for following in lines[index + 1 :]:
            if following.strip() and len(following) - len(following.lstrip()) <= indent:
                break
            body.append(following.strip())
        found.append(" ".join(part for part in body if part))
    return found


def alert_exprs() -> list[str]:
    text = OPERATIONS.read_text()
    found = [expr for block in fenced(text, "yaml") for expr in yaml_exprs(block)]
    for block in fenced(text, "promql"):
        found += [line for line in block.splitlines() if line and not line.startswith("#")]
    return found


def test_the_alert_rules_are_complete() -> None:
    (rules,) = [block for block in fenced(OPERATIONS.read_text(), "yaml") if "groups:" in block]
    alerts = re.findall(r"^\s*- alert: (\w+)$", rules, flags=re.MULTILINE)
    assert len(alerts) == len(set(alerts)) == len(yaml_exprs(rules))
    assert {"AszCacheWasteHigh", "AszLargeCacheBreak", "AszNoPass"} <= set(alerts)
    assert "\t" not in rules


def test_every_alert_example_names_only_what_the_service_exports(
    served_exposition: str,
) -> None:
    exported = exported_names(served_exposition)
    found = alert_exprs()
    assert len(found) >= 10
    used = set()
    for expr in found:
        assert expr.count("(") == expr.count(")"), expr
        used |= asz_names(expr)
        assert asz_names(expr) <= exported, (expr, asz_names(expr) - exported)
    assert {"asz_cache_waste_usd_total", "asz_cache_rewritten_tokens_total"} <= used


def test_every_metric_operations_md_names_is_exported(served_exposition: str) -> None:
    exported = exported_names(served_exposition, families=True)
    named = set(_ASZ_NAME.findall(OPERATIONS.read_text()))
    assert set(CACHE_METRICS) <= named
    assert named <= exported, named - exported


# -- model families --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("model", "family"),
    [
        ("claude-opus-4-6", "opus"),
        ("claude-opus-4-5-20251101", "opus"),
        ("claude-3-opus-20240229", "opus"),
        ("claude-sonnet-4-5-20250929", "sonnet"),
        ("claude-3-5-sonnet-20241022", "sonnet"),
        ("claude-sonnet-4-5@20250929", "sonnet"),
        ("claude-sonnet-4-5[1m]", "sonnet"),
        ("anthropic.claude-haiku-4-5-20251001-v1:0", "haiku"),
        ("us.anthropic.claude-3-5-haiku-20241022-v1:0", "haiku"),
        ("CLAUDE-OPUS-4-1", "opus"),
        ("opus", "opus"),
        ("claude-3-opus20240229", "opus"),
        ("<synthetic>", "other"),
        ("gpt-4o", "other"),
        ("claude-instant-1.2", "other"),
        ("magnum-opusx", "other"),
        ("", "unknown"),
        ("   ", "unknown"),
        (None, "unknown"),
    ],
)
def test_model_family(model: str | None, family: str) -> None:
    assert model_family(model) == family


@given(st.one_of(st.none(), st.text()))
def test_model_family_is_always_a_bounded_label(model: str | None) -> None:
    assert model_family(model) in FAMILIES


@given(
    st.sampled_from(["opus", "sonnet", "haiku"]),
    st.text(alphabet="0123456789-.:@[]_ ", max_size=12),
    st.text(alphabet="0123456789-.:@[]_ ", max_size=12),
    st.booleans(),
)
def test_a_family_word_among_digits_and_punctuation_names_its_family(
    word: str, before: str, after: str, upper: bool
) -> None:
    model = f"claude-{before}{word.upper() if upper else word}{after}"
    assert model_family(model) == word


# -- add_cache_counts --------------------------------------------------------------------------


def value(metrics: ServiceMetrics, name: str, **labels: str) -> float:
    found = metrics.registry.get_sample_value(name, labels)
    return 0.0 if found is None else found


def cache_samples(metrics: ServiceMetrics) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    found = {}
    for family in text_string_to_metric_families(metrics.exposition().decode()):
        for sample in family.samples:
            if sample.name in CACHE_METRICS:
                found[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return found


def test_cache_metrics_are_described_before_any_count_and_have_no_sample() -> None:
    metrics = ServiceMetrics(__version__)
    text = metrics.exposition().decode()
    for name in CACHE_METRICS:
        assert f"# HELP {name} " in text and f"# TYPE {name} counter" in text
    assert cache_samples(metrics) == {}


def test_add_cache_counts_adds_every_delta_under_its_labels() -> None:
    metrics = ServiceMetrics(__version__)
    counts = CacheCounts(
        calls={"opus": 3, "haiku": 1},
        tokens={("opus", "input"): 12, ("opus", "cache_read"): 90_000, ("haiku", "output"): 40},
        cost_usd={"opus": 0.75, "haiku": 0.001},
        breaks={("opus", "ttl"): 1},
        rewritten_tokens={("opus", "ttl"): 31_307},
        waste_usd={("opus", "ttl"): 0.2974},
    )
    metrics.add_cache_counts(counts)
    metrics.add_cache_counts(counts)
    assert value(metrics, "asz_model_calls_total", family="opus") == 6
    assert value(metrics, "asz_model_calls_total", family="haiku") == 2
    assert value(metrics, "asz_model_tokens_total", family="opus", kind="cache_read") == 180_000
    assert value(metrics, "asz_model_tokens_total", family="haiku", kind="output") == 80
    assert value(metrics, "asz_model_cost_usd_total", family="opus") == pytest.approx(1.5)
    assert value(metrics, "asz_cache_breaks_total", family="opus", cause="ttl") == 2
    rewritten = value(metrics, "asz_cache_rewritten_tokens_total", family="opus", cause="ttl")
    assert rewritten == 62_614
    waste = value(metrics, "asz_cache_waste_usd_total", family="opus", cause="ttl")
    assert waste == pytest.approx(0.5948)
    # no series for what was never counted
    assert metrics.registry.get_sample_value("asz_model_calls_total", {"family": "sonnet"}) is None


def test_an_unlisted_cause_or_family_counts_as_other() -> None:
    metrics = ServiceMetrics(__version__)
    metrics.add_cache_counts(
        CacheCounts(
            breaks={("sonnet", "a-cause-from-tomorrow"): 2, ("sonnet", "other"): 1},
            rewritten_tokens={("claude-sonnet-4-5", "tools"): 500},
            waste_usd={("sonnet", "/home/u/some/path"): 0.5},
        )
    )
    assert value(metrics, "asz_cache_breaks_total", family="sonnet", cause="other") == 3
    assert value(metrics, "asz_cache_rewritten_tokens_total", family="other", cause="tools") == 500
    assert value(metrics, "asz_cache_waste_usd_total", family="sonnet", cause="other") == 0.5
    assert len(cache_samples(metrics)) == 3


def test_deltas_that_are_not_positive_and_finite_are_ignored() -> None:
    metrics = ServiceMetrics(__version__)
    metrics.add_cache_counts(CacheCounts(calls={"opus": 5}, cost_usd={"opus": 1.25}))
    metrics.add_cache_counts(
        CacheCounts(
            calls={"opus": -5, "sonnet": 0},
            cost_usd={"opus": -1.0, "haiku": math.nan, "sonnet": math.inf},
            breaks={("opus", "ttl"): -1},
        )
    )
    assert value(metrics, "asz_model_calls_total", family="opus") == 5
    assert value(metrics, "asz_model_cost_usd_total", family="opus") == 1.25
    assert set(cache_samples(metrics)) == {
        ("asz_model_calls_total", (("family", "opus"),)),
        ("asz_model_cost_usd_total", (("family", "opus"),)),
    }


def test_a_token_kind_not_listed_is_refused() -> None:
    with pytest.raises(ValueError, match="token kind"):
        CacheCounts(tokens={("opus", "cache_creation"): 1})
    tokens = {("opus", "input"): 1}
    counts = CacheCounts(calls={"opus": 1}, tokens=tokens)
    tokens["opus", "cache_creation"] = 1  # changed after the check
    metrics = ServiceMetrics(__version__)
    with pytest.raises(ValueError, match="token kind"):
        metrics.add_cache_counts(counts)
    assert cache_samples(metrics) == {}


labels = st.one_of(st.sampled_from(CACHE_CAUSES + FAMILIES), st.text(max_size=12))
deltas = st.one_of(
    st.integers(-(10**9), 10**9),
    st.floats(-1e12, 1e12),
    st.sampled_from([math.nan, math.inf, -math.inf]),
)
counts = st.builds(
    CacheCounts,
    calls=st.dictionaries(labels, deltas, max_size=3),
    tokens=st.dictionaries(st.tuples(labels, st.sampled_from(TOKEN_KINDS)), deltas, max_size=4),
    cost_usd=st.dictionaries(labels, deltas, max_size=3),
    breaks=st.dictionaries(st.tuples(labels, labels), deltas, max_size=3),
    rewritten_tokens=st.dictionaries(st.tuples(labels, labels), deltas, max_size=3),
    waste_usd=st.dictionaries(st.tuples(labels, labels), deltas, max_size=3),
)


@pytest.mark.slow
@given(st.lists(counts, max_size=6))
def test_counters_never_go_down_and_labels_stay_bounded(batches: list[CacheCounts]) -> None:
    metrics = ServiceMetrics(__version__)
    before = cache_samples(metrics)
    allowed = {"family": set(FAMILIES), "kind": set(TOKEN_KINDS), "cause": set(CACHE_CAUSES)}
    for batch in batches:
        metrics.add_cache_counts(batch)
        after = cache_samples(metrics)
        for key, was in before.items():
            assert after[key] >= was
        for (name, sample_labels), now in after.items():
            assert math.isfinite(now) and now >= 0
            assert {label for label, _ in sample_labels} == set(CACHE_METRICS[name])
            for label, label_value in sample_labels:
                assert label_value in allowed[label]
        before = after
