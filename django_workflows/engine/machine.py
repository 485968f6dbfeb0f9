"""The core of the engine: one instance's snapshot being changed by one command.

A :class:`Machine` holds a definition and a snapshot, replaces the snapshot
with every change (snapshots are frozen), and collects events and effects.
The command rules live in the mixins of ``navigation``, ``stepwork`` (work
handed out), ``results`` (work coming back) and ``rollback``; this module has
what they share.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any, Self

from .commands import AttemptOutcome
from .context import HookContext, call_directly
from .definition import Step, Workflow
from .errors import DefinitionError, error_message
from .outcome import ClearDeadline, Effect, Event
from .schema import FieldError
from .snapshot import AttemptKind, RollbackItem, StoppingAttempt, WorkflowSnapshot

# A command that moves through more steps than this is caught in a cycle.
MAX_MOVES = 1000


@dataclass(frozen=True)
class Env:
    """What a command needs from outside: the time, ids, the user, how to call hooks."""

    now: float
    call: Callable[..., Any] = call_directly
    new_token: Callable[[], str] = lambda: uuid.uuid4().hex
    new_id: Callable[[], str] = lambda: str(uuid.uuid4())
    user: Any = None
    resolve: Callable[[str], Workflow] | None = None  # a workflow by id, for nested="id"


class Refused(Exception):
    """A rule refused the command: it answers "not moved" with a code."""

    def __init__(self, code: str, message: str, field_errors: Iterable[FieldError] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field_errors = tuple(field_errors)


class HookFailed(Exception):
    """A hook raised; the failure is already recorded in the snapshot."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def add_unique(items: tuple[str, ...], item: str) -> tuple[str, ...]:
    return items if item in items else (*items, item)


def normalise_errors(result: Any) -> tuple[str, ...]:
    """A validate result as a list of messages: falsy is valid, a string is one error."""
    if not result:
        return ()
    if isinstance(result, str):
        return (result,)
    if isinstance(result, list | tuple):
        return tuple(str(item) for item in result)
    return (str(result),)


class MachineCore:
    def __init__(self, definition: Workflow, snapshot: WorkflowSnapshot, env: Env, *,
                 events: list[Event] | None = None, effects: list[Effect] | None = None,
                 moves: list[int] | None = None) -> None:
        self.definition = definition
        self.snap = snapshot
        self.env = env
        self.events = events if events is not None else []
        self.effects = effects if effects is not None else []
        self._moves = moves if moves is not None else [0]  # shared with nested machines
        self._advancing = False  # advance_work is running its loop
        self._advance_again = False  # ... and a step entered meanwhile needs moving on

    # -- small helpers ------------------------------------------------------

    @property
    def name(self) -> str:
        return f'Workflow "{self.definition.id}"'

    def set(self, **changes: Any) -> None:
        self.snap = replace(self.snap, **changes)

    def emit(self, type_: str, step: str | None = None, error: str | None = None,
             **data: Any) -> None:
        self.events.append(Event(type=type_, instance_id=self.snap.id, step=step, error=error,
                                 data=data, at=self.env.now))

    def effect(self, effect: Effect) -> None:
        self.effects.append(effect)

    def new_token(self) -> str:
        return self.env.new_token()

    def count_move(self) -> None:
        self._moves[0] += 1
        if self._moves[0] > MAX_MOVES:
            message = (f"{self.name} moved through more than {MAX_MOVES} steps in one command; "
                       f"check its transitions for a cycle")
            self.fail(message, self.snap.current_step)
            raise HookFailed(message)

    def current_step_definition(self) -> Step | None:
        """The definition of the current step (None before the first one)."""
        key = self.snap.current_step
        return self.definition.steps_by_id.get(key) if key else None

    def context(self, step: str | None = None) -> HookContext:
        return HookContext(state=self.snap.state, instance_id=self.snap.id,
                           workflow=self.definition.id,
                           step=step if step is not None else self.snap.current_step,
                           user=self.env.user)

    # -- hooks --------------------------------------------------------------

    def run_hook(self, hook: Callable[..., Any], *args: Any, step: str | None) -> Any:
        """Call a user hook; if it raises, record the failure and stop the command."""
        try:
            return self.env.call(hook, *args)
        except Exception as error:
            message = error_message(error)
            self.fail(message, step)
            raise HookFailed(message) from error

    def probe_hook(self, hook: Callable[..., Any], *args: Any) -> tuple[bool, Any]:
        """Call a hook whose failure refuses the command instead of failing the workflow."""
        try:
            return True, self.env.call(hook, *args)
        except Exception as error:
            return False, error_message(error)

    # -- shared moves -------------------------------------------------------

    def still_stopping(self, action: str, stopping: Iterable[StoppingAttempt]) -> Refused:
        """The refusal of a command that must wait for stopped attempts to stop."""
        reasons = [s.reason for s in stopping]
        if "Cancelled" in reasons:
            why = "cancellation is pending"
        elif any("timed out" in reason for reason in reasons):
            why = "a timed-out step is still stopping"
        else:
            why = "work it left is still stopping"
        return Refused("still_stopping", f"{self.name} cannot {action} while {why}")

    def refuse_if_cancelled(self) -> None:
        if self.snap.status == "cancelled":
            raise Refused("cancelled", f"{self.name} was cancelled")

    def fail(self, message: str, step: str | None, errors: tuple[str, ...] | None = None,
             **data: Any) -> None:
        """Record a failure: status ``failed``, the message in ``errors``, event ``error``."""
        self.end_step_run()
        self.set(status="failed", errors=errors if errors is not None else (message,))
        self.emit("error", step=step, error=message, **data)

    def end_step_run(self) -> None:
        run = self.snap.step_run
        if run is not None:
            if run.deadline is not None:
                self.effect(ClearDeadline(self.snap.id, run.token))
            self.set(step_run=None)

    def complete(self) -> None:
        self.cancel_child()  # a child left behind (by back) does not outlive its parent
        self.end_step_run()
        self.set(status="completed", completed_at=self.env.now)
        self.emit("complete", step=self.snap.current_step)

    def next_step_from(self, key: str) -> str | None:
        """The target of the first transition from ``key`` whose guard holds."""
        for transition in self.definition.transitions_from(key):
            if transition.when is None or self.run_hook(transition.when, self.context(key),
                                                        step=key):
                return transition.target
        return None

    def enter_first_available(self, key: str, completed: tuple[str, ...]) -> None:
        """Enter ``key``, or skip it and the steps after it while their ``when`` is false."""
        while True:
            self.count_move()
            step = self.definition.steps_by_id.get(key)
            if step is None:
                message = f'Unknown workflow step "{key}"'
                self.fail(message, key)
                raise HookFailed(message)
            if step.when is not None and not self.run_hook(step.when, self.context(key),
                                                           step=key):
                # Unavailable: recorded as skipped, never in the history.
                self.set(completed_steps=completed,
                         skipped_steps=add_unique(self.snap.skipped_steps, key))
                self.emit("skip", step=key, unavailable=True)
                following = self.next_step_from(key)
                if following is None:
                    self.complete()
                    return
                key = following
                continue
            self.set(status="running", current_step=key, completed_steps=completed,
                     history=(*self.snap.history, key), errors=())
            self.emit("step-enter", step=key)
            self.execute_step(include_enter=True)
            return

    def leave_current(self) -> None:
        """Run ``leave`` and follow the transitions (``next`` once the rules allowed it)."""
        key = self.snap.current_step
        assert key is not None
        step = self.definition.step(key)
        if step.leave is not None:
            self.run_hook(step.leave, self.context(), step=key)
        self.emit("step-leave", step=key)
        self.end_step_run()
        self.follow_transitions(key, add_unique(self.snap.completed_steps, key))

    def follow_transitions(self, key: str, completed: tuple[str, ...]) -> None:
        """Go on from ``key`` to the first transition whose guard holds; none: complete."""
        following = self.next_step_from(key)
        if following is None:
            self.set(completed_steps=completed)
            self.complete()
        else:
            self.enter_first_available(following, completed)

    def validate_current(self) -> tuple[str, ...]:
        """Run the current step's ``validate``: errors block, none keep it running."""
        key = self.snap.current_step
        step = self.definition.step(key) if key else None
        errors: tuple[str, ...] = ()
        if step is not None and step.validate is not None:
            errors = normalise_errors(self.run_hook(step.validate, self.context(), step=key))
        self.set(status="blocked" if errors else "running", errors=errors)
        self.emit("validate", step=key, errors=list(errors))
        return errors

    # -- nested children ----------------------------------------------------

    def nested_definition(self, step: Step) -> Workflow:
        nested = step.nested
        if isinstance(nested, Workflow):
            return nested
        if self.env.resolve is None or nested is None:
            raise DefinitionError(f'Step "{step.id}": cannot resolve nested workflow {nested!r}')
        return self.env.resolve(nested)

    def current_child(self) -> WorkflowSnapshot | None:
        """The nested instance of the current step, if it has one."""
        child = self.snap.nested
        if child is not None and child.parent_step == self.snap.current_step:
            return child
        return None

    def child_machine(self) -> Self:
        """A machine for the nested child, sharing this command's events and effects."""
        child = self.snap.nested
        assert child is not None and child.parent_step is not None
        definition = self.nested_definition(self.definition.step(child.parent_step))
        return type(self)(definition, child, self.env, events=self.events,
                          effects=self.effects, moves=self._moves)

    # -- implemented by the mixins (navigation, stepwork, results, rollback) -

    def execute_step(self, *, include_enter: bool) -> None:
        raise NotImplementedError

    def advance_work(self) -> None:
        raise NotImplementedError

    def step_work_done(self, step: Step) -> bool:
        raise NotImplementedError

    def stop_work(self, reason: str, *, step: str | None = None,
                  error_name: str = "Cancelled") -> None:
        raise NotImplementedError

    def add_stopping(self, token: str | None, kind: AttemptKind, target: str, reason: str,
                     resume: bool = False) -> None:
        raise NotImplementedError

    def fail_for_child(self, child: WorkflowSnapshot) -> None:
        raise NotImplementedError

    def child_changed(self) -> None:
        raise NotImplementedError

    def cancel_child(self) -> None:
        raise NotImplementedError

    def stop_compensation(self, reason: str) -> None:
        raise NotImplementedError

    def nested_rollback_changed(self, child: WorkflowSnapshot) -> None:
        raise NotImplementedError

    def compensation_finished(self, item: RollbackItem, outcome: AttemptOutcome) -> None:
        raise NotImplementedError

    def compensation_failed(self, item: RollbackItem, message: str,
                            interrupted: bool = False) -> None:
        raise NotImplementedError

    def compensation_done_late(self, label: str) -> None:
        raise NotImplementedError
