"""Tasks: a step that waits for a person's input (``docs/tasks.md``).

Entering the step opens its task (``task-open``); its candidates may
``claim`` and ``release`` it, and ``complete(input)`` checks the input
against the task's form, merges it into the state, closes the task with who
decided, and leaves the step as ``next`` does, in the same command. While the
task is open, ``next`` is refused (``task_open``). Leaving the step another
way cancels it; past ``due`` it is overdue and its ``escalate_to`` become
candidates too. Who is a candidate is judged by the service (it knows the
users); the engine records actors by the ids the service gives them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ..change import Change
from ..definition import Task, Workflow
from ..errors import Refused
from ..messages import step_hook
from ..outcome import ClearDeadline
from ..schema import FieldError, check_state, validate_state
from ..snapshot import MOVING, TaskSnapshot
from . import durable
from .steps import leave_current, normalise_errors, validate_current
from .work import put_task

if TYPE_CHECKING:
    from ..commands import Claim, Complete, Release


def current_task(c: Change, task_id: str | None) -> TaskSnapshot:
    """The open task a task command names (by default the current step's)."""
    task = c.snap.open_task
    if task is not None and task_id in (None, task.id):
        return task
    if task_id is None:
        raise Refused("no_task", f"{c.name} has no open task")
    raise Refused("task_closed", "This task is no longer open")


def claim(c: Change, command: Claim) -> None:
    task = current_task(c, command.task)
    if task.claimed_by == c.env.actor:
        raise Refused("already_claimed", f'You have claimed "{task.title}" already')
    if task.claimed_by is not None:
        raise Refused("task_claimed", f'"{task.title}" is claimed by someone else')
    c.checked()
    put_task(c, replace(task, claimed_by=c.env.actor))
    c.emit("task-claim", step=task.step, **task.named)


def release(c: Change, command: Release) -> None:
    task = current_task(c, command.task)
    if task.claimed_by is None:
        raise Refused("not_claimed", f'"{task.title}" is not claimed')
    c.checked()
    put_task(c, replace(task, claimed_by=None))
    c.emit("task-release", step=task.step, released=task.claimed_by, **task.named)


def complete(c: Change, command: Complete) -> None:
    task = current_task(c, command.task)
    if c.snap.status not in MOVING:
        raise Refused("not_running", f'{c.name} is not running (status "{c.snap.status}")')
    if task.claimed_by is not None and task.claimed_by != c.env.actor:
        raise Refused("task_claimed", f'"{task.title}" is claimed by someone else')
    if command.input is None:
        c.checked()  # asked without an input: all but the input allows it
    if task.operation is not None:  # asked by an operation's durable code
        value = check_input(task_of(c.definition, task), command.input)
        c.checked()
        close_task(c, task, value)
        durable.decided(c, task, value)
        return
    step = c.definition.step(task.step)
    assert step.task is not None
    value = check_input(step.task, command.input)
    if step.task.merge is not None:  # the definition's code: a raise is a hook's failure
        merged = c.run_hook(step.task.merge, dict(c.snap.state), value, step=step.id,
                            what=step_hook("merge", step.id))
    else:
        merged = {**c.snap.state, step.task.key or step.id: value}
    state = check_state(c.definition.state_schema, merged)
    before = c.snap
    c.set(state=state)  # the step's validate judges the state the input makes
    errors = normalise_errors(c.run_hook(step.validate, c.context(), step=step.id,
                                         what=step_hook("validate", step.id))) \
        if step.validate is not None else ()
    if errors:
        c.snap = before  # refused: nothing changes
        raise Refused("validation_failed", "; ".join(errors))
    c.checked()
    close_task(c, task, value)
    validate_current(c)
    leave_current(c)


def close_task(c: Change, task: TaskSnapshot, value: dict[str, Any]) -> None:
    """The task is done, with ``value`` decided by the actor."""
    put_task(c, replace(task, status="done", claimed_by=task.claimed_by or c.env.actor,
                        completed_by=c.env.actor, input=value, completed_at=c.env.now))
    if task.due_at is not None and not task.overdue:
        c.effect(ClearDeadline(c.snap.id, task.id))
    c.emit("task-complete", step=task.step, input=value, **task.named)


def task_of(definition: Workflow, task: TaskSnapshot) -> Task | None:
    """The :class:`Task` an open task stands for: its step's, or the one an operation's
    durable code asked (its form as JSON Schema)."""
    if task.asked is not None:
        asked = task.asked
        show = asked.get("show") or None
        if show and not isinstance(show[0], str):  # label/value pairs, as the code's hook
            pairs = [tuple(pair) for pair in show]  # gave them when it asked
            show = lambda ctx: pairs  # noqa: E731 (a hook, as Task.show takes)
        return Task(asked.get("form") or {"type": "object"}, title=task.title,
                    candidates=tuple(asked.get("candidates") or ()),
                    escalate_to=tuple(asked.get("escalate_to") or ()),
                    exclude_owner=bool(asked.get("exclude_owner")),
                    show=tuple(show) if show and not callable(show) else show)
    step = definition.steps_by_id.get(task.step)
    return step.task if step is not None else None


def check_input(task: Task | None, value: Any) -> dict[str, Any]:
    """The input as the task's form takes it, or Refused("invalid_input") naming each field."""
    if not isinstance(value, dict):
        raise Refused("invalid_input", "The input must be a JSON object",
                      [FieldError("", "expected an object")])
    problems = validate_state(task.form if task is not None else None, value)
    if problems:
        raise Refused("invalid_input", "; ".join(map(str, problems)), problems)
    return value


def task_due(c: Change, token: str) -> None:
    """Past its due date the task is overdue, and its escalation candidates join in."""
    task = c.snap.open_task
    if task is None or task.id != token or task.overdue:
        raise Refused("stale_deadline", "The task is no longer due")
    defined = task_of(c.definition, task)
    escalated = tuple(defined.escalate_to) if defined is not None else ()
    candidates = (*task.candidates, *(e for e in escalated if e not in task.candidates))
    put_task(c, replace(task, overdue=True, candidates=candidates),
             candidates_changed=candidates != task.candidates)
    c.emit("task-overdue", step=task.step, escalated_to=list(escalated), **task.named)
