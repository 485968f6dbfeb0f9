"""Spans made with the OpenTelemetry SDK's in-memory exporter, in this process (the
immediate runner runs the attempts after each command's commit)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.contrib.auth.models import User

pytest.importorskip("opentelemetry.sdk")

from django_workflows import services
from django_workflows.clock import now_datetime
from django_workflows.exceptions import WorkflowNotMoved
from django_workflows.models import Attempt, WorkflowInstance

pytestmark = [pytest.mark.django_db(transaction=True)]


def by_name(spans: Any) -> dict[str, list[Any]]:
    found: dict[str, list[Any]] = {}
    for span in spans.get_finished_spans():
        found.setdefault(span.name, []).append(span)
    return found


@pytest.mark.needs_api
@pytest.mark.usefixtures("instrumented_django")
def test_a_request_that_starts_an_order_and_its_payment_are_one_trace(
        client: Any, tracing_on: Any) -> None:
    client.force_login(User.objects.create_user("buyer"))
    response = client.post("/api/instances/", {"workflow": "obs-order", "start": True},
                           content_type="application/json")
    assert response.status_code == 201, response.content

    spans = by_name(tracing_on)
    [request] = [span for span in tracing_on.get_finished_spans()
                 if span.kind.name == "SERVER"]
    [start] = spans["workflows.start"]
    attempts = {span.attributes["workflows.attempt.target"]: span
                for span in spans["workflows.attempt"]}
    assert start.parent.span_id == request.context.span_id
    assert attempts["reserve-stock"].parent.span_id == start.context.span_id
    # The payment was handed out by the reserve's result, reported in the reserve's span.
    assert attempts["charge"].parent.span_id == attempts["reserve-stock"].context.span_id
    assert attempts["charge"].attributes["workflows.attempt.outcome"] == "succeeded"
    assert {span.context.trace_id for span in tracing_on.get_finished_spans()} == {
        request.context.trace_id}


def test_a_command_span_says_what_the_command_did_to_which_instance(tracing_on: Any) -> None:
    order = services.create("obs-order", start=True)
    order = WorkflowInstance.objects.get(pk=order.pk)  # as its attempts left it
    revision = order.revision
    tracing_on.clear()
    services.next(order)

    [span] = by_name(tracing_on)["workflows.next"]
    assert dict(span.attributes) == {
        "workflows.kind": "command", "workflows.command": "next",
        "workflows.instance_id": str(order.pk), "workflows.workflow": "obs-order",
        "workflows.revision_before": revision, "workflows.revision_after": revision + 1,
        "workflows.outcome": "moved"}


def test_a_refused_command_span_carries_the_refusal_code(tracing_on: Any) -> None:
    order = services.create("obs-order")
    with pytest.raises(WorkflowNotMoved):
        services.next(order)

    [span] = by_name(tracing_on)["workflows.next"]
    assert span.attributes["workflows.outcome"] == "refused"
    assert span.attributes["workflows.refusal_code"] == "not_running"
    assert span.status.is_unset  # a refusal is an answer, not an error


def test_the_trace_context_is_stored_on_the_attempt_row(tracing_on: Any) -> None:
    order = services.create("obs-order", start=True)

    [start] = by_name(tracing_on)["workflows.start"]
    reserve = Attempt.objects.get(instance=order, target="reserve-stock")
    assert reserve.trace_context["traceparent"].startswith(
        f"00-{start.context.trace_id:032x}-{start.context.span_id:016x}-")


def test_a_sweep_that_fires_a_timer_has_a_span_and_the_timer_continues_its_trace(
        tracing_on: Any) -> None:
    delivery = services.create("obs-delivery", start=True)
    services.signal("obs-delivery", "delivered", instance=delivery)
    [signal] = by_name(tracing_on)["workflows.signal"]
    tracing_on.clear()
    services.sweep(now=now_datetime() + timedelta(days=15))

    spans = by_name(tracing_on)
    [sweep] = spans["workflows.sweep"]
    [fired] = spans["workflows.deadline_due"]
    assert sweep.attributes["workflows.sweep.deadline_due"] == 1
    # The timer was set by the signal's command: its firing is in that trace, linked to
    # the sweep that fired it.
    assert fired.parent.span_id == signal.context.span_id
    assert [link.context.span_id for link in fired.links] == [sweep.context.span_id]
    assert fired.attributes["workflows.outcome"] == "moved"


def test_a_sweep_that_fired_nothing_makes_no_span(tracing_on: Any) -> None:
    services.sweep()
    assert "workflows.sweep" not in by_name(tracing_on)
