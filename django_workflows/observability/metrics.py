"""Prometheus counters and histograms, fed by :class:`MetricsObserver` (the ``metrics``
extra; docs/observability.md says what each one means).

They live in :data:`REGISTRY`, ours alone, which the ``/metrics`` view reads with the
gauges a scrape computes (``gauges.py``). Workers are processes of their own: with
``PROMETHEUS_MULTIPROC_DIR`` set in every process's environment (before it starts),
prometheus-client writes each process's values to files there, and the view adds up
every process's (``views.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Histogram

from .. import engine
from ..services.reports import UnitReport
from .observers import AttemptRun, Observer

PREFIX = "django_workflows"
REGISTRY = CollectorRegistry(auto_describe=True)

# Commands take milliseconds; work and waits take seconds to days.
FAST = (.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10)
SLOW = (.01, .1, .5, 1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 86400, 7 * 86400)
WAITS = FAST + SLOW[5:]  # a wait for a worker or the sweep: milliseconds, or a backlog

COMMANDS = Counter(
    f"{PREFIX}_commands", "Units of work applied to an instance, by workflow, command and "
    "outcome (moved, refused, replayed, error) with the refusal's code.",
    ["workflow", "command", "outcome", "code"], registry=REGISTRY)
COMMAND_SECONDS = Histogram(
    f"{PREFIX}_command_duration_seconds", "How long a unit of work took, its wait for the "
    "row lock included.", ["workflow", "command"], buckets=FAST, registry=REGISTRY)
LOCK_SECONDS = Histogram(
    f"{PREFIX}_lock_held_seconds", "How long a unit of work held the instance's row lock, "
    "from the lock to the commit.", ["workflow", "command"], buckets=FAST, registry=REGISTRY)
ATTEMPTS = Counter(
    f"{PREFIX}_attempts", "Attempts run by workers, by workflow, operation (or branch) and "
    "outcome (succeeded, failed, blocked, dropped, error).",
    ["workflow", "operation", "outcome"], registry=REGISTRY)
ATTEMPT_SECONDS = Histogram(
    f"{PREFIX}_attempt_duration_seconds", "How long an attempt ran on its worker, its "
    "report included.", ["workflow", "operation"], buckets=SLOW, registry=REGISTRY)
ATTEMPT_LAG = Histogram(
    f"{PREFIX}_attempt_start_lag_seconds", "From an attempt handed out (or again, by the "
    "sweep) to a worker's claim.", ["workflow"], buckets=WAITS, registry=REGISTRY)
DEADLINE_LATENESS = Histogram(
    f"{PREFIX}_deadline_lateness_seconds", "How late the sweep fired a deadline (a step's "
    "or task's due time, a retry's delay, a timer).", ["kind"], buckets=WAITS,
    registry=REGISTRY)
DEADLINES = Counter(
    f"{PREFIX}_deadlines_fired", "Deadlines that fired and moved their instance, by workflow "
    "and kind (timer, step-timeout, retry, task-due, signal-timeout, attempt-timeout).",
    ["workflow", "kind"], registry=REGISTRY)
SIGNALS = Counter(
    f"{PREFIX}_signals_delivered", "Signals an instance took, by workflow and signal.",
    ["workflow", "signal"], registry=REGISTRY)
STALE = Counter(
    f"{PREFIX}_stale_results_dropped", "Results of attempts that were no longer current "
    "(fenced off), dropped.", ["workflow"], registry=REGISTRY)
INTERRUPTED = Counter(
    f"{PREFIX}_interrupted_attempts_recovered", "Attempts whose worker died (no heartbeat), "
    "recovered by the sweep.", ["workflow"], registry=REGISTRY)
TASK_SECONDS = Histogram(
    f"{PREFIX}_task_decision_seconds", "A task's time from open to decided, by workflow and "
    "step.", ["workflow", "step"], buckets=SLOW, registry=REGISTRY)


_children: dict[tuple[Any, ...], Any] = {}


def child(metric: Counter | Histogram, *labels: str) -> Any:
    """``metric.labels(*labels)``, kept: the client's own look-up validates and locks."""
    key = (metric, *labels)
    found = _children.get(key)
    if found is None:
        found = _children[key] = metric.labels(*labels)
    return found


class MetricsObserver(Observer):
    """Counts and times what the services report."""

    def unit_done(self, unit: UnitReport) -> None:
        if unit.fired is not None:  # the sweep fired a deadline row: how late
            child(DEADLINE_LATENESS, unit.fired.kind).observe(
                max(unit.started_at - unit.fired.due_at.timestamp(), 0.0))
        if not unit.happened:
            return
        workflow = unit.workflow or ""
        child(COMMANDS, workflow, unit.command, unit.outcome, unit.code).inc()
        child(COMMAND_SECONDS, workflow, unit.command).observe(unit.seconds)
        held = unit.lock_held
        if held is not None:
            child(LOCK_SECONDS, workflow, unit.command).observe(held)
        command = unit.detail
        if isinstance(command, engine.AttemptFinished) and unit.outcome == "refused":
            child(STALE, workflow).inc()  # fenced off: no longer the current attempt
        if not unit.moved or unit.applied is None:
            return
        if isinstance(command, engine.DeadlineDue):
            child(DEADLINES, workflow, command.kind).inc()
        elif isinstance(command, engine.ReceiveSignal):
            child(SIGNALS, workflow, command.signal).inc()
        elif isinstance(command, engine.AttemptInterrupted):
            child(INTERRUPTED, workflow).inc()
        for effect in unit.effects:
            if isinstance(effect, engine.SaveTask) and effect.task.status == "done":
                task = effect.task
                if task.opened_at is not None and task.completed_at is not None:
                    child(TASK_SECONDS, workflow, task.step).observe(
                        max(task.completed_at - task.opened_at, 0.0))

    def attempt_done(self, run: AttemptRun) -> None:
        workflow, target = run.workflow, run.target
        child(ATTEMPTS, workflow, target, run.result).inc()
        child(ATTEMPT_SECONDS, workflow, target).observe((run.ended or 0.0) - run.started)
        enqueued_at, _ = run.stored()
        if enqueued_at is not None:
            child(ATTEMPT_LAG, workflow).observe(
                max(run.claimed.at - enqueued_at.timestamp(), 0.0))


def families() -> Sequence[str]:
    """The names of our metric families, as a scrape shows them (``_total`` and all)."""
    return [metric.name for metric in REGISTRY.collect()]
