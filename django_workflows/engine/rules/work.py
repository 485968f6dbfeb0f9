"""A step's work handed out: background work (``RunAttempt``), told to stop
(``StopAttempt``), and the task a person must do (``rules.tasks`` has its commands).

What comes back is handled in ``results``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace

from ..change import Change
from ..definition import Operation, Step, check_candidates, in_seconds
from ..errors import DefinitionError, HookFailed, Refused
from ..messages import CANCELLED, step_hook
from ..outcome import ClearDeadline, RunAttempt, SaveTask, SetDeadline, StopAttempt
from ..slots import slot_of
from ..snapshot import (
    AttemptKind,
    BranchSnapshot,
    ErrorInfo,
    OperationSnapshot,
    StoppingAttempt,
    TaskSnapshot,
    new_operation_snapshot,
)


def put_branch(c: Change, entry: BranchSnapshot) -> None:
    """Replace a branch's entry: the old one is removed, the new one appended."""
    others = tuple(b for b in c.snap.parallel if not (b.step == entry.step and b.id == entry.id))
    c.set(parallel=(*others, entry))


def put_operation(c: Change, operation: OperationSnapshot) -> None:
    """Replace an operation's entry in place, or append a new one."""
    operations = list(c.snap.operations)
    for index, existing in enumerate(operations):
        if existing.id == operation.id:
            operations[index] = operation
            break
    else:
        operations.append(operation)
    c.set(operations=tuple(operations))


def dispatch_branch(c: Change, step: Step, branch_id: str) -> None:
    branch = next((b for b in step.branches if b.id == branch_id), None)
    slot = None if branch is None else slot_of(
        c, branch.concurrency, branch.rate, step.id, f'branch "{branch_id}" of step "{step.id}"')
    token = c.new_token()
    put_branch(c, BranchSnapshot(id=branch_id, step=step.id, status="running", token=token))
    c.effect(RunAttempt(c.snap.id, token, "branch", f"{step.id}:{branch_id}", slot=slot))


def dispatch_branches(c: Change, step: Step) -> None:
    """Every branch of ``step`` that has not succeeded (and is not running) is handed out."""
    for branch in step.branches:
        entry = c.snap.branch(step.id, branch.id)
        if entry is None or entry.status not in ("succeeded", "running"):
            dispatch_branch(c, step, branch.id)


def queue_attempt(c: Change, operation: OperationSnapshot, definition: Operation, attempt: int,
                  token: str | None = None) -> None:
    slot = slot_of(c, definition.concurrency, definition.rate, operation.step,
                   f'operation "{operation.id}"')
    token = token or c.new_token()
    # Its first token names its journal (durable code) for all its attempts.
    put_operation(c, replace(operation, status="queued", attempt=attempt, token=token,
                             retry_at=None, journal=operation.journal or token))
    c.emit("operation-queued", step=operation.step, operation=operation.id, attempt=attempt)
    c.effect(RunAttempt(c.snap.id, token, "operation", operation.id, attempt,
                        in_seconds(definition.timeout), slot))


DONE = ("succeeded", "skipped")  # an operation a step need not run (again)


def hand_out_operation(c: Change, step: Step) -> bool:
    """Queue the step's first operation that is not done; False when all are.

    True also while one is in flight: the operations of a step run one after another.
    """
    for definition in step.operations:
        operation = c.snap.operation(definition.id)
        if operation is not None and operation.status in DONE:
            continue
        if operation is None or not operation.in_flight:
            fresh = new_operation_snapshot(definition, step.id)
            if operation is not None:  # run again in the same stay (retry): its durable
                # code goes on from its journal, and from what woke it last (a replay that
                # failed before it reached that wait had not recorded it yet)
                fresh = replace(fresh, journal=operation.journal, woken=operation.woken)
            queue_attempt(c, fresh, definition, 1)
        return True
    return False


def step_work_done(c: Change, step: Step) -> bool:
    """Every branch of ``step`` succeeded, and every operation succeeded or was skipped."""
    if any((b := c.snap.branch(step.id, branch.id)) is None or b.status != "succeeded"
           for branch in step.branches):
        return False
    return all((op := c.snap.operation(o.id)) is not None and op.status in DONE
               for o in step.operations)


def skippable_operation(c: Change, step: Step, operation_id: str | None) -> Operation:
    """The operation of ``step`` that ``skip_operation`` would skip (by default the next
    to run); refused unless it is idle or queued (``docs/rules.md``, skip_operation)."""
    if operation_id is None:
        waiting = [o for o in step.operations if (op := c.snap.operation(o.id)) is None
                   or op.status not in DONE]
        if not waiting:
            raise Refused("no_operation", f'Workflow step "{step.id}" has no operation left')
        definition = waiting[0]
    else:
        found = next((o for o in step.operations if o.id == operation_id), None)
        if found is None:
            raise Refused("no_operation",
                          f'Workflow step "{step.id}" has no operation "{operation_id}"')
        definition = found
    operation = c.snap.operation(definition.id)
    if operation is not None and operation.status not in ("idle", "queued"):
        raise Refused("operation_started", "Only idle or queued operations can be skipped")
    return definition


def skip_operation(c: Change, step: Step, definition: Operation) -> None:
    """Record the operation skipped; a queued attempt of it never runs."""
    operation = c.snap.operation(definition.id) or new_operation_snapshot(definition, step.id)
    if operation.status == "queued" and operation.token:
        c.effect(StopAttempt(c.snap.id, operation.token, "Skipped"))
    put_operation(c, replace(operation, status="skipped", token=None, completed_at=c.env.now))
    c.emit("operation-skipped", step=step.id, operation=definition.id)
    c.unsettled = True  # the step goes on with its next operation


def still_stopping(c: Change, action: str, stopping: Iterable[StoppingAttempt]) -> Refused:
    """The refusal of a command that must wait for stopped attempts to stop."""
    reasons = [s.reason for s in stopping]
    if CANCELLED in reasons:
        why = "cancellation is pending"
    elif any("timed out" in reason for reason in reasons):
        why = "a timed-out step is still stopping"
    else:
        why = "work it left is still stopping"
    return Refused("still_stopping", f"{c.name} cannot {action} while {why}")


def add_stopping(c: Change, token: str | None, kind: AttemptKind, target: str, reason: str,
                 resume: bool = False) -> None:
    """Tell a claimed attempt to stop; commands that need it gone wait for its worker."""
    assert token is not None
    c.set(stopping=(*c.snap.stopping,
                    StoppingAttempt(token, kind, target, reason, c.env.now, resume)))
    c.effect(StopAttempt(c.snap.id, token, reason))


def stop_work(c: Change, reason: str, *, step: str | None = None,
              error_name: str = CANCELLED) -> None:
    """Tell in-flight attempts (of one step, or all) to stop; they end ``cancelled``."""
    for operation in c.snap.operations:
        if not operation.in_flight or (step is not None and operation.step != step):
            continue
        if operation.status in ("running", "retrying"):
            add_stopping(c, operation.token, "operation", operation.id, reason)
            definition = c.definition.find_operation(operation.id)
            if definition is not None and definition.timeout and operation.token:
                # Its attempt deadline would only fire to be dropped as stale.
                c.effect(ClearDeadline(c.snap.id, operation.token))
        elif operation.status == "queued" and operation.token:
            c.effect(StopAttempt(c.snap.id, operation.token, reason))
        elif operation.status == "waiting" and operation.token:
            c.effect(ClearDeadline(c.snap.id, operation.token))
        elif operation.status == "suspended":  # its code waits: the wait ends too
            from .durable import end_wait_of  # durable.py builds on this module

            end_wait_of(c, operation, reason)
        put_operation(c, replace(operation, status="cancelled", token=None, retry_at=None,
                                 completed_at=c.env.now, error=ErrorInfo(error_name, reason)))
        c.emit("operation-cancelled", step=operation.step, operation=operation.id,
               reason=reason)
    for branch in c.snap.parallel:
        if branch.status != "running" or (step is not None and branch.step != step):
            continue
        if branch.token and branch.claimed:
            add_stopping(c, branch.token, "branch", f"{branch.step}:{branch.id}", reason)
        elif branch.token:  # no worker took it yet: it never will
            c.effect(StopAttempt(c.snap.id, branch.token, reason))
        put_branch(c, replace(branch, status="cancelled", error=reason, token=None))
        c.emit("branch-cancelled", step=branch.step, branch=branch.id, reason=reason)


# -- the task a person must do ----------------------------------------------------------


def put_task(c: Change, task: TaskSnapshot, *, opened: bool = False,
             candidates_changed: bool = False) -> None:
    c.set(task=task)
    c.effect(SaveTask(c.snap.id, task, opened, candidates_changed))


def open_task(c: Change, step: Step) -> None:
    """Open the step's task, unless one is open for it already."""
    task = step.task
    if task is None or c.snap.open_task is not None:
        return
    candidates = task.candidates
    if callable(candidates):
        found = c.run_hook(candidates, c.context(step.id), step=step.id,
                           what=step_hook("candidates", step.id))
        try:
            candidates = check_candidates(found or (), f'Step "{step.id}": task candidates')
        except DefinitionError as error:
            c.fail(str(error), step.id)
            raise HookFailed(str(error)) from None
    due_in = in_seconds(task.due)
    due = c.env.now + due_in if due_in else None
    opened = TaskSnapshot(id=c.env.new_id(), step=step.id,
                          title=task.title or step.title or step.id,
                          candidates=tuple(candidates), exclude_owner=task.exclude_owner,
                          opened_at=c.env.now, due_at=due)
    put_task(c, opened, opened=True)
    c.emit("task-open", step=step.id, task=opened.id, candidates=list(opened.candidates))
    if due is not None:
        c.effect(SetDeadline(c.snap.id, "task-due", opened.id, due))


def cancel_task(c: Change, reason: str) -> None:
    """The step is left another way (back, skip, cancel, rollback): its task closes."""
    task = c.snap.open_task
    if task is None:
        return
    put_task(c, replace(task, status="cancelled", completed_at=c.env.now))
    c.emit("task-cancel", step=task.step, reason=reason, **task.named)
    if task.due_at is not None and not task.overdue:
        c.effect(ClearDeadline(c.snap.id, task.id))
