"""A step's background work handed out: nested child, parallel branches, operations.

Work is handed out as effects (``RunAttempt``, ``SetDeadline``) and told to
stop with ``StopAttempt``; what comes back is handled in ``results``. The
constants below are shared with ``results``, ``rollback``, the worker and the
service layer.
"""

from __future__ import annotations

import contextlib
from dataclasses import replace

from .definition import Operation, Step
from .machine import HookFailed, MachineCore, Refused
from .navigation import check_state
from .outcome import ClearDeadline, RunAttempt, SetDeadline, StopAttempt
from .snapshot import (
    AttemptKind,
    BranchSnapshot,
    ErrorInfo,
    OperationSnapshot,
    StepRun,
    StoppingAttempt,
    WorkflowSnapshot,
    new_operation_snapshot,
    new_snapshot,
)

INTERRUPTED_OPERATION = "Operation was interrupted before workflow recovery"
INTERRUPTED_BRANCH = "Parallel branch was interrupted before workflow recovery"
INTERRUPTED_COMPENSATION = "Compensation was interrupted before workflow recovery"
INTERRUPTED_WORKFLOW = "Workflow work was interrupted and must be retried"
MAX_LOGS = 1000  # log lines an operation keeps, the newest


class StepWorkMixin(MachineCore):
    # -- handing work out ---------------------------------------------------

    def execute_step(self, *, include_enter: bool) -> None:
        """Run ``enter`` (when asked) and hand out the current step's unfinished work."""
        step = self.current_step_definition()
        if step is None:
            return
        self.end_step_run()
        run = StepRun(step=step.id, token=self.new_token(), started_at=self.env.now,
                      deadline=self.env.now + step.timeout if step.timeout and step.has_work
                      else None)
        self.set(step_run=run)
        if run.deadline is not None:
            self.effect(SetDeadline(self.snap.id, "step-timeout", run.token, run.deadline))
        if include_enter and step.enter is not None:
            self.run_hook(step.enter, self.context(), step=step.id)
        if step.nested is not None:
            self.run_nested(step)
        for branch in step.parallel:
            entry = self.snap.branch(step.id, branch.id)
            if entry is None or entry.status not in ("succeeded", "running"):
                self.dispatch_branch(step, branch.id)
        self.advance_work()

    def run_nested(self, step: Step) -> None:
        """Start the step's child instance, or retry it when it failed; never restart it.

        A cancelled child is replaced by a new one. Another step's child still
        running is cancelled first: only one child is attached at a time.
        """
        child = self.current_child()
        if child is None or child.status == "cancelled":
            self.cancel_child()
            definition = self.nested_definition(step)
            try:  # the child's initial state meets its schema, as create() demands
                state = check_state(definition.state_schema, definition.initial_state())
            except Refused as refusal:
                message = f'Nested workflow "{definition.id}" cannot start: {refusal.message}'
                self.fail(message, step.id)
                raise HookFailed(message) from None
            child = new_snapshot(self.env.new_id(), definition.id, definition.version, state,
                                 parent_id=self.snap.id, parent_step=step.id)
            self.set(nested=child)
            command = "start"
        elif child.status in ("failed", "blocked"):
            command = "retry"
        else:
            return
        machine = self.child_machine()
        with contextlib.suppress(HookFailed, Refused):  # recorded in the child
            getattr(machine, command)()
        self.set(nested=machine.snap)
        if machine.snap.status == "failed":
            self.fail_for_child(machine.snap)

    def fail_for_child(self, child: WorkflowSnapshot) -> None:
        message = child.errors[0] if child.errors else f'Nested workflow "{child.workflow}" failed'
        self.fail(message, self.snap.current_step, errors=tuple(child.errors) or (message,),
                  nested=child.id)

    def dispatch_branch(self, step: Step, branch_id: str) -> None:
        token = self.new_token()
        entry = BranchSnapshot(id=branch_id, step=step.id, status="running", token=token)
        self.put_branch(entry)
        self.effect(RunAttempt(self.snap.id, token, "branch", f"{step.id}:{branch_id}"))

    def put_branch(self, entry: BranchSnapshot) -> None:
        """Replace a branch's entry: the old one is removed, the new one appended."""
        others = tuple(b for b in self.snap.parallel
                       if not (b.step == entry.step and b.id == entry.id))
        self.set(parallel=(*others, entry))

    def put_operation(self, operation: OperationSnapshot) -> None:
        """Replace an operation's entry in place, or append a new one."""
        operations = list(self.snap.operations)
        for index, existing in enumerate(operations):
            if existing.id == operation.id:
                operations[index] = operation
                break
        else:
            operations.append(operation)
        self.set(operations=tuple(operations))

    def start_operation(self, definition: Operation, step: str) -> None:
        """A fresh execution of an operation: attempt 1 queued."""
        self.queue_attempt(new_operation_snapshot(definition, step), definition, 1)

    def queue_attempt(self, operation: OperationSnapshot, definition: Operation, attempt: int,
                      token: str | None = None) -> None:
        token = token or self.new_token()
        self.put_operation(replace(operation, status="queued", attempt=attempt, token=token,
                                   retry_at=None))
        self.emit("operation-queued", step=operation.step, operation=operation.id,
                  attempt=attempt)
        self.effect(RunAttempt(self.snap.id, token, "operation", operation.id, attempt,
                               definition.timeout))

    def step_work_done(self, step: Step) -> bool:
        if any((b := self.snap.branch(step.id, branch.id)) is None or b.status != "succeeded"
               for branch in step.parallel):
            return False
        return all((op := self.snap.operation(o.id)) is not None and op.status == "succeeded"
                   for o in step.operations)

    def advance_work(self) -> None:
        """Move the running step's work on: next operation, join, or auto-advance.

        An auto step that moves on enters the next step; that step's work is moved
        on by this loop rather than by recursion, so a long chain of auto steps (or
        a cycle, caught after MAX_MOVES) cannot exhaust the stack.
        """
        if self._advancing:
            self._advance_again = True
            return
        self._advancing = True
        try:
            again = True
            while again:
                self._advance_again = False
                self.advance_once()
                again = self._advance_again
        finally:
            self._advancing = False

    def advance_once(self) -> None:
        if self.snap.status not in ("running", "blocked"):
            return
        step = self.current_step_definition()
        if step is None:
            return
        branches = [self.snap.branch(step.id, b.id) for b in step.parallel]
        if any(b is None or b.status == "running" for b in branches):
            return
        failed = [b for b in branches if b is not None and b.status != "succeeded"]
        if failed:
            self.fail_parallel(step.id, failed)
            return
        if self.snap.status != "running":
            return  # blocked (by validate): failures count, but nothing new starts
        for definition in step.operations:
            operation = self.snap.operation(definition.id)
            if operation is not None and operation.status == "succeeded":
                continue
            if operation is not None and operation.in_flight:
                return
            self.start_operation(definition, step.id)
            return
        self.end_step_run()
        child = self.current_child()
        if child is not None and child.status != "completed":
            return  # the step waits for its child
        # An auto step moves on once it validates (entering the next step counts the move).
        if step.advance == "auto" and not self.validate_current():
            self.leave_current()

    def fail_parallel(self, key: str, failed: list[BranchSnapshot]) -> None:
        message = f'Parallel workflow step "{key}" failed'
        branch_errors = {b.id: b.error or b.status for b in failed}
        self.fail(message, key,
                  errors=(message, *(f'Branch "{i}": {e}' for i, e in branch_errors.items())),
                  branches=branch_errors)

    # -- stopping work ------------------------------------------------------

    def stop_work(self, reason: str, *, step: str | None = None,
                  error_name: str = "Cancelled") -> None:
        """Tell in-flight attempts (of one step, or all) to stop; they end ``cancelled``."""
        for operation in self.snap.operations:
            if not operation.in_flight or (step is not None and operation.step != step):
                continue
            if operation.status in ("running", "retrying"):
                self.add_stopping(operation.token, "operation", operation.id, reason)
                definition = self.definition.find_operation(operation.id)
                if definition is not None and definition.timeout and operation.token:
                    # Its attempt deadline would only fire to be dropped as stale.
                    self.effect(ClearDeadline(self.snap.id, operation.token))
            elif operation.status == "queued" and operation.token:
                self.effect(StopAttempt(self.snap.id, operation.token, reason))
            elif operation.status == "waiting" and operation.token:
                self.effect(ClearDeadline(self.snap.id, operation.token))
            self.put_operation(replace(operation, status="cancelled", token=None, retry_at=None,
                                       completed_at=self.env.now,
                                       error=ErrorInfo(error_name, reason)))
            self.emit("operation-cancelled", step=operation.step, operation=operation.id,
                      reason=reason)
        for branch in self.snap.parallel:
            if branch.status != "running" or (step is not None and branch.step != step):
                continue
            if branch.token and branch.claimed:
                self.add_stopping(branch.token, "branch", f"{branch.step}:{branch.id}", reason)
            elif branch.token:  # no worker took it yet: it never will
                self.effect(StopAttempt(self.snap.id, branch.token, reason))
            self.put_branch(replace(branch, status="cancelled", error=reason, token=None))

    def add_stopping(self, token: str | None, kind: AttemptKind, target: str, reason: str,
                     resume: bool = False) -> None:
        assert token is not None
        self.set(stopping=(*self.snap.stopping,
                           StoppingAttempt(token, kind, target, reason, self.env.now, resume)))
        self.effect(StopAttempt(self.snap.id, token, reason))
