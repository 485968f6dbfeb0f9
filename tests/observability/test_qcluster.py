"""Metrics and traces across processes: a real qcluster (tests/qcluster.py, two workers,
the ORM broker) whose settings turn both on (``settings.py``): its spans are written by
the OpenTelemetry SDK to a file, its metrics by prometheus-client's multiprocess mode to a
directory; this process's spans go to the SDK's in-memory exporter.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

pytest.importorskip("prometheus_client")
pytest.importorskip("opentelemetry.sdk")

from django_workflows import services
from django_workflows.conf import DJANGO_Q_RUNNER
from django_workflows.models import Attempt, WorkflowInstance
from tests.observability.conftest import TOKEN
from tests.observability.scrape import scrape, value
from tests.qcluster import background, queue_name, wait_for

pytestmark = [pytest.mark.real_locks, pytest.mark.needs_q2, pytest.mark.slow,
              pytest.mark.django_db(transaction=True),
              pytest.mark.urls("tests.observability.urls")]


@pytest.fixture
def to_the_cluster(settings: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Work this process hands out goes to the qcluster; at the end, it has all settled."""
    from django_q.conf import Conf

    settings.DJANGO_WORKFLOWS = {**settings.DJANGO_WORKFLOWS, "RUNNER": DJANGO_Q_RUNNER}
    monkeypatch.setattr(Conf, "CLUSTER_NAME", queue_name())
    yield


def cluster(spans: Path, metrics: Path) -> Any:
    return background("orm", workers=2, DJANGO_SETTINGS_MODULE="tests.observability.settings",
                      DWF_OTEL_SPANS=str(spans), PROMETHEUS_MULTIPROC_DIR=str(metrics))


def worker_spans(path: Path, instance_id: str) -> list[dict[str, Any]]:
    """The cluster's finished spans about one instance, as the SDK wrote them."""
    if not path.exists():
        return []
    spans = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return [span for span in spans
            if span["attributes"].get("workflows.instance_id") == instance_id]


def shipped(instance_id: str) -> bool:
    return WorkflowInstance.objects.filter(pk=instance_id, current_step="shipped").exists()


@pytest.mark.needs_api
@pytest.mark.usefixtures("instrumented_django", "to_the_cluster")
def test_a_request_that_starts_an_order_and_its_payment_on_a_worker_are_one_trace(
        client: Any, tracing_on: Any, tmp_path: Path) -> None:
    client.force_login(User.objects.create_user("buyer"))
    # No worker runs yet: the reserve's attempt waits in the broker, its trace on its row.
    response = client.post("/api/instances/", {"workflow": "obs-order", "start": True},
                           content_type="application/json")
    assert response.status_code == 201, response.content
    order = response.json()["id"]
    [request] = [span for span in tracing_on.get_finished_spans()
                 if span.kind.name == "SERVER"]
    [start] = [span for span in tracing_on.get_finished_spans()
               if span.name == "workflows.start"]

    spans_file = tmp_path / "spans.jsonl"
    with cluster(spans_file, tmp_path):
        wait_for(lambda: shipped(order), message="the order to be paid and shipped")
        found = wait_for(lambda: len([s for s in worker_spans(spans_file, order)
                                      if s["name"] == "workflows.attempt"]) == 2
                         and worker_spans(spans_file, order), message="the workers' spans")

    attempts = {span["attributes"]["workflows.attempt.target"]: span for span in found
                if span["name"] == "workflows.attempt"}
    assert {span["context"]["trace_id"] for span in found} == {
        f"0x{request.context.trace_id:032x}"}
    assert attempts["reserve-stock"]["parent_id"] == f"0x{start.context.span_id:016x}"
    assert attempts["charge"]["parent_id"] == attempts["reserve-stock"]["context"]["span_id"]
    assert attempts["charge"]["attributes"]["workflows.attempt.outcome"] == "succeeded"
    assert attempts["charge"]["resource"]["attributes"]["service.name"] == "qcluster"


@pytest.mark.usefixtures("metrics_on", "to_the_cluster")
def test_one_scrape_adds_up_the_counts_of_both_workers(
        client: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    metrics = tmp_path / "metrics"
    metrics.mkdir()
    with cluster(tmp_path / "spans.jsonl", metrics):
        orders = [str(services.create("obs-order", state={"pause": 0.3}, start=True).pk)
                  for _ in range(6)]
        wait_for(lambda: all(shipped(order) for order in orders), timeout=60,
                 message="every order to be shipped")
    workers = set(Attempt.objects.values_list("worker", flat=True))
    assert len(workers) == 2  # both ran work

    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(metrics))  # as the web server's
    samples = scrape(client, TOKEN)
    order = {"workflow": "obs-order"}
    assert value(samples, "django_workflows_attempts_total", **order,
                 operation="reserve-stock", outcome="succeeded") == 6
    assert value(samples, "django_workflows_attempts_total", **order,
                 operation="charge", outcome="succeeded") == 6
    assert value(samples, "django_workflows_attempt_start_lag_seconds_count", **order) == 12
    # The results were reported by the workers: units of work of theirs.
    assert value(samples, "django_workflows_commands_total", **order,
                 command="attempt_finished", outcome="moved", code="") == 12
    assert len({path.name for path in metrics.glob("counter_*.db")}) >= 2  # one per process


