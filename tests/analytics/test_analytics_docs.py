"""Every query docs/analytics.md shows runs through the real ``asz sql`` against the tables of
a synthetic capture and answers something, so the document cannot rot."""

from __future__ import annotations

import re

import pytest
from support.analytics_roots import FactsMachine
from support.paths import REPO

from asz.synth import SynthOptions

DOC = REPO / "docs" / "analytics.md"
QUERIES = re.findall(r"```sql\n(.*?)```", DOC.read_text(), flags=re.DOTALL)
EXAMPLES = [query for query in QUERIES if not query.lstrip().startswith("CREATE")]


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> FactsMachine:
    found = FactsMachine(tmp_path_factory.mktemp("laptop"))
    found.land(SynthOptions(seed=4, sessions=3, subagents=1))
    found.export()
    return found


def test_the_document_shows_ten_example_queries() -> None:
    assert len(EXAMPLES) == 10


@pytest.mark.parametrize("query", EXAMPLES, ids=[f"q{n}" for n in range(1, len(EXAMPLES) + 1)])
def test_each_example_query_answers_on_a_synthetic_capture(
    machine: FactsMachine, query: str
) -> None:
    rows = machine.sql(query)
    assert rows, query
