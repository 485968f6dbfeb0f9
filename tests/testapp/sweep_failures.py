"""A real failure of the sweep, for the tests that show it (the admin, the metrics).

An instance waits on a timer of a workflow that a deploy then removed: the sweep that
finds the timer due raises ``UnknownWorkflow`` for it, records the failure, and after
``SWEEP_RETRIES`` failures in a row sets it aside (``services/sweep_items.py``).
Registering the workflow again is the deploy that mends it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta

from django.utils import timezone

from django_workflows import Step, Timer, Transition, Workflow, registry, services
from django_workflows.models import SweepFailure, WorkflowInstance

WORKFLOW = "removed-timer"
ERROR = f'UnknownWorkflow: No workflow "{WORKFLOW}" is registered'


def removed_timer() -> Workflow:
    return Workflow(id=WORKFLOW, title="A timer a deploy removed",
                    steps=[Step("wait", wait=Timer(after=60)), Step("after")],
                    transitions=[Transition("wait", "after")])


def bring_back() -> None:
    """The deploy that brings the workflow back."""
    registry.register(removed_timer(), origin=__name__)


@contextmanager
def instance_of_a_removed_workflow() -> Iterator[WorkflowInstance]:
    """An instance waiting on its timer, of a workflow no longer registered (for the
    block: a test that brought it back has it removed at the end)."""
    bring_back()
    try:
        instance = services.create(WORKFLOW, start=True)
    finally:
        registry.unregister(WORKFLOW)
    try:
        yield instance
    finally:
        registry.unregister(WORKFLOW)


def later(days: float = 1) -> datetime:
    """A time past the timer's due time."""
    return timezone.now() + timedelta(days=days)


def sweep_until_set_aside(instance: WorkflowInstance) -> SweepFailure:
    """Sweep at each time its failed item is tried again, until it is set aside."""
    now = later()
    services.sweep(now=now)
    for _ in range(20):
        failure = SweepFailure.objects.get(instance=instance)
        if failure.set_aside:
            return failure
        now = (failure.retry_at or now) + timedelta(seconds=0.1)
        services.sweep(now=now)
    raise AssertionError("The sweep never set the item aside")
