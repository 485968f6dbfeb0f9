"""Fixtures of the observability tests: their workflows registered, metrics turned on.

No module here imports an extra at module level: the tests that need one skip without it
(``pytest.importorskip``), so the suite without the extras collects them all.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from django_workflows import registry
from tests.observability.workflows import WORKFLOWS

TOKEN = "scrape-me-not-secret"


@pytest.fixture(autouse=True)
def observability_workflows() -> Iterator[None]:
    """Registered for the test only: the rest of the suite never sees them."""
    for workflow in WORKFLOWS:
        registry.register(workflow, origin=__name__)
    yield
    for workflow in WORKFLOWS:
        registry.unregister(workflow.id)


@pytest.fixture
def metrics_on(settings: Any) -> Iterator[None]:
    """METRICS on, the view reachable with TOKEN, the gauges read afresh."""
    pytest.importorskip("prometheus_client")
    from django_workflows.observability.gauges import table_gauges

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "METRICS": True,
                                 "METRICS_TOKEN": TOKEN}
    table_gauges.forget()
    yield
    table_gauges.forget()


@pytest.fixture(scope="session")
def spans() -> Any:
    """The OpenTelemetry SDK, set up once for the test process (a provider can be set only
    once), exporting to memory: the finished spans, cleared by each test that asks."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    return exporter


@pytest.fixture
def tracing_on(settings: Any, spans: Any) -> Iterator[Any]:
    """TRACING on; the spans finished in this test."""
    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "TRACING": True}
    spans.clear()
    yield spans
    spans.clear()


@pytest.fixture(scope="module")
def instrumented_django() -> Iterator[None]:
    """opentelemetry-instrumentation-django's middleware: a span per request."""
    pytest.importorskip("opentelemetry.instrumentation.django")
    from opentelemetry.instrumentation.django import DjangoInstrumentor

    instrumentor = DjangoInstrumentor()
    instrumentor.instrument()
    yield
    instrumentor.uninstrument()


class Idle:
    """A runner that hands work to nobody: its attempts stay queued for a test to claim."""

    def enqueue(self, tokens: Any) -> None:
        pass
