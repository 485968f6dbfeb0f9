"""A step's work coming back: attempts claimed, finished or interrupted.

Each arrives as a command (``AttemptStarted``, ``AttemptFinished``,
``AttemptInterrupted``) naming a token; it counts only while that token is
still current, otherwise it is refused as stale.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..bounds import MAX_LOGS
from ..change import Change
from ..definition import Operation, in_seconds
from ..errors import Refused
from ..messages import (
    INTERRUPTED_BRANCH,
    INTERRUPTED_COMPENSATION,
    INTERRUPTED_OPERATION,
    INTERRUPTED_WORKFLOW,
)
from ..outcome import ClearDeadline, SetDeadline
from ..snapshot import MOVING, BranchSnapshot, ErrorInfo, OperationSnapshot, StoppingAttempt
from . import durable, saga
from .work import put_branch, put_operation, queue_attempt

if TYPE_CHECKING:
    from ..commands import AttemptFinished, AttemptInterrupted, AttemptOutcome, AttemptStarted


def owner_of(c: Change, token: str) -> tuple[str, Any]:
    """What ``token`` names: an operation, a branch, a compensation or a stopping attempt."""
    for operation in c.snap.operations:
        if operation.token == token:
            return "operation", operation
    for branch in c.snap.parallel:
        if branch.token == token:
            return "branch", branch
    plan = c.snap.rollback
    if plan is not None:
        for item in plan.items:
            if item.token == token and item.status == "running":
                return "compensation", item
    for stopping in c.snap.stopping:
        if stopping.token == token:
            return "stopping", stopping
    raise Refused("stale_attempt", f"Attempt {token} is no longer current")


def attempt_started(c: Change, command: AttemptStarted) -> None:
    token = command.token
    at = c.env.now if command.at is None else command.at
    kind, owner = owner_of(c, token)
    if kind == "operation" and owner.status == "queued":
        definition = c.definition.find_operation(owner.id)
        status = "running" if owner.attempt == 1 else "retrying"
        put_operation(c, replace(owner, status=status, error=None,  # a new attempt
                                 started_at=owner.started_at or at))
        c.emit("operation-started", step=owner.step, operation=owner.id, attempt=owner.attempt,
               at=at)
        timeout = in_seconds(definition.timeout) if definition is not None else None
        if timeout:
            c.effect(SetDeadline(c.snap.id, "attempt-timeout", token, at + timeout))
        return
    if kind == "branch" and not owner.claimed:  # recorded in place: a claim is no mark
        c.set(parallel=tuple(replace(b, claimed=True) if b is owner else b
                             for b in c.snap.parallel))
        c.emit("branch-started", step=owner.step, branch=owner.id, at=at)
        return
    if kind == "compensation" and not owner.claimed and c.snap.rollback is not None:
        plan = c.snap.rollback
        c.set(rollback=replace(plan, items=tuple(
            replace(i, claimed=True) if i is owner else i for i in plan.items)))
        c.emit("compensation-started", step=owner.step, item=owner.label, at=at)
        return
    raise Refused("stale_attempt", f"Attempt {token} was already claimed or stopped")


def attempt_finished(c: Change, command: AttemptFinished) -> None:
    kind, owner = owner_of(c, command.token)
    if kind == "operation":
        operation_finished(c, owner, command.outcome)
    elif kind == "branch":
        branch_finished(c, owner, command.outcome)
    elif kind == "compensation":
        saga.compensation_finished(c, owner, command.outcome)
    else:
        stop_acknowledged(c, owner, command.outcome)


def operation_finished(c: Change, operation: OperationSnapshot, outcome: AttemptOutcome) -> None:
    definition = c.definition.find_operation(operation.id)
    keep = definition.max_logs if definition is not None else MAX_LOGS
    logs = (*operation.logs, *outcome.logs)[-keep:] if keep else ()
    if definition is not None and definition.timeout:
        c.effect(ClearDeadline(c.snap.id, operation.token or ""))
    if outcome.suspension is not None and definition is not None:
        durable.suspend(c, replace(operation, logs=logs,
                                   progress=outcome.progress or operation.progress),
                        definition, outcome.suspension)
        return
    if outcome.ok:
        put_operation(c, replace(operation, status="succeeded", result=outcome.value,
                                 error=None, completed_at=c.env.now, token=None,
                                 children=outcome.children, logs=logs,
                                 progress=outcome.progress or operation.progress))
        c.emit("operation-succeeded", step=operation.step, operation=operation.id,
               attempt=operation.attempt)
        if operation.step == c.snap.current_step:
            c.unsettled = True
        return
    error = outcome.error or ErrorInfo("Error", "Operation failed")
    operation = replace(operation, error=error, logs=logs,
                        progress=outcome.progress or operation.progress)
    if outcome.blocked:
        put_operation(c, replace(operation, status="blocked", completed_at=c.env.now,
                                 token=None))
        c.emit("operation-blocked", step=operation.step, operation=operation.id,
               error=error.message)
        c.end_step_run()
        c.set(status="blocked", errors=(error.message,))
        return
    if (definition is not None and operation.attempt < definition.max_attempts
            and not outcome.replay_mismatch):  # its code changed: a retry fails the same
        retry_operation(c, operation, definition)
        return
    operation_failed(c, operation)


def retry_operation(c: Change, operation: OperationSnapshot, definition: Operation,
                    wait_for_stop: bool = False) -> None:
    following = operation.attempt + 1
    c.emit("operation-retrying", step=operation.step, operation=operation.id,
           attempt=following, delay=definition.delay_before(following),
           error=operation.error.message if operation.error else None)
    token = c.new_token()
    if wait_for_stop:  # the next attempt starts once the timed-out one stopped
        put_operation(c, replace(operation, status="waiting", token=token, retry_at=None))
    else:
        schedule_next_attempt(c, operation, definition, token)


def schedule_next_attempt(c: Change, operation: OperationSnapshot, definition: Operation,
                          token: str) -> None:
    """Queue the operation's next attempt now, or wait (a retry deadline) for its delay."""
    following = operation.attempt + 1
    delay = definition.delay_before(following)
    if delay > 0:
        put_operation(c, replace(operation, status="waiting", token=token,
                                 retry_at=c.env.now + delay))
        c.effect(SetDeadline(c.snap.id, "retry", token, c.env.now + delay))
    else:
        queue_attempt(c, operation, definition, following, token)


def operation_failed(c: Change, operation: OperationSnapshot) -> None:
    error = operation.error or ErrorInfo("Error", "Operation failed")
    put_operation(c, replace(operation, status="failed", completed_at=c.env.now, token=None))
    c.emit("operation-failed", step=operation.step, operation=operation.id, error=error.message)
    if c.snap.status in MOVING and operation.step == c.snap.current_step:
        c.fail(error.message, operation.step, operation=operation.id)


def branch_finished(c: Change, branch: BranchSnapshot, outcome: AttemptOutcome) -> None:
    error = None if outcome.ok else (outcome.error.message if outcome.error else "failed")
    put_branch(c, replace(branch, status="succeeded" if outcome.ok else "failed", error=error,
                          token=None))
    c.emit("branch-succeeded" if outcome.ok else "branch-failed", step=branch.step,
           branch=branch.id, error=error)  # None when it succeeded
    if branch.step == c.snap.current_step:
        c.unsettled = True


def stop_acknowledged(c: Change, stopping: StoppingAttempt, outcome: AttemptOutcome | None
                      ) -> None:
    """A stopped attempt ended; its result is discarded (a compensation's is kept, and a
    branch that succeeded anyway is marked, so that a rollback compensates it)."""
    c.set(stopping=tuple(s for s in c.snap.stopping if s.token != stopping.token))
    c.emit("attempt-stopped", kind=stopping.kind, target=stopping.target,
           reason=stopping.reason, finished=outcome is not None)
    if stopping.kind == "compensation" and outcome is not None and outcome.ok:
        saga.compensation_done_late(c, stopping.target, outcome.value)
    if stopping.kind == "branch" and outcome is not None and outcome.ok:
        # Its result is discarded, but what it did happened: a rollback must undo it.
        c.set(parallel=tuple(replace(b, finished_late=True)
                             if f"{b.step}:{b.id}" == stopping.target
                             and b.status == "cancelled" else b
                             for b in c.snap.parallel))
    if not stopping.resume:
        return
    operation = c.snap.operation(stopping.target)
    definition = c.definition.find_operation(stopping.target)
    if (operation is None or definition is None or operation.status != "waiting"
            or operation.retry_at is not None):
        return
    schedule_next_attempt(c, operation, definition, operation.token or "")


def attempt_interrupted(c: Change, command: AttemptInterrupted) -> None:
    """The worker of an attempt stopped sending heartbeats."""
    kind, owner = owner_of(c, command.token)
    if kind == "stopping":
        stop_acknowledged(c, owner, None)
        return
    if kind == "compensation":
        saga.compensation_failed(c, owner, INTERRUPTED_COMPENSATION, interrupted=True)
        return
    if kind == "operation":
        error = ErrorInfo("OperationInterruptedError", INTERRUPTED_OPERATION)
        definition = c.definition.find_operation(owner.id)
        if (definition is not None and definition.durable
                and owner.attempt < definition.max_attempts):
            # Durable code replays without running its journaled steps again: retried.
            retry_operation(c, replace(owner, error=error), definition)
            return
        put_operation(c, replace(owner, status="failed", error=error, token=None,
                                 completed_at=c.env.now))
        c.emit("operation-failed", step=owner.step, operation=owner.id, error=error.message)
        label = owner.id
    else:
        put_branch(c, replace(owner, status="failed", error=INTERRUPTED_BRANCH, token=None))
        label = f"{owner.step}:{owner.id}"
    c.end_step_run()
    c.set(status="failed", errors=(*c.snap.errors, INTERRUPTED_WORKFLOW))
    c.emit("resume", step=c.snap.current_step, interrupted=label)
    c.emit("error", step=owner.step, error=INTERRUPTED_WORKFLOW)
