"""Moving between steps: entering, leaving, completing, settling, and the nested child.

Every command family uses these. Entering a step hands out its work and marks
the instance unsettled; :func:`settle` then moves the work on (the next
operation, the join of branches, an auto step leaving) until the instance
waits for something. Settling is a loop, not recursion, so a long chain of
auto steps cannot exhaust the stack; a cycle is caught after ``MAX_MOVES``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from ..change import Change
from ..definition import in_seconds
from ..errors import HookFailed, Refused
from ..messages import CANCELLED, step_hook, transition_guard
from ..outcome import SetDeadline
from ..schema import check_state
from ..snapshot import FINISHED, MOVING, BranchSnapshot, StepRun, WorkflowSnapshot, new_snapshot
from . import paused, saga
from .waits import begin_wait, end_wait
from .work import cancel_task, dispatch_branches, hand_out_operation, open_task, stop_work


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


def begin(c: Change) -> None:
    """``start`` once its checks passed: running, then the first available step."""
    c.set(status="running", started_at=c.env.now, completed_at=None)
    c.emit("start")
    enter_first_step(c, ())


def enter_first_step(c: Change, completed: tuple[str, ...]) -> None:
    """Enter the first available step; a workflow without steps completes at once."""
    first = c.definition.first_step
    if first is None:
        complete(c)
    else:
        enter_first_available(c, first.id, completed)


def next_step_from(c: Change, key: str) -> str | None:
    """The target of the first transition from ``key`` whose guard holds."""
    for transition in c.definition.transitions_from(key):
        if transition.when is None or c.run_hook(
                transition.when, c.context(key), step=key,
                what=transition_guard(transition.source, transition.target)):
            return transition.target
    return None


def enter_first_available(c: Change, key: str, completed: tuple[str, ...]) -> None:
    """Enter ``key``, or skip it and the steps after it while their ``when`` is false."""
    while True:
        c.count_move()
        step = c.definition.steps_by_id.get(key)
        if step is None:
            message = f'Unknown workflow step "{key}"'
            c.fail(message, key)
            raise HookFailed(message)
        if step.when is not None and not c.run_hook(step.when, c.context(key), step=key,
                                                    what=step_hook("when", key)):
            # Unavailable: recorded as skipped, never in the history.
            c.set(completed_steps=completed, skipped_steps=add_unique(c.snap.skipped_steps, key))
            c.emit("skip", step=key, unavailable=True)
            following = next_step_from(c, key)
            if following is None:
                complete(c)
                return
            key = following
            continue
        c.set(status="running", current_step=key, completed_steps=completed,
              history=(*c.snap.history, key), errors=())
        c.emit("step-enter", step=key)
        execute_step(c, include_enter=True)
        return


def leave_current(c: Change) -> None:
    """Run ``leave`` and follow the transitions (``next`` once the rules allowed it)."""
    key = c.snap.current_step
    assert key is not None
    step = c.definition.step(key)
    if step.leave is not None:
        c.run_hook(step.leave, c.context(), step=key, what=step_hook("leave", key))
    c.emit("step-leave", step=key)
    c.end_step_run()
    end_wait(c)
    follow_transitions(c, key, add_unique(c.snap.completed_steps, key))


def follow_transitions(c: Change, key: str, completed: tuple[str, ...]) -> None:
    """Go on from ``key`` to the first transition whose guard holds; none: complete."""
    following = next_step_from(c, key)
    if following is None:
        c.set(completed_steps=completed)
        complete(c)
    else:
        enter_first_available(c, following, completed)


def complete(c: Change) -> None:
    cancel_child(c)  # a child left behind (by back) does not outlive its parent
    c.end_step_run()
    c.set(status="completed", completed_at=c.env.now)
    c.emit("complete", step=c.snap.current_step)


def validate_current(c: Change) -> tuple[str, ...]:
    """Run the current step's ``validate``: errors block, none keep it running."""
    key = c.snap.current_step
    step = c.definition.step(key) if key else None
    errors: tuple[str, ...] = ()
    if step is not None and step.validate is not None:
        errors = normalise_errors(c.run_hook(step.validate, c.context(), step=key,
                                             what=step_hook("validate", key)))
    c.set(status="blocked" if errors else "running", errors=errors)
    c.emit("validate", step=key, errors=list(errors))
    return errors


def rerun(c: Change, **data: Any) -> None:
    """``retry`` once its checks passed: the current step's ``enter`` and unfinished work
    again; ``data``: what the ``retry`` event records besides (a retry from a step)."""
    c.set(status="running", errors=())
    c.emit("retry", step=c.snap.current_step, **data)
    if c.snap.current_step is None:  # it failed before its first step was entered
        enter_first_step(c, c.snap.completed_steps)
        return
    execute_step(c, include_enter=True)


def commit_cancel(c: Change, reason: str | None = None) -> None:
    """Cancel once the guards allowed it: the child first, then the work, then this."""
    cancel_child(c, reason)  # the child is cancelled, and says so, first
    paused.end_for_cancel(c)  # what workers reported while it was paused, as it ended
    cancel_task(c, CANCELLED)
    end_wait(c)
    stop_work(c, CANCELLED)
    saga.stop_compensation(c, CANCELLED)
    c.end_step_run()
    c.set(status="cancelled", completed_at=c.env.now)
    data: dict[str, Any] = {"reason": reason} if reason else {}
    c.emit("cancel", step=c.snap.current_step, **data)


# -- a step's work --------------------------------------------------------------------


def execute_step(c: Change, *, include_enter: bool) -> None:
    """Run ``enter`` (when asked) and hand out the current step's unfinished work."""
    step = c.step
    if step is None:
        return
    c.end_step_run()
    timeout = in_seconds(step.timeout)
    run = StepRun(step=step.id, token=c.new_token(), started_at=c.env.now,
                  deadline=c.env.now + timeout if timeout and step.has_work else None)
    c.set(step_run=run)
    if run.deadline is not None:
        c.effect(SetDeadline(c.snap.id, "step-timeout", run.token, run.deadline))
    if include_enter and step.enter is not None:
        c.run_hook(step.enter, c.context(), step=step.id, what=step_hook("enter", step.id))
    if include_enter and step.task is not None:
        open_task(c, step)
    if include_enter and step.wait is not None:
        begin_wait(c, step)
    if step.nested is not None:
        run_nested(c, step.id)
    dispatch_branches(c, step)
    c.unsettled = True


def resume_work(c: Change) -> None:
    """An unblocked step goes on: its unfinished work runs (with a fresh timeout)."""
    execute_step(c, include_enter=False)  # without a current step, nothing to do


def settle(c: Change) -> None:
    """Move the current step's work on until the instance waits for something."""
    while c.unsettled:
        c.unsettled = False
        advance(c)


def advance(c: Change) -> None:
    """One move: a failed branch fails the step, the next operation is queued, or the
    step's work is done (an auto step then validates and leaves)."""
    if c.snap.status not in MOVING:
        return
    step = c.step
    if step is None:
        return
    branches = [c.snap.branch(step.id, b.id) for b in step.branches]
    if any(b is None or b.status == "running" for b in branches):
        return
    failed = [b for b in branches if b is not None and b.status != "succeeded"]
    if failed:
        fail_parallel(c, step.id, failed)
        return
    if c.snap.status != "running":
        return  # blocked (by validate): failures count, but nothing new starts
    if hand_out_operation(c, step):
        return
    c.end_step_run()
    child = c.current_child
    if child is not None and child.status != "completed":
        return  # the step waits for its child
    if c.snap.open_task is not None:
        return  # the step waits for its task
    waiting = c.snap.waiting
    if waiting is not None and waiting.arrived is None:
        return  # the step waits for its signal or its time
    # An auto step moves on once it validates (entering the next step counts the move), and
    # so does a step whose signal or time came, as next would move it.
    if (step.advance == "auto" or waiting is not None) and not validate_current(c):
        leave_current(c)


def fail_parallel(c: Change, key: str, failed: list[BranchSnapshot]) -> None:
    message = f'Parallel workflow step "{key}" failed'
    branch_errors = {b.id: b.error or b.status for b in failed}
    lines = tuple(f'Branch "{branch}": {error}' for branch, error in branch_errors.items())
    c.fail(message, key, errors=(message, *lines), branches=branch_errors)


# -- the nested child -----------------------------------------------------------------


def run_nested(c: Change, key: str) -> None:
    """Start the step's child instance, or retry it when it failed; never restart it.

    A cancelled child is replaced by a new one. Another step's child still
    running is cancelled first: only one child is attached at a time.
    """
    child = c.current_child
    if child is None or child.status == "cancelled":
        cancel_child(c)
        c.let_go_of_child()  # saved as it ended, no longer attached
        definition = c.nested_definition(c.definition.step(key))
        try:  # the child's initial state meets its schema, as create() demands
            state = check_state(definition.state_schema, definition.initial_state())
        except Refused as refusal:
            message = f'Nested workflow "{definition.id}" cannot start: {refusal.message}'
            c.fail(message, key)
            raise HookFailed(message) from None
        c.set(nested=new_snapshot(c.env.new_id(), definition.id, definition.version, state,
                                  parent_id=c.snap.id, parent_step=key))
        go_on: Callable[[Change], None] | None = begin
    elif child.status in ("failed", "blocked"):
        # A retry waits for stopped work to stop: so does this one.
        go_on = None if child.stopping else rerun
    else:
        return
    if go_on is not None:
        with contextlib.suppress(HookFailed), c.on_child() as nested:  # recorded in the child
            go_on(nested)
            settle(nested)
    if c.snap.nested is not None and c.snap.nested.status == "failed":
        fail_for_child(c, c.snap.nested)


def fail_for_child(c: Change, child: WorkflowSnapshot) -> None:
    message = child.errors[0] if child.errors else f'Nested workflow "{child.workflow}" failed'
    c.fail(message, c.snap.current_step, errors=tuple(child.errors) or (message,),
           nested=child.id)


def cancel_child(c: Change, reason: str | None = None) -> None:
    """Cancel the nested child unless it already finished (no guard: the parent decided)."""
    child = c.snap.nested
    if child is not None and child.status not in FINISHED:
        with c.on_child() as nested:
            commit_cancel(nested, reason)


def child_changed(c: Change) -> None:
    """The nested child changed in this command; the parent follows it."""
    child = c.snap.nested
    if child is None:
        return
    if c.snap.status == "rolling-back":
        saga.nested_rollback_changed(c, child)
        return
    if c.snap.status != "running" or child.parent_step != c.snap.current_step:
        return
    if child.status == "completed":
        c.unsettled = True
    elif child.status == "failed":
        fail_for_child(c, child)
    elif child.status == "cancelled":
        c.fail(f'Nested workflow "{child.workflow}" was cancelled', c.snap.current_step,
               nested=child.id)
