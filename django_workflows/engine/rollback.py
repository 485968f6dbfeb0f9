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
from typing import Any

from .commands import AttemptOutcome
from .definition import Operation
from .machine import MachineCore, Refused
from .outcome import RunAttempt, StopAttempt
from .snapshot import (
    OperationSnapshot,
    RollbackItem,
    RollbackPlan,
    StoppingAttempt,
    WorkflowSnapshot,
)
from .stepwork import INTERRUPTED_WORKFLOW


class RollbackMixin(MachineCore):
    def rollback(self) -> None:
        stopping = self.tree_stopping()
        if stopping:
            raise self.still_stopping("roll back", stopping)
        plan = self.snap.rollback
        if plan is not None:  # an interrupted rollback resumes where it stopped
            if any(item.status == "running" for item in plan.items):
                raise Refused("rollback_in_progress", f"{self.name} is already rolling back")
            self.set(status="rolling-back", errors=())
            self.emit("rollback", step=self.snap.current_step, phase="resumed")
            self.continue_rollback()
            return
        if self.snap.status == "idle" and not self.snap.history and not self.snap.operations:
            raise Refused("not_started", f"{self.name} has not started")
        if self.tree_work_in_flight():
            raise Refused("work_in_progress",
                          f"{self.name} has work in progress; cancel it before rolling back")
        self.set(status="rolling-back", errors=(), rollback=self.build_plan())
        self.emit("rollback", step=self.snap.current_step, phase="started")
        self.continue_rollback()

    def tree_stopping(self) -> list[StoppingAttempt]:
        return [stopping for node in self.snap.tree() for stopping in node.stopping]

    def tree_work_in_flight(self) -> bool:
        return any(node.work_in_flight for node in self.snap.tree())

    def build_plan(self) -> RollbackPlan:
        items: list[RollbackItem] = []
        for operation in reversed(self.snap.operations):
            if operation.status not in ("idle", "skipped"):
                items.extend(self.operation_items(
                    operation, self.definition.find_operation(operation.id), ()))
        for step in reversed(self.definition.steps):
            for branch in reversed(step.parallel):
                entry = self.snap.branch(step.id, branch.id)
                if branch.compensate and entry is not None and (
                        entry.status == "succeeded" or entry.finished_late):
                    items.append(RollbackItem("branch", branch.id, step=step.id))
        if self.snap.nested is not None:
            items.append(RollbackItem("nested", self.snap.nested.id,
                                      step=self.snap.nested.parent_step))
        for key in reversed(self.snap.completed_steps):
            step = self.definition.steps_by_id.get(key)
            if step is not None and step.compensate is not None:
                items.append(RollbackItem("step", key, step=key))
        return RollbackPlan(items=tuple(items))

    def operation_items(self, operation: OperationSnapshot, definition: Operation | None,
                        path: tuple[str, ...]) -> list[RollbackItem]:
        """An operation's children (newest first, recursively), then the operation."""
        items: list[RollbackItem] = []
        for child in reversed(operation.children):
            if child.status != "succeeded":
                continue
            child_definition = (definition.find_child(child.id) if definition else None) \
                or self.definition.find_operation(child.id)
            items.extend(self.operation_items(child, child_definition, (*path, operation.id)))
        if definition is not None and definition.rollback is not None:
            items.append(RollbackItem("operation", operation.id, step=operation.step, path=path))
        return items

    # -- running the plan ---------------------------------------------------

    def put_item(self, index: int, item: RollbackItem) -> None:
        plan = self.snap.rollback
        assert plan is not None
        items = list(plan.items)
        items[index] = item
        self.set(rollback=RollbackPlan(items=tuple(items)))

    def item_index(self, item: RollbackItem) -> int:
        plan = self.snap.rollback
        assert plan is not None
        return next(i for i, it in enumerate(plan.items) if it.label == item.label)

    def mark_done(self, index: int, item: RollbackItem, **data: Any) -> None:
        self.put_item(index, replace(item, status="done", token=None, error=None))
        self.emit("compensate", step=item.step, item=item.label, **data)

    def continue_rollback(self) -> None:
        while True:
            plan = self.snap.rollback
            found = plan.next_item if plan is not None else None
            if found is None:
                self.finish_rollback()
                return
            index, item = found
            if item.status == "running":
                return
            if item.kind == "nested":
                if not self.roll_back_child(index, item):
                    return
                continue
            token = self.new_token()
            self.put_item(index, replace(item, status="running", token=token, error=None,
                                         claimed=False))
            self.effect(RunAttempt(self.snap.id, token, "compensation", item.label))
            return

    def roll_back_child(self, index: int, item: RollbackItem) -> bool:
        """Start (or resume) the child's rollback; True when it already finished."""
        child = self.snap.nested
        if child is None or child.id != item.target or (
                child.status == "idle" and child.rollback is None):
            self.mark_done(index, item)
            return True
        machine = self.child_machine()
        try:
            machine.rollback()
        except Refused as refusal:
            self.set(nested=machine.snap)
            if refusal.code == "rollback_in_progress":
                self.put_item(index, replace(item, status="running"))
            else:
                self.compensation_failed(item, f'Nested workflow "{child.workflow}" cannot '
                                               f"roll back: {refusal.message}")
            return False
        self.set(nested=machine.snap)
        if machine.snap.status == "idle":
            self.mark_done(index, item)
            return True
        self.put_item(index, replace(item, status="running", error=None))
        return False

    def nested_rollback_changed(self, child: WorkflowSnapshot) -> None:
        plan = self.snap.rollback
        found = plan.next_item if plan is not None else None
        if found is None:
            return
        index, item = found
        if item.kind != "nested" or item.status != "running" or item.target != child.id:
            return
        if child.status == "idle":
            self.mark_done(index, item)
            self.continue_rollback()
        elif child.status == "cancelled":
            self.compensation_failed(item, f'Nested workflow "{child.workflow}" was cancelled')
        elif child.rollback is not None:
            failed = [i for i in child.rollback.items if i.status == "failed"]
            if failed:
                self.compensation_failed(
                    item, f'Nested workflow "{child.workflow}": {failed[0].error}')

    def compensation_finished(self, item: RollbackItem, outcome: AttemptOutcome) -> None:
        if outcome.ok:
            self.mark_done(self.item_index(item), item)
            self.continue_rollback()
        else:
            message = outcome.error.message if outcome.error else "Compensation failed"
            self.compensation_failed(item, message)

    def compensation_failed(self, item: RollbackItem, message: str,
                            interrupted: bool = False) -> None:
        """A compensation raised: the rollback stops here, ``rollback`` resumes it."""
        self.put_item(self.item_index(item), replace(item, status="failed", token=None,
                                                     error=message))
        errors = (*self.snap.errors, INTERRUPTED_WORKFLOW) if interrupted else (message,)
        self.set(errors=errors)
        self.emit("error", step=item.step, error=message, item=item.label)

    def compensation_done_late(self, label: str) -> None:
        """A compensation told to stop finished anyway: it is done, never run twice."""
        plan = self.snap.rollback
        if plan is None:
            return
        for index, item in enumerate(plan.items):
            if item.label == label and item.status != "done":
                self.mark_done(index, item, late=True)

    def stop_compensation(self, reason: str) -> None:
        plan = self.snap.rollback
        if plan is None:
            return
        for index, item in enumerate(plan.items):
            if item.status != "running":
                continue
            if item.token and item.claimed:
                self.add_stopping(item.token, "compensation", item.label, reason)
            elif item.token:  # no worker took it yet: it never will
                self.effect(StopAttempt(self.snap.id, item.token, reason))
            self.put_item(index, replace(item, status="pending", token=None, claimed=False))

    def finish_rollback(self) -> None:
        """Every compensation ran: the instance is idle again with a fresh initial state.

        **Adapted:** the original emits no final event; this one says the
        rollback finished, so the event log alone tells the instance is idle.
        """
        self.emit("rollback", phase="finished")
        self.set(status="idle", current_step=None, completed_steps=(), skipped_steps=(),
                 history=(), errors=(), operations=(), parallel=(), nested=None,
                 state=self.definition.initial_state(), started_at=None, completed_at=None,
                 step_run=None, rollback=None)
