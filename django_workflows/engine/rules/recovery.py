"""Recovery by people, without a shell: pause, resume, rewind.

``pause`` stops an instance where it stands: status ``paused`` (the status it had
is kept for resume, with when, who and why), no new work is handed out and no step
moves on; work already handed out may finish, and what comes back meanwhile is
held (``rules/paused.py``). ``resume`` gives the status back and applies what was
held, in the order it came, each by its own rule, so a result that came while
paused moves the step on now, and a deadline that fell due fires now. A tree
pauses and resumes as one: from its root, its nested child with it.

``rewind(step)`` goes back to an earlier step of the history in one command, as
that many ``back`` would (each step returned to runs its ``enter`` hook), recorded
as one ``rewind`` event naming the steps left, after what they still did stopped.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..change import Change
from ..errors import HookFailed, Refused
from ..held import held_command
from ..snapshot import FINISHED, HeldInput, PauseSnapshot, WorkflowSnapshot
from . import paused as paused_rules
from .navigation import (
    not_running,
    refuse_if_cancelled,
    refuse_reopening,
    step_back,
    stop_steps_left,
)
from .steps import child_changed, settle

if TYPE_CHECKING:
    from ..commands import Pause, Resume, Rewind


def refuse_nested(c: Change, action: str) -> None:
    if c.snap.parent_id is not None:
        raise Refused("nested", f"{c.name} is nested in instance {c.snap.parent_id}: "
                                f"{action} that one, its nested children go with it")


def pause(c: Change, command: Pause) -> None:
    refuse_nested(c, "pause")
    if c.snap.paused is not None:
        raise Refused("already_paused", f"{c.name} is already paused")
    refuse_if_cancelled(c)
    if c.snap.status == "completed":
        raise Refused("completed", f"{c.name} is already completed")
    if c.snap.status == "idle":
        raise Refused("not_started", f"{c.name} has not started")
    if c.snap.status == "rolling-back":
        raise not_running(c)
    c.checked()
    pause_tree(c, command.reason)


def pause_tree(c: Change, reason: str | None) -> None:
    """Pause this instance, then its unfinished nested child."""
    c.set(status="paused", paused=PauseSnapshot(at=c.env.now, status=c.snap.status,
                                                 by=c.env.actor, reason=reason))
    if reason:
        c.emit("pause", step=c.snap.current_step, reason=reason)
    else:
        c.emit("pause", step=c.snap.current_step)
    child = c.snap.nested
    if child is not None and child.paused is None and child.status not in FINISHED \
            and child.status not in ("idle", "rolling-back"):
        with c.on_child() as nested:
            pause_tree(nested, reason)


def resume(c: Change, command: Resume) -> None:
    refuse_nested(c, "resume")
    if c.snap.paused is None:
        raise Refused("not_paused", f'{c.name} is not paused (status "{c.snap.status}")')
    c.checked()
    resume_tree(c)


def resume_tree(c: Change) -> None:
    """Resume the nested child first (what it held may complete it), then this instance:
    its status back, event ``resume``, then what it held, each by its own rule and
    settled as it would have been. A hook that raises fails the instance as ever, and
    what is still held is applied all the same: nothing held is lost."""
    failed: HookFailed | None = None
    child = c.snap.nested
    if child is not None and child.paused is not None:
        try:
            with c.on_child() as nested:
                resume_tree(nested)
        except HookFailed as error:
            failed = error
    paused = c.snap.paused
    if paused is not None:
        c.set(status=paused.status, paused=None)
        c.emit("resume", step=c.snap.current_step, paused_at=paused.at,
               held=len(paused.held))
        try:
            child_changed(c)
            settle(c)
        except HookFailed as error:
            failed = failed or error
        for held in paused.held:
            try:
                apply_held(c, held)
                settle(c)
            except Refused:  # no longer current: what came before it changed that
                paused_rules.keep_signal_again(c, held)  # a signal waits for its step again
            except HookFailed as error:
                failed = failed or error
    c.unsettled = True
    if failed is not None:
        raise failed


def apply_held(c: Change, held: HeldInput) -> None:
    """What came while paused, applied by its own rule now."""
    command = held_command(held)
    type(command).rule(c, command)


def earlier_steps(snapshot: WorkflowSnapshot) -> tuple[str, ...]:
    """The steps ``rewind`` may go back to: the history's earlier steps, newest first,
    each once."""
    found: list[str] = []
    for step in reversed(snapshot.history[:-1]):
        if step not in found:
            found.append(step)
    return tuple(found)


def rewind(c: Change, command: Rewind) -> None:
    refuse_if_cancelled(c)
    if c.snap.status == "rolling-back":
        raise Refused("not_running", f"{c.name} is rolling back")
    reopening = refuse_reopening(c)
    if len(c.snap.history) < 2:
        raise Refused("no_previous_step", f"{c.name} has no previous step")
    if command.step is None:
        c.checked(confirm=reopening)  # asked without a step: one of the history's would do
    history = c.snap.history
    if command.step not in history[:-1]:
        where = "the current step" if command.step == history[-1] else "not in its history"
        raise Refused("not_in_history", f'Step "{command.step}" is {where}: {c.name} can '
                                        f"rewind to {', '.join(earlier_steps(c.snap))}")
    c.checked(confirm=reopening)
    index = len(history) - 1 - history[::-1].index(command.step, 1)
    left = history[index + 1:][::-1]
    stop_steps_left(c, left)  # first, as back's work stops before its event
    c.emit("rewind", step=command.step, steps_left=list(left))
    for _ in left:
        step_back(c, announce=False)
