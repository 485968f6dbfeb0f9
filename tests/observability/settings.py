"""Settings of the qcluster the observability tests start (tests/qcluster.py): the test
settings with METRICS and TRACING on, these tests' workflows installed, and the
OpenTelemetry SDK exporting each finished span as a line of JSON to ``DWF_OTEL_SPANS``
(the SDK's console exporter on a file shared by the cluster's processes).

prometheus-client's multiprocess mode comes from ``PROMETHEUS_MULTIPROC_DIR`` in the
cluster's environment, as it would on a server.
"""

from __future__ import annotations

import os

from tests.settings import *  # noqa: F403
from tests.settings import DJANGO_WORKFLOWS, INSTALLED_APPS

INSTALLED_APPS = [*INSTALLED_APPS, "tests.observability"]  # its workflows.py
DJANGO_WORKFLOWS = {**DJANGO_WORKFLOWS, "METRICS": True, "TRACING": True}

_spans = os.environ.get("DWF_OTEL_SPANS")
if _spans:
    from opentelemetry import trace
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor

    # Line-buffered and appended to: every process of the cluster writes whole lines.
    _out = open(_spans, "a", buffering=1)  # noqa: SIM115 - open as long as the process
    _provider = TracerProvider(resource=Resource.create({"service.name": "qcluster"}))
    _provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(
        out=_out, formatter=lambda span: span.to_json(indent=None) + "\n")))
    trace.set_tracer_provider(_provider)
