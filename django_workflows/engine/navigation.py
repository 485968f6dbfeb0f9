"""The commands people give: start, next, back, skip, validate, update_state, retry, cancel."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

from .errors import error_message
from .machine import HookFailed, MachineCore, Refused, add_unique
from .schema import FieldError, validate_state
from .snapshot import FINISHED, WorkflowSnapshot


class NavigationMixin(MachineCore):
    def start(self) -> None:
        if self.snap.stopping:
            raise Refused("still_stopping", f"{self.name} still has an active step attempt")
        self.refuse_if_cancelled()
        if self.snap.status != "idle":
            raise Refused("already_started", f"{self.name} has already started")
        self.set(status="running", started_at=self.env.now, completed_at=None)
        self.emit("start")
        self.enter_first_step(())

    def enter_first_step(self, completed: tuple[str, ...]) -> None:
        """Enter the first available step; a workflow without steps completes at once."""
        first = self.definition.first_step
        if first is None:
            self.complete()
        else:
            self.enter_first_available(first.id, completed)

    def not_running(self) -> Refused:
        return Refused("not_running", f'{self.name} is not running (status "{self.snap.status}")')

    def require_running(self) -> None:
        self.refuse_if_cancelled()
        if self.snap.status != "running" or self.snap.current_step is None:
            raise self.not_running()

    def delegate(self, command: str) -> WorkflowSnapshot:
        """Give a command to the current step's child; the parent follows its result."""
        machine = self.child_machine()
        try:
            getattr(machine, command)()
        except HookFailed:
            self.set(nested=machine.snap)
            self.child_changed()
            raise
        except Refused:
            self.set(nested=machine.snap)
            raise
        self.set(nested=machine.snap)
        return machine.snap

    def next(self) -> None:
        self.require_running()
        child = self.current_child()
        if child is not None and child.status != "completed":
            child = self.delegate("next")
            if child.status != "completed":
                return
        step = self.current_step_definition()
        assert step is not None
        if not self.step_work_done(step):
            raise Refused("work_in_progress",
                          f'Workflow step "{step.id}" still has work in progress')
        if self.validate_current():
            raise Refused("validation_failed", "; ".join(self.snap.errors))
        self.leave_current()

    def back(self) -> None:
        self.refuse_if_cancelled()
        if self.snap.status == "rolling-back":
            raise Refused("not_running", f"{self.name} is rolling back")
        if self.snap.status == "completed" and self.snap.parent_id is not None:
            # Its parent followed it (and may have gone on): a nested child does not run again.
            raise Refused("completed", f"{self.name} is already completed")
        child = self.current_child()
        if child is not None and child.status == "running":
            try:
                self.delegate("back")
                return
            except Refused:
                pass  # the child cannot go back: the parent does
        if len(self.snap.history) < 2:
            raise Refused("no_previous_step", f"{self.name} has no previous step")
        key = self.snap.current_step
        self.leave_work(f'Workflow step "{key}" was left', cancel_child=False)
        previous = self.snap.history[-2]
        self.set(status="running", current_step=previous, history=self.snap.history[:-1],
                 completed_steps=tuple(s for s in self.snap.completed_steps if s != previous),
                 errors=(), completed_at=None)
        self.emit("back", step=previous)
        step = self.definition.step(previous)
        if step.enter is not None:  # its enter hook only, not its background work
            self.run_hook(step.enter, self.context(), step=previous)

    def skip(self) -> None:
        self.refuse_if_cancelled()
        key = self.snap.current_step
        if key is None or self.snap.status not in ("running", "blocked"):
            raise self.not_running()
        self.leave_work(f'Workflow step "{key}" was skipped', cancel_child=True)
        self.set(status="running", errors=(),
                 skipped_steps=add_unique(self.snap.skipped_steps, key))
        self.emit("skip", step=key)
        self.follow_transitions(key, self.snap.completed_steps)

    def leave_work(self, reason: str, *, cancel_child: bool) -> None:
        """Stop the work of the step being left. ``back`` keeps its child for a return;
        ``skip`` cancels it: the step will not be done."""
        self.stop_work(reason, step=self.snap.current_step)
        if cancel_child and self.current_child() is not None:
            self.cancel_child()
        self.end_step_run()

    def cancel_child(self) -> None:
        """Cancel the nested child unless it already finished (no guard: the parent decided)."""
        child = self.snap.nested
        if child is not None and child.status not in FINISHED:
            machine = self.child_machine()
            machine.commit_cancel()
            self.set(nested=machine.snap)

    def validate(self) -> None:
        self.refuse_if_cancelled()
        if self.snap.status == "rolling-back":
            raise Refused("not_running", f"{self.name} is rolling back")
        if self.snap.status == "completed":  # it would run again, and complete twice
            raise Refused("completed", f"{self.name} is already completed")
        if self.snap.current_step is None:
            raise Refused("no_current_step", f"{self.name} has no current step")
        was_blocked = self.snap.status == "blocked"
        if self.validate_current():
            raise Refused("validation_failed", "; ".join(self.snap.errors))
        if was_blocked:
            self.resume_work()

    def update_state(self, value: Mapping[str, Any] | Callable[[dict[str, Any]], Any]) -> None:
        self.refuse_if_cancelled()
        if callable(value):
            value = value(copy.deepcopy(dict(self.snap.state)))
        state = check_state(self.definition.state_schema, value)
        self.set(state=state)
        self.emit("state-update", step=self.snap.current_step)
        if self.snap.status == "blocked":
            self.set(status="running", errors=())
            self.resume_work()

    def resume_work(self) -> None:
        """An unblocked step goes on: its unfinished work runs (with a fresh timeout)."""
        self.execute_step(include_enter=False)  # without a current step, nothing to do

    def retry(self) -> None:
        if self.snap.stopping:
            raise self.still_stopping("retry", self.snap.stopping)
        self.refuse_if_cancelled()
        if self.snap.status not in ("failed", "blocked"):
            raise Refused("not_failed",
                          f'{self.name} is not failed or blocked (status "{self.snap.status}")')
        self.set(status="running", errors=())
        self.emit("retry", step=self.snap.current_step)
        if self.snap.current_step is None:  # it failed before its first step was entered
            self.enter_first_step(self.snap.completed_steps)
            return
        self.execute_step(include_enter=True)

    # -- cancel -------------------------------------------------------------

    def cancel(self) -> None:
        if self.snap.status == "completed":
            raise Refused("completed", f"{self.name} is already completed")
        if self.snap.status == "cancelled":
            raise Refused("already_cancelled", f"{self.name} is already cancelled")
        self.check_exit_guards()
        self.commit_cancel()

    def check_exit_guards(self) -> None:
        """The exit guards of this instance, then of its running child, may refuse."""
        guard = self.definition.exit_guard
        if guard is not None:
            ok, allowed = self.probe_hook(guard, self.context())
            if not ok:
                raise Refused("cancel_refused", f"The exit guard of {self.name} raised: {allowed}")
            if not allowed:
                raise Refused("cancel_refused", f"{self.name} refused to be cancelled")
        child = self.snap.nested
        if child is not None and child.status not in FINISHED:
            self.child_machine().check_exit_guards()

    def commit_cancel(self) -> None:
        self.cancel_child()  # the child is cancelled, and says so, first
        self.stop_work("Cancelled")
        self.stop_compensation("Cancelled")
        self.end_step_run()
        self.set(status="cancelled", completed_at=self.env.now)
        self.emit("cancel", step=self.snap.current_step)

    # -- reacting to the child ----------------------------------------------

    def child_changed(self) -> None:
        """The nested child changed in this command; the parent follows it."""
        child = self.snap.nested
        if child is None:
            return
        if self.snap.status == "rolling-back":
            self.nested_rollback_changed(child)
            return
        if self.snap.status != "running" or child.parent_step != self.snap.current_step:
            return
        if child.status == "completed":
            self.advance_work()
        elif child.status == "failed":
            self.fail_for_child(child)
        elif child.status == "cancelled":
            message = f'Nested workflow "{child.workflow}" was cancelled'
            self.fail(message, self.snap.current_step, nested=child.id)


def check_state(schema: Any, value: Any) -> dict[str, Any]:
    """``value`` as a state, or Refused("invalid_state") naming every bad field."""
    if not isinstance(value, Mapping):
        raise Refused("invalid_state", "The state must be a JSON object",
                      [FieldError("", f"expected an object, got {type(value).__name__}")])
    try:
        state = json.loads(json.dumps(dict(value), allow_nan=False))  # NaN is not JSON
    except (TypeError, ValueError) as error:
        raise Refused("invalid_state", f"The state is not JSON: {error_message(error)}",
                      [FieldError("", error_message(error))]) from None
    problems = validate_state(schema, state)
    if problems:
        raise Refused("invalid_state", "; ".join(map(str, problems)), problems)
    return state
