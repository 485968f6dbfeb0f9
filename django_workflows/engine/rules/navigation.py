"""What people do: start, next, back, skip, skip_operation, validate, update_state, retry,
cancel (``recovery`` has pause, resume and rewind; ``journals`` a retry's from a step).

Each rule is one function. Its checks come first and end at ``c.checked()``;
before that point a rule runs no hook with effects (only ``validate`` and the
exit guards, which decide), so a dry run of the same function answers "what
applies now".
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..change import Change
from ..errors import HookFailed, Refused
from ..messages import step_hook, step_left, step_skipped
from ..reserved import refuse_written_keys
from ..schema import check_state
from ..snapshot import FINISHED, MOVING, WorkflowSnapshot
from .journals import retry_from, truncate
from .steps import (
    add_unique,
    begin,
    cancel_child,
    child_changed,
    commit_cancel,
    follow_transitions,
    leave_current,
    rerun,
    resume_work,
    settle,
    validate_current,
)
from .waits import end_wait, refuse_next_while_waiting
from .work import (
    cancel_task,
    skip_operation,
    skippable_operation,
    step_work_done,
    still_stopping,
    stop_work,
)

if TYPE_CHECKING:
    from ..commands import (
        Back,
        Cancel,
        Next,
        Retry,
        Skip,
        SkipOperation,
        Start,
        UpdateState,
        Validate,
    )


def refuse_if_cancelled(c: Change) -> None:
    if c.snap.status == "cancelled":
        raise Refused("cancelled", f"{c.name} was cancelled")


def not_running(c: Change) -> Refused:
    return Refused("not_running", f'{c.name} is not running (status "{c.snap.status}")')


def delegate(c: Change, rule: Callable[[Change, Any], None], command: Any) -> WorkflowSnapshot:
    """Give a command to the current step's child; the parent follows its result."""
    try:
        with c.on_child() as child:
            rule(child, command)
            settle(child)
    except HookFailed:
        child_changed(c)
        raise
    assert c.snap.nested is not None
    return c.snap.nested


def start(c: Change, command: Start) -> None:
    if c.snap.stopping:
        raise Refused("still_stopping", f"{c.name} still has an active step attempt")
    refuse_if_cancelled(c)
    if c.snap.status != "idle":
        raise Refused("already_started", f"{c.name} has already started")
    # A rolled-back instance runs its work again: a person says so first.
    c.checked(confirm=f"{c.name} was rolled back: starting it runs its steps and their "
                      "work again" if c.snap.rolled_back is not None else None)
    begin(c)


def next_(c: Change, command: Next) -> None:
    refuse_if_cancelled(c)
    step = c.step
    if c.snap.status != "running" or step is None:
        raise not_running(c)
    child = c.current_child
    if child is not None and child.status != "completed":
        if delegate(c, next_, command).status != "completed":
            return
        # **Adapted:** the child moved, so the command did: the parent goes on if it can,
        # and otherwise waits (blocked by its own validation), but refuses nothing now.
        if step_work_done(c, step) and not validate_current(c):
            leave_current(c)
        return
    if not step_work_done(c, step):
        raise Refused("work_in_progress", f'Workflow step "{step.id}" still has work in progress')
    task = c.snap.open_task
    if task is not None:
        raise Refused("task_open", f'Workflow step "{step.id}" waits for its task '
                                   f'"{task.title}": complete it to go on')
    refuse_next_while_waiting(c)
    if validate_current(c):
        raise Refused("validation_failed", "; ".join(c.snap.errors))
    c.checked()
    leave_current(c)


def back(c: Change, command: Back) -> None:
    refuse_if_cancelled(c)
    if c.snap.status == "rolling-back":
        raise Refused("not_running", f"{c.name} is rolling back")
    reopening = refuse_reopening(c)
    child = c.current_child
    if child is not None and child.status == "running":
        try:
            delegate(c, back, command)
            return
        except Refused:
            pass  # the child cannot go back: the parent does
    if len(c.snap.history) < 2:
        raise Refused("no_previous_step", f"{c.name} has no previous step")
    c.checked(confirm=reopening)
    step_back(c)


def refuse_reopening(c: Change) -> str | None:
    """``back`` or ``rewind`` of a completed instance: refused for a nested child (its
    parent followed it) and where the definition says ``reopen_completed=False``;
    otherwise what a person confirms first."""
    if c.snap.status != "completed":
        return None
    if c.snap.parent_id is not None:
        # Its parent followed it (and may have gone on): a nested child does not run again.
        raise Refused("completed", f"{c.name} is already completed")
    if not c.definition.reopen_completed:
        raise Refused("reopen_forbidden", f"{c.name} is completed and does not reopen "
                                          "(reopen_completed=False)")
    return f"{c.name} is completed: going back reopens it"


def stop_steps_left(c: Change, left: tuple[str, ...]) -> None:
    """What the steps gone back from still do stops (their work, the current step's task,
    wait and run), before ``back`` or ``rewind`` says where it went: the events come in the
    order things happen. Stopping again finds nothing."""
    for key in left:
        stop_work(c, step_left(key), step=key)
    cancel_task(c, step_left(c.snap.current_step))
    end_wait(c)
    c.end_step_run()


def step_back(c: Change, *, announce: bool = True) -> str:
    """One step back in the history, once the checks passed: the step left stops its work
    and its task (its child is kept for a return to it), the previous step is current
    again, event ``back`` (unless ``announce`` is False: ``rewind`` says it once), and
    its enter hook runs (not its background work). Returns the step returned to."""
    left = c.snap.current_step
    stop_steps_left(c, (left,) if left else ())
    history = c.snap.history[:-1]
    previous = history[-1]
    # Neither the step returned to nor the step left is done now (a completed instance
    # reopens), unless the history still holds an earlier visit of the step left.
    done = tuple(s for s in c.snap.completed_steps
                 if s != previous and (s != left or s in history[:-1]))
    c.set(status="running", current_step=previous, history=history, completed_steps=done,
          errors=(), completed_at=None)
    if announce:
        c.emit("back", step=previous)
    step = c.definition.step(previous)
    if step.enter is not None:  # its enter hook only, not its background work
        c.run_hook(step.enter, c.context(), step=previous, what=step_hook("enter", previous))
    return previous


def skip(c: Change, command: Skip) -> None:
    refuse_if_cancelled(c)
    key = c.snap.current_step
    if key is None or c.snap.status not in MOVING:
        raise not_running(c)
    if c.step is not None and not c.step.skippable:
        raise Refused("not_skippable", f'Workflow step "{key}" cannot be skipped')
    c.checked()
    # Its work and its task stop, its child is cancelled: the step will not be done.
    stop_work(c, step_skipped(key), step=key)
    cancel_task(c, step_skipped(key))
    end_wait(c)
    if c.current_child is not None:
        cancel_child(c)
    c.end_step_run()
    c.set(status="running", errors=(), skipped_steps=add_unique(c.snap.skipped_steps, key))
    c.emit("skip", step=key)
    follow_transitions(c, key, c.snap.completed_steps)


def skip_one_operation(c: Change, command: SkipOperation) -> None:
    refuse_if_cancelled(c)
    step = c.step
    if step is None or c.snap.status not in MOVING:
        raise not_running(c)
    definition = skippable_operation(c, step, command.operation)
    c.checked()
    skip_operation(c, step, definition)


def validate(c: Change, command: Validate) -> None:
    refuse_if_cancelled(c)
    if c.snap.status == "rolling-back":
        raise Refused("not_running", f"{c.name} is rolling back")
    if c.snap.status == "completed":  # it would run again, and complete twice
        raise Refused("completed", f"{c.name} is already completed")
    if c.snap.current_step is None:
        raise Refused("no_current_step", f"{c.name} has no current step")
    was_blocked = c.snap.status == "blocked"
    if validate_current(c):
        raise Refused("validation_failed", "; ".join(c.snap.errors))
    c.checked()
    if was_blocked:
        resume_work(c)


def update_state(c: Change, command: UpdateState) -> None:
    refuse_if_cancelled(c)
    c.checked()
    value = command.value
    if callable(value):
        value = value(copy.deepcopy(dict(c.snap.state)))
    state = check_state(c.definition.state_schema, value)
    # What a task wrote (or will write) stays as it is: only the task writes it.
    refuse_written_keys(c.definition, state, c.snap.state)
    c.set(state=state)
    c.emit("state-update", step=c.snap.current_step)
    if c.snap.status == "blocked":
        c.set(status="running", errors=())
        resume_work(c)


def retry(c: Change, command: Retry) -> None:
    if c.snap.stopping:
        raise still_stopping(c, "retry", c.snap.stopping)
    refuse_if_cancelled(c)
    if c.snap.status not in ("failed", "blocked"):
        raise Refused("not_failed",
                      f'{c.name} is not failed or blocked (status "{c.snap.status}")')
    found = retry_from(c, command.operation, command.from_step)  # from a step of a journal
    c.checked(confirm=found.confirm if found is not None else None)
    if found is None:
        rerun(c)
        return
    truncate(c, found)
    rerun(c, **found.data)


def cancel(c: Change, command: Cancel) -> None:
    if c.snap.status == "completed":
        raise Refused("completed", f"{c.name} is already completed")
    if c.snap.status == "cancelled":
        raise Refused("already_cancelled", f"{c.name} is already cancelled")
    check_exit_guards(c)
    c.checked()
    commit_cancel(c, command.reason)


def check_exit_guards(c: Change) -> None:
    """The exit guards of this instance, then of its running child, may refuse.

    A guard allows with a true value; it refuses with a false one, or with a
    message (a string) that the refusal carries.
    """
    guard = c.definition.exit_guard
    if guard is not None:
        ok, allowed = c.probe_hook(guard, c.context(), what=f"The exit guard of {c.name}")
        if not ok:
            raise Refused("cancel_refused", allowed)
        if isinstance(allowed, str):
            raise Refused("cancel_refused", allowed or f"{c.name} refused to be cancelled")
        if not allowed:
            raise Refused("cancel_refused", f"{c.name} refused to be cancelled")
    child = c.snap.nested
    if child is not None and child.status not in FINISHED:
        check_exit_guards(c.child())
