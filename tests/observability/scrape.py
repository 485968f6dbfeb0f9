"""Reading a scrape of /metrics as Prometheus would (prometheus-client's own parser)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

Sample = tuple[str, frozenset[tuple[str, str]]]


def parse(text: str) -> dict[Sample, float]:
    """Every sample of a scrape, by its name and labels."""
    return {(sample.name, frozenset(sample.labels.items())): sample.value
            for family in text_string_to_metric_families(text) for sample in family.samples}


def scrape(client: Any, token: str | None = None, path: str = "/metrics") -> dict[Sample, float]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    response = client.get(path, headers=headers)
    assert response.status_code == 200, response.content
    return parse(response.content.decode())


def value(samples: Mapping[Sample, float], name: str, **labels: str) -> float:
    """One sample's value (0 when the scrape does not have it yet)."""
    return samples.get((name, frozenset(labels.items())), 0.0)


def grew(before: Mapping[Sample, float], after: Mapping[Sample, float], name: str,
         **labels: str) -> float:
    """How much a counter (or a histogram's count) grew between two scrapes."""
    return value(after, name, **labels) - value(before, name, **labels)
