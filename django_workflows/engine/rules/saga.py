"""Rollback: a saga plan of compensations, each recorded once it finished.

The plan is fixed when the rollback starts, in this order: operation
rollbacks (newest first, an operation's children before it), compensation of
succeeded branches (last step first, last branch first), the nested child's
own rollback, then ``compensate`` of completed steps (newest first). Each item
runs as background work; a failure or a crash leaves the instance
``rolling-back`` and ``rollback`` resumes at the first unfinished item.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..change import Change
from ..definition import Operation
from ..errors import Refused
from ..messages import INTERRUPTED_WORKFLOW, ROLLED_BACK_WITH_PARENT
from ..outcome import RunAttempt, StopAttempt
from ..snapshot import (
    FINISHED,
    OperationSnapshot,
    RollbackItem,
    RollbackPlan,
    Standing,
    WorkflowSnapshot,
)
from .waits import end_wait
from .work import add_stopping, cancel_task, still_stopping, stop_work

if TYPE_CHECKING:
    from ..commands import AttemptOutcome, Rollback


def rollback(c: Change, command: Rollback | None = None) -> None:
    stopping = [stopping for node in c.snap.tree() for stopping in node.stopping]
    if stopping:
        raise still_stopping(c, "roll back", stopping)
    plan = c.snap.rollback
    if plan is not None:  # an interrupted rollback resumes where it stopped
        if any(item.status == "running" for item in plan.items):
            raise Refused("rollback_in_progress", f"{c.name} is already rolling back")
        c.checked()
        c.set(status="rolling-back", errors=())
        c.emit("rollback", step=c.snap.current_step, phase="resumed")
        continue_rollback(c)
        return
    if c.snap.status == "idle" and not c.snap.history and not c.snap.operations:
        raise Refused("not_started", f"{c.name} has not started")
    if any(_busy(node, waiting_ends=node is c.snap) for node in c.snap.tree()):
        raise Refused("work_in_progress",
                      f"{c.name} has work in progress; cancel it before rolling back")
    c.checked()
    # Where it stands now, and who rolls it back: kept as its record once it is idle again.
    snap = c.snap
    plan = replace(build_plan(c), started_at=c.env.now, by=c.env.actor, before=Standing(
        status=snap.status, state=snap.state, current_step=snap.current_step,
        history=snap.history, completed_steps=snap.completed_steps,
        skipped_steps=snap.skipped_steps, started_at=snap.started_at,
        completed_at=snap.completed_at))
    cancel_task(c, "Rolled back")
    end_wait(c)
    c.set(status="rolling-back", errors=(), rollback=plan)
    c.emit("rollback", step=c.snap.current_step, phase="started")
    if c.snap.work_in_flight:  # durable code that waits: it ends, as a task does
        stop_work(c, "Rolled back")
    continue_rollback(c)


def _busy(node: WorkflowSnapshot, *, waiting_ends: bool) -> bool:
    """Work out that a rollback must not start beside; ``waiting_ends``: the instance's own
    durable code that waits (no worker runs it) is not, the rollback ends it."""
    return (any(op.in_flight and not (waiting_ends and op.status == "suspended")
                for op in node.operations)
            or any(b.status == "running" for b in node.parallel))


def build_plan(c: Change) -> RollbackPlan:
    items: list[RollbackItem] = []
    for operation in reversed(c.snap.operations):
        if operation.status not in ("idle", "skipped"):
            items.extend(operation_items(c, operation,
                                         c.definition.find_operation(operation.id), ()))
    for step in reversed(c.definition.steps):
        for branch in reversed(step.branches):
            entry = c.snap.branch(step.id, branch.id)
            if branch.compensate and entry is not None and (
                    entry.status == "succeeded" or entry.finished_late):
                items.append(RollbackItem("branch", branch.id, step=step.id))
    if c.snap.nested is not None:
        items.append(RollbackItem("nested", c.snap.nested.id, step=c.snap.nested.parent_step))
    for key in reversed(c.snap.completed_steps):
        completed = c.definition.steps_by_id.get(key)
        if completed is not None and completed.compensate is not None:
            items.append(RollbackItem("step", key, step=key))
    return RollbackPlan(items=tuple(items))


def operation_items(c: Change, operation: OperationSnapshot, definition: Operation | None,
                    path: tuple[str, ...]) -> list[RollbackItem]:
    """An operation's children (newest first, recursively), then the operation."""
    items: list[RollbackItem] = []
    for child in reversed(operation.children):
        if child.status != "succeeded":
            continue
        child_definition = (definition.find_child(child.id) if definition else None) \
            or c.definition.find_operation(child.id)
        items.extend(operation_items(c, child, child_definition, (*path, operation.id)))
    if definition is not None and definition.rollback is not None:
        items.append(RollbackItem("operation", operation.id, step=operation.step, path=path))
    return items


# -- running the plan -----------------------------------------------------------------


def put_item(c: Change, index: int, item: RollbackItem) -> None:
    plan = c.snap.rollback
    assert plan is not None
    items = list(plan.items)
    items[index] = item
    c.set(rollback=replace(plan, items=tuple(items)))


def item_index(c: Change, item: RollbackItem) -> int:
    plan = c.snap.rollback
    assert plan is not None
    return next(i for i, it in enumerate(plan.items) if it.label == item.label)


def mark_done(c: Change, index: int, item: RollbackItem, result: Any = None,
              **data: Any) -> None:
    """The compensation is done; what it returned (a refund's id) is its record."""
    put_item(c, index, replace(item, status="done", token=None, error=None, result=result,
                               finished_at=c.env.now))
    if result is not None:
        data["result"] = result
    c.emit("compensate", step=item.step, item=item.label, **data)


def continue_rollback(c: Change) -> None:
    while True:
        plan = c.snap.rollback
        found = plan.next_item if plan is not None else None
        if found is None:
            finish_rollback(c)
            return
        index, item = found
        if item.status == "running":
            return
        if item.kind == "nested":
            if not roll_back_child(c, index, item):
                return
            continue
        token = c.new_token()
        put_item(c, index, replace(item, status="running", token=token, error=None,
                                   claimed=False))
        c.effect(RunAttempt(c.snap.id, token, "compensation", item.label))
        return


def child_done(c: Change, index: int, item: RollbackItem) -> None:
    """The child's own rollback is over: it is cancelled (its parent goes back to idle
    without it), then its item is done."""
    child = c.snap.nested
    if child is not None and child.id == item.target and child.status not in FINISHED:
        with c.on_child() as nested:
            nested.set(status="cancelled", completed_at=c.env.now)
            nested.emit("cancel", reason=ROLLED_BACK_WITH_PARENT)
    mark_done(c, index, item)


def roll_back_child(c: Change, index: int, item: RollbackItem) -> bool:
    """Start (or resume) the child's rollback; True when it already finished."""
    child = c.snap.nested
    if child is None or child.id != item.target or (
            child.status == "idle" and child.rollback is None):
        child_done(c, index, item)
        return True
    try:
        with c.on_child() as nested:
            rollback(nested)
    except Refused as refusal:
        if refusal.code == "rollback_in_progress":
            put_item(c, index, replace(item, status="running"))
        else:
            compensation_failed(c, item, f'Nested workflow "{child.workflow}" cannot '
                                         f"roll back: {refusal.message}")
        return False
    if c.snap.nested is not None and c.snap.nested.status == "idle":
        child_done(c, index, item)
        return True
    put_item(c, index, replace(item, status="running", error=None))
    return False


def nested_rollback_changed(c: Change, child: WorkflowSnapshot) -> None:
    """The child of a rolling-back instance changed: its own rollback moved on."""
    plan = c.snap.rollback
    found = plan.next_item if plan is not None else None
    if found is None:
        return
    index, item = found
    if item.kind != "nested" or item.status != "running" or item.target != child.id:
        return
    if child.status == "idle":
        child_done(c, index, item)
        continue_rollback(c)
    elif child.status == "cancelled":
        compensation_failed(c, item, f'Nested workflow "{child.workflow}" was cancelled')
    elif child.rollback is not None:
        failed = [i for i in child.rollback.items if i.status == "failed"]
        if failed:
            compensation_failed(c, item, f'Nested workflow "{child.workflow}": {failed[0].error}')


def compensation_finished(c: Change, item: RollbackItem, outcome: AttemptOutcome) -> None:
    if outcome.ok:
        mark_done(c, item_index(c, item), item, outcome.value)
        continue_rollback(c)
    else:
        message = outcome.error.message if outcome.error else "Compensation failed"
        compensation_failed(c, item, message)


def compensation_failed(c: Change, item: RollbackItem, message: str,
                        interrupted: bool = False) -> None:
    """A compensation raised: the rollback stops here, ``rollback`` resumes it."""
    put_item(c, item_index(c, item), replace(item, status="failed", token=None, error=message))
    c.set(errors=(*c.snap.errors, INTERRUPTED_WORKFLOW) if interrupted else (message,))
    c.emit("error", step=item.step, error=message, item=item.label)


def compensation_done_late(c: Change, label: str, result: Any = None) -> None:
    """A compensation told to stop finished anyway: it is done, never run twice."""
    plan = c.snap.rollback
    if plan is None:
        return
    for index, item in enumerate(plan.items):
        if item.label == label and item.status != "done":
            mark_done(c, index, item, result, late=True)


def stop_compensation(c: Change, reason: str) -> None:
    plan = c.snap.rollback
    if plan is None:
        return
    for index, item in enumerate(plan.items):
        if item.status != "running":
            continue
        if item.token and item.claimed:
            add_stopping(c, item.token, "compensation", item.label, reason)
        elif item.token:  # no worker took it yet: it never will
            c.effect(StopAttempt(c.snap.id, item.token, reason))
        put_item(c, index, replace(item, status="pending", token=None, claimed=False))


def finish_rollback(c: Change) -> None:
    """Every compensation ran: the instance is idle again with a fresh initial state.

    A last ``rollback`` event (``phase="finished"``) says the rollback finished, so the
    event log alone tells the instance is idle (``docs/rules.md``, rollback). The plan,
    with where the instance stood before and what each compensation returned, is kept
    as its record (``rolled_back``) until another rollback finishes.
    """
    plan = c.snap.rollback
    c.emit("rollback", phase="finished")
    c.let_go_of_child()
    # A factory of the initial state is user code: called as hooks are (env.call).
    c.set(status="idle", current_step=None, completed_steps=(), skipped_steps=(), history=(),
          errors=(), operations=(), parallel=(), task=None, waiting=None,
          state=c.env.call(c.definition.initial_state), started_at=None, completed_at=None,
          step_run=None, rollback=None,
          rolled_back=replace(plan, finished_at=c.env.now) if plan is not None else None)
