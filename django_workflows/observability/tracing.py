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
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from ..models import Attempt, Deadline
from .observers import AttemptRun, Observer, Unit

tracer = trace.get_tracer("django_workflows")

# A worker's report is recorded on its attempt's span; the others get spans of their own.
OWN_SPANS = {"command", "create", "signal", "fire"}


@dataclass
class SweepTurn:
    started_ns: int = field(default_factory=time.time_ns)
    span: Span | None = None
    fired: dict[str, int] = field(default_factory=dict)  # by command


class TracingObserver(Observer):
    def __init__(self) -> None:
        self._local = threading.local()

    # -- units of work ------------------------------------------------------------------

    def unit(self, unit: Unit) -> AbstractContextManager[Any] | None:
        if unit.kind not in OWN_SPANS:
            return None
        parent: Context | None = None
        links: list[Link] = []
        carrier = self._local.__dict__.pop("deadline", None) if unit.kind == "fire" else None
        turn = self._turn()
        if turn is not None:  # fired by the sweep: its span exists from now on
            sweep = self._sweep_span(turn)
            turn.fired[unit.command] = turn.fired.get(unit.command, 0) + 1
            parent = trace.set_span_in_context(sweep)
            if carrier:
                links.append(Link(sweep.get_span_context()))
        if carrier:  # a deadline's: continue the trace of the command that set it
            parent = propagate.extract(carrier)
        return tracer.start_as_current_span(
            f"workflows.{unit.command}", context=parent, links=links,
            record_exception=False, set_status_on_exception=False,
            attributes={"workflows.kind": unit.kind, "workflows.command": unit.command})

    def unit_done(self, unit: Unit) -> None:
        if not unit.happened:
            return
        span = trace.get_current_span()  # the unit's own, or its attempt's (a report)
        span.set_attributes(_attributes({
            "workflows.workflow": unit.workflow,
            "workflows.instance_id": unit.instance_id
            or (str(unit.instance.pk) if unit.instance is not None else None),
            "workflows.revision_before": unit.revision_before,
            "workflows.revision_after": unit.revision_after,
            "workflows.outcome": unit.outcome,
            "workflows.refusal_code": unit.code or None,
        }))
        if unit.outcome == "error" and unit.error is not None:
            span.record_exception(unit.error)
            span.set_status(Status(StatusCode.ERROR, f"{type(unit.error).__name__}: "
                                                     f"{unit.error}"))

    # -- rows handed out ----------------------------------------------------------------

    def handing_out(self, attempts: Sequence[Attempt], deadlines: Sequence[Deadline]) -> None:
        carrier: dict[str, str] = {}
        propagate.inject(carrier)  # the current span: the unit's, or the attempt's
        if not carrier:
            return
        for attempt in attempts:
            attempt.trace_context = carrier
        for deadline in deadlines:
            deadline.trace_context = carrier

    def deadline_due(self, deadline: Deadline) -> None:
        # Read by the unit that fires it, next on this thread.
        self._local.deadline = deadline.trace_context

    # -- attempts -----------------------------------------------------------------------

    def attempt(self, run: AttemptRun) -> AbstractContextManager[Any] | None:
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

    def sweep(self) -> AbstractContextManager[Any] | None:
        return self._sweeping()

    @contextmanager
    def _sweeping(self) -> Iterator[None]:
        outer = self._turn()
        turn = self._local.turn = SweepTurn()
        try:
            yield
        finally:
            self._local.turn = outer
            if turn.span is not None:
                turn.span.set_attributes({f"workflows.sweep.{name}": count
                                          for name, count in sorted(turn.fired.items())})
                turn.span.end()

    def _turn(self) -> SweepTurn | None:
        turn: SweepTurn | None = getattr(self._local, "turn", None)
        return turn

    @staticmethod
    def _sweep_span(turn: SweepTurn) -> Span:
        if turn.span is None:
            turn.span = tracer.start_span("workflows.sweep", start_time=turn.started_ns,
                                          context=Context())  # a trace of its own
        return turn.span


def _attributes(values: Mapping[str, Any]) -> dict[str, Any]:
    """Span attributes, without those that are not known (OpenTelemetry drops None)."""
    return {key: value for key, value in values.items() if value is not None}
