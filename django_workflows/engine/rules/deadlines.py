"""Deadlines falling due: a step's timeout, an attempt's timeout, the end of a retry
delay, a task's due date, a signal's timeout, a timer.

Each arrives as ``DeadlineDue(kind, token)``; one whose token is no longer
current is refused as stale (``stale_deadline``).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from ..change import Change
from ..definition import Operation, in_seconds
from ..errors import Refused
from ..messages import operation_timed_out, step_timed_out
from ..snapshot import ErrorInfo, OperationSnapshot
from .results import operation_failed, retry_operation
from .tasks import task_due
from .waits import signal_timeout_due, timer_due
from .work import add_stopping, queue_attempt, stop_work

if TYPE_CHECKING:
    from ..commands import DeadlineDue


def deadline_due(c: Change, command: DeadlineDue) -> None:
    if command.kind == "step-timeout":
        step_timeout_due(c, command.token)
    elif command.kind == "attempt-timeout":
        attempt_timeout_due(c, command.token)
    elif command.kind == "retry":
        retry_due(c, command.token)
    elif command.kind == "task-due":
        task_due(c, command.token)
    elif command.kind == "signal-timeout":
        signal_timeout_due(c, command.token)
    elif command.kind == "timer":
        timer_due(c, command.token)
    else:
        raise Refused("stale_deadline", f"Unknown deadline kind {command.kind!r}")


def due_operation(c: Change, token: str, statuses: tuple[str, ...], stale: str
                  ) -> tuple[OperationSnapshot, Operation]:
    """The operation whose deadline ``token`` names, while in ``statuses``; else stale."""
    operation = next((op for op in c.snap.operations
                      if op.token == token and op.status in statuses), None)
    definition = c.definition.find_operation(operation.id) if operation is not None else None
    if operation is None or definition is None:
        raise Refused("stale_deadline", stale)
    return operation, definition


def retry_due(c: Change, token: str) -> None:
    operation, definition = due_operation(c, token, ("waiting",), "The retry is no longer due")
    queue_attempt(c, operation, definition, operation.attempt + 1, token)


def step_timeout_due(c: Change, token: str) -> None:
    run = c.snap.step_run
    if run is None or run.token != token or c.snap.status != "running" or run.deadline is None:
        raise Refused("stale_deadline", "The step deadline is no longer current")
    message = step_timed_out(run.step, in_seconds(c.definition.step(run.step).timeout))
    c.set(step_run=replace(run, deadline=None))  # fired: nothing left to clear
    stop_work(c, message, step=run.step, error_name="WorkflowStepTimeoutError")
    c.fail(message, run.step)


def attempt_timeout_due(c: Change, token: str) -> None:
    operation, definition = due_operation(c, token, ("running", "retrying"),
                                          "The attempt deadline is no longer current")
    error = ErrorInfo("OperationTimeoutError",
                      operation_timed_out(in_seconds(definition.timeout)))
    operation = replace(operation, error=error)
    retries_left = operation.attempt < definition.max_attempts
    add_stopping(c, token, "operation", operation.id, error.message, resume=retries_left)
    if retries_left:
        retry_operation(c, operation, definition, wait_for_stop=True)
    else:
        operation_failed(c, operation)
