"""A step's work coming back: attempts claimed, finished or interrupted, deadlines due.

Each arrives as a command (``AttemptStarted``, ``AttemptFinished``,
``AttemptInterrupted``, ``DeadlineDue``) naming a token; it counts only while
that token is still current, otherwise it is refused as stale.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .commands import AttemptOutcome, DeadlineKind
from .definition import Operation, format_seconds, operation_timeout_message
from .machine import Refused
from .outcome import ClearDeadline, SetDeadline
from .snapshot import BranchSnapshot, ErrorInfo, OperationSnapshot, StoppingAttempt
from .stepwork import (
    INTERRUPTED_BRANCH,
    INTERRUPTED_COMPENSATION,
    INTERRUPTED_OPERATION,
    INTERRUPTED_WORKFLOW,
    MAX_LOGS,
    StepWorkMixin,
)


class WorkResultsMixin(StepWorkMixin):
    """Built on the handing-out side: a retry queues an attempt as a first one does."""

    def owner_of(self, token: str) -> tuple[str, Any]:
        for operation in self.snap.operations:
            if operation.token == token:
                return "operation", operation
        for branch in self.snap.parallel:
            if branch.token == token:
                return "branch", branch
        plan = self.snap.rollback
        if plan is not None:
            for item in plan.items:
                if item.token == token and item.status == "running":
                    return "compensation", item
        for stopping in self.snap.stopping:
            if stopping.token == token:
                return "stopping", stopping
        raise Refused("stale_attempt", f"Attempt {token} is no longer current")

    def attempt_started(self, token: str) -> None:
        kind, owner = self.owner_of(token)
        if kind == "operation" and owner.status == "queued":
            definition = self.definition.find_operation(owner.id)
            status = "running" if owner.attempt == 1 else "retrying"
            self.put_operation(replace(owner, status=status, error=None,  # a new attempt
                                       started_at=owner.started_at or self.env.now))
            self.emit("operation-started", step=owner.step, operation=owner.id,
                      attempt=owner.attempt)
            if definition is not None and definition.timeout:
                self.effect(SetDeadline(self.snap.id, "attempt-timeout", token,
                                        self.env.now + definition.timeout))
            return
        if kind == "branch" and not owner.claimed:  # recorded in place: a claim is no mark
            self.set(parallel=tuple(replace(b, claimed=True) if b is owner else b
                                    for b in self.snap.parallel))
            return
        if kind == "compensation" and not owner.claimed and self.snap.rollback is not None:
            plan = self.snap.rollback
            self.set(rollback=replace(plan, items=tuple(
                replace(i, claimed=True) if i is owner else i for i in plan.items)))
            return
        raise Refused("stale_attempt", f"Attempt {token} was already claimed or stopped")

    def attempt_finished(self, token: str, outcome: AttemptOutcome) -> None:
        kind, owner = self.owner_of(token)
        if kind == "operation":
            self.operation_finished(owner, outcome)
        elif kind == "branch":
            self.branch_finished(owner, outcome)
        elif kind == "compensation":
            self.compensation_finished(owner, outcome)
        else:
            self.stop_acknowledged(owner, outcome)

    def operation_finished(self, operation: OperationSnapshot, outcome: AttemptOutcome) -> None:
        definition = self.definition.find_operation(operation.id)
        logs = (*operation.logs, *outcome.logs)[-MAX_LOGS:]
        if definition is not None and definition.timeout:
            self.effect(ClearDeadline(self.snap.id, operation.token or ""))
        if outcome.ok:
            self.put_operation(replace(operation, status="succeeded", result=outcome.value,
                                       error=None, completed_at=self.env.now, token=None,
                                       children=outcome.children, logs=logs,
                                       progress=outcome.progress or operation.progress))
            self.emit("operation-succeeded", step=operation.step, operation=operation.id,
                      attempt=operation.attempt)
            if operation.step == self.snap.current_step:
                self.advance_work()
            return
        error = outcome.error or ErrorInfo("Error", "Operation failed")
        operation = replace(operation, error=error, logs=logs,
                            progress=outcome.progress or operation.progress)
        if outcome.blocked:
            self.put_operation(replace(operation, status="blocked", completed_at=self.env.now,
                                       token=None))
            self.emit("operation-blocked", step=operation.step, operation=operation.id,
                      error=error.message)
            self.end_step_run()
            self.set(status="blocked", errors=(error.message,))
            return
        if definition is not None and operation.attempt < definition.max_attempts:
            self.retry_operation(operation, definition)
            return
        self.operation_failed(operation)

    def retry_operation(self, operation: OperationSnapshot, definition: Operation,
                        wait_for_stop: bool = False) -> None:
        following = operation.attempt + 1
        self.emit("operation-retrying", step=operation.step, operation=operation.id,
                  attempt=following, delay=definition.delay_before(following),
                  error=operation.error.message if operation.error else None)
        token = self.new_token()
        if wait_for_stop:  # the next attempt starts once the timed-out one stopped
            self.put_operation(replace(operation, status="waiting", token=token, retry_at=None))
        else:
            self.schedule_next_attempt(operation, definition, token)

    def schedule_next_attempt(self, operation: OperationSnapshot, definition: Operation,
                              token: str) -> None:
        """Queue the operation's next attempt now, or wait (a retry deadline) for its delay."""
        following = operation.attempt + 1
        delay = definition.delay_before(following)
        if delay > 0:
            self.put_operation(replace(operation, status="waiting", token=token,
                                       retry_at=self.env.now + delay))
            self.effect(SetDeadline(self.snap.id, "retry", token, self.env.now + delay))
        else:
            self.queue_attempt(operation, definition, following, token)

    def operation_failed(self, operation: OperationSnapshot) -> None:
        error = operation.error or ErrorInfo("Error", "Operation failed")
        self.put_operation(replace(operation, status="failed", completed_at=self.env.now,
                                   token=None))
        self.emit("operation-failed", step=operation.step, operation=operation.id,
                  error=error.message)
        if (self.snap.status in ("running", "blocked")
                and operation.step == self.snap.current_step):
            self.fail(error.message, operation.step, operation=operation.id)

    def branch_finished(self, branch: BranchSnapshot, outcome: AttemptOutcome) -> None:
        error = None if outcome.ok else (outcome.error.message if outcome.error else "failed")
        self.put_branch(replace(branch, status="succeeded" if outcome.ok else "failed",
                                error=error, token=None))
        if branch.step == self.snap.current_step:
            self.advance_work()

    def stop_acknowledged(self, stopping: StoppingAttempt, outcome: AttemptOutcome | None
                          ) -> None:
        """A stopped attempt ended; its result is discarded (a compensation's is kept, and a
        branch that succeeded anyway is marked, so that a rollback compensates it)."""
        self.set(stopping=tuple(s for s in self.snap.stopping if s.token != stopping.token))
        if stopping.kind == "compensation" and outcome is not None and outcome.ok:
            self.compensation_done_late(stopping.target)
        if stopping.kind == "branch" and outcome is not None and outcome.ok:
            # Its result is discarded, but what it did happened: a rollback must undo it.
            self.set(parallel=tuple(replace(b, finished_late=True)
                                    if f"{b.step}:{b.id}" == stopping.target
                                    and b.status == "cancelled" else b
                                    for b in self.snap.parallel))
        if not stopping.resume:
            return
        operation = self.snap.operation(stopping.target)
        definition = self.definition.find_operation(stopping.target)
        if (operation is None or definition is None or operation.status != "waiting"
                or operation.retry_at is not None):
            return
        self.schedule_next_attempt(operation, definition, operation.token or "")

    # -- deadlines ----------------------------------------------------------

    def deadline_due(self, kind: DeadlineKind, token: str) -> None:
        if kind == "step-timeout":
            self.step_timed_out(token)
        elif kind == "attempt-timeout":
            self.attempt_timed_out(token)
        elif kind == "retry":
            self.retry_due(token)
        else:
            raise Refused("stale_deadline", f"Unknown deadline kind {kind!r}")

    def due_operation(self, token: str, statuses: tuple[str, ...], stale: str
                      ) -> tuple[OperationSnapshot, Operation]:
        """The operation whose deadline ``token`` names, while in ``statuses``; else stale."""
        operation = next((op for op in self.snap.operations
                          if op.token == token and op.status in statuses), None)
        definition = operation and self.definition.find_operation(operation.id)
        if operation is None or definition is None:
            raise Refused("stale_deadline", stale)
        return operation, definition

    def retry_due(self, token: str) -> None:
        operation, definition = self.due_operation(token, ("waiting",),
                                                   "The retry is no longer due")
        self.queue_attempt(operation, definition, operation.attempt + 1, token)

    def step_timed_out(self, token: str) -> None:
        run = self.snap.step_run
        if run is None or run.token != token or self.snap.status != "running" \
                or run.deadline is None:
            raise Refused("stale_deadline", "The step deadline is no longer current")
        step = self.definition.step(run.step)
        message = f'Workflow step "{run.step}" timed out after {format_seconds(step.timeout or 0)}'
        self.set(step_run=replace(run, deadline=None))  # fired: nothing left to clear
        self.stop_work(message, step=run.step, error_name="WorkflowStepTimeoutError")
        self.fail(message, run.step)

    def attempt_timed_out(self, token: str) -> None:
        operation, definition = self.due_operation(token, ("running", "retrying"),
                                                   "The attempt deadline is no longer current")
        error = ErrorInfo("OperationTimeoutError", operation_timeout_message(definition.timeout))
        operation = replace(operation, error=error)
        retries_left = operation.attempt < definition.max_attempts
        self.add_stopping(token, "operation", operation.id, error.message, resume=retries_left)
        if retries_left:
            self.retry_operation(operation, definition, wait_for_stop=True)
        else:
            self.operation_failed(operation)

    # -- interruption -------------------------------------------------------

    def attempt_interrupted(self, token: str) -> None:
        kind, owner = self.owner_of(token)
        if kind == "stopping":
            self.stop_acknowledged(owner, None)
            return
        if kind == "compensation":
            self.compensation_failed(owner, INTERRUPTED_COMPENSATION, interrupted=True)
            return
        if kind == "operation":
            error = ErrorInfo("OperationInterruptedError", INTERRUPTED_OPERATION)
            self.put_operation(replace(owner, status="failed", error=error, token=None,
                                       completed_at=self.env.now))
            self.emit("operation-failed", step=owner.step, operation=owner.id,
                      error=error.message)
            label = owner.id
        else:
            self.put_branch(replace(owner, status="failed", error=INTERRUPTED_BRANCH, token=None))
            label = f"{owner.step}:{owner.id}"
        self.end_step_run()
        self.set(status="failed", errors=(*self.snap.errors, INTERRUPTED_WORKFLOW))
        self.emit("resume", step=self.snap.current_step, interrupted=label)
        self.emit("error", step=owner.step, error=INTERRUPTED_WORKFLOW)
