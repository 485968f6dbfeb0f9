"""docs/observability.md holds to the code: every metric named there exists, every metric
that exists is explained there, and its Grafana dashboard is JSON that asks for them."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

pytest.importorskip("prometheus_client")

from django_workflows.observability.gauges import Reading, TableGauges
from django_workflows.observability.metrics import REGISTRY

PAGE = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
SUFFIXES = ("_bucket", "_count", "_sum", "_total", "_created")


def families() -> set[str]:
    """Every family a scrape shows (a counter's with its ``_total``)."""
    found = {f"{family.name}_total" if family.type == "counter" else family.name
             for family in REGISTRY.collect()}
    return found | {family.name for family in TableGauges._families(Reading(read_at=0.0))}


def named_on_the_page(text: str) -> set[str]:
    return set(re.findall(r"\bdjango_workflows_[a-z_]+[a-z]\b", text))


def family_of(name: str, known: set[str]) -> str:
    if name in known:
        return name
    for suffix in SUFFIXES:
        if name.endswith(suffix) and name[: -len(suffix)] in {k.removesuffix("_total")
                                                               for k in known}:
            return name[: -len(suffix)]
    return name


def test_every_metric_is_explained_in_a_table_of_the_page() -> None:
    rows = "\n".join(line for line in PAGE.read_text().splitlines() if line.startswith("| `"))
    assert sorted(name for name in families() if f"`{name}`" not in rows) == []


def test_every_metric_the_page_names_exists() -> None:
    known = families()
    bare = {name.removesuffix("_total") for name in known}
    named = named_on_the_page(PAGE.read_text())
    assert sorted(name for name in named
                  if name not in known and family_of(name, known) not in bare) == []


def test_the_grafana_dashboard_is_json_whose_queries_ask_for_our_metrics() -> None:
    text = PAGE.read_text()
    block = text.split("```json\n", 1)[1].split("\n```", 1)[0]
    dashboard = json.loads(block)
    expressions = [target["expr"] for panel in dashboard["panels"]
                   for target in panel["targets"]]
    assert len(expressions) >= 10
    assert all(named_on_the_page(expr) for expr in expressions)
