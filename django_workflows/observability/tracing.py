"""OpenTelemetry spans, made through the API (the ``otel`` extra): the project configures
the SDK and its exporter (docs/observability.md).

- A span per unit of work (``workflows.next``, ``workflows.signal``,
  ``workflows.deadline_due``, ...): a child of the current span, so of the request's when
  opentelemetry-instrumentation-django made one, with the workflow, the instance, the
  command, the revisions before and after, the outcome and the refusal's code.
- The trace context of that span is stored on the rows of the attempts and deadlines it
  hands out (``trace_context``): the worker's span of an attempt (``workflows.attempt``)
  is its child, across the broker and a worker's restart; what a deadline fires is a child
  of the span that set it. A request that starts an order and the payment a worker makes
  for it are one trace.
- A span per turn of the sweep that fired something (``workflows.sweep``), made once the
  first thing fires; what it fires links to it.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from ..models import Attempt, Deadline
from ..services.reports import SweepTurnReport, UnitReport
from .observers import AttemptRun, Observer

tracer = trace.get_tracer("django_workflows")

# A worker's report is recorded on its attempt's span; the others get spans of their own.
OWN_SPANS = {"command", "create", "signal", "fire"}


@dataclass
class SweepTurn:
    span: Span
    fired: dict[str, int] = field(default_factory=dict)  # by command


class TracingObserver(Observer):
    def __init__(self) -> None:
        self._local = threading.local()

    # -- units of work ------------------------------------------------------------------

    def unit_done(self, report: UnitReport) -> None:
        if not report.happened:
            return
        if report.kind in OWN_SPANS:
            span = self._span_of(report)
        else:  # a worker's report: on its attempt's span, current while it runs
            span = trace.get_current_span()
            self._describe(span, report)
        if report.attempts_made or report.deadlines_made:
            self._carry(trace.set_span_in_context(span), report)

    def _span_of(self, report: UnitReport) -> Span:
        """The unit's span, made now that it ended, from when it began: a child of the
        current span (the request's), or of the command that set the deadline it fired,
        linked to the turn of the sweep that fired it."""
        parent: Context | None = None
        links: list[Link] = []
        if report.turn is not None:  # fired by the sweep: its turn's span exists from now on
            turn = self._turn(report.turn)
            turn.fired[report.command] = turn.fired.get(report.command, 0) + 1
            parent = trace.set_span_in_context(turn.span)
            carrier = report.fired.trace_context if report.fired is not None else None
            if carrier:  # a deadline's: continue the trace of the command that set it
                links.append(Link(turn.span.get_span_context()))
                parent = propagate.extract(carrier)
        span = tracer.start_span(
            f"workflows.{report.command}", context=parent, links=links,
            start_time=report.started_ns, record_exception=False,
            set_status_on_exception=False,
            attributes={"workflows.kind": report.kind, "workflows.command": report.command})
        self._describe(span, report)
        span.end()
        return span

    @staticmethod
    def _describe(span: Span, report: UnitReport) -> None:
        span.set_attributes(_attributes({
            "workflows.workflow": report.workflow,
            "workflows.instance_id": report.instance_id
            or (str(report.instance.pk) if report.instance is not None else None),
            "workflows.revision_before": report.revision_before,
            "workflows.revision_after": report.revision_after,
            "workflows.outcome": report.outcome,
            "workflows.refusal_code": report.code or None,
        }))
        if report.outcome == "error" and report.error is not None:
            span.record_exception(report.error)
            span.set_status(Status(StatusCode.ERROR, f"{type(report.error).__name__}: "
                                                     f"{report.error}"))

    @staticmethod
    def _carry(context: Context, report: UnitReport) -> None:
        """Store the trace context on the attempt and deadline rows the unit made, before
        its work goes to the runner (the report comes first after the commit): a worker's
        span, and what a deadline fires, continue the trace."""
        carrier: dict[str, str] = {}
        propagate.inject(carrier, context=context)
        if not carrier:
            return
        if report.attempts_made:
            Attempt.objects.filter(token__in=report.attempts_made).update(
                trace_context=carrier)
        for token, kind in report.deadlines_made:
            Deadline.objects.filter(token=token, kind=kind).update(trace_context=carrier)

    # -- attempts -----------------------------------------------------------------------

    def attempt(self, run: AttemptRun) -> Any:
        _, carrier = run.stored()
        work = run.claimed.work
        return tracer.start_as_current_span(
            "workflows.attempt", kind=SpanKind.CONSUMER,
            context=propagate.extract(carrier) if carrier else None,
            record_exception=False, set_status_on_exception=False,
            attributes=_attributes({"workflows.workflow": run.workflow,
                                    "workflows.instance_id": work.snapshot.id,
                                    "workflows.attempt.kind": work.kind,
                                    "workflows.attempt.target": run.target,
                                    "workflows.attempt.number": work.attempt,
                                    "workflows.attempt.token": run.token}))

    def attempt_done(self, run: AttemptRun) -> None:
        span = trace.get_current_span()
        span.set_attribute("workflows.attempt.outcome", run.result)
        if run.outcome is not None and run.outcome.error is not None:
            span.set_attribute("workflows.attempt.error", run.outcome.error.name)
        if run.error is not None:
            span.record_exception(run.error)
            span.set_status(Status(StatusCode.ERROR, f"{type(run.error).__name__}: "
                                                     f"{run.error}"))
        elif run.result == "failed":
            span.set_status(Status(StatusCode.ERROR, run.outcome.error.message
                                   if run.outcome and run.outcome.error else "failed"))

    # -- the sweep ----------------------------------------------------------------------

    def sweep_done(self, report: SweepTurnReport) -> None:
        turn = self._turns().pop(report.started_ns, None)
        if turn is None:  # it fired nothing: no span
            return
        turn.span.set_attributes({f"workflows.sweep.{name}": count
                                  for name, count in sorted(turn.fired.items())})
        turn.span.end(end_time=report.ended_ns)

    def _turns(self) -> dict[int, SweepTurn]:
        turns: dict[int, SweepTurn] = self._local.__dict__.setdefault("turns", {})
        return turns

    def _turn(self, started_ns: int) -> SweepTurn:
        """The span of the sweep's turn that began at ``started_ns``, made when it first
        fires something (a trace of its own)."""
        turns = self._turns()
        if started_ns not in turns:
            turns[started_ns] = SweepTurn(tracer.start_span(
                "workflows.sweep", start_time=started_ns, context=Context()))
        return turns[started_ns]


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Span attributes, without those that are not known (OpenTelemetry drops None)."""
    return {key: value for key, value in values.items() if value is not None}



