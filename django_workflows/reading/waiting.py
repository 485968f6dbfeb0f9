"""What an instance waits for, as people see it: a signal, a time, or a person's task.

The API's ``waiting`` field, the admin's words on the instance page and the diagram's
waiting step all read it from here, so they never disagree. A signal that arrived (or a
timer that fired) is no longer waited for, though the snapshot keeps it until the step
is left.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..clock import to_datetime
from ..engine import MOVING, WorkflowSnapshot

# The statuses in which a signal is taken (engine/rules/waits.py: receive): a blocked
# instance (its validation refused) still waits; a failed or finished one does not.
WAITS_WHEN = MOVING  # its step takes what comes back

WaitingKind = Literal["signal", "timer", "task"]


@dataclass(frozen=True)
class Waiting:
    """What the current step waits for: the signal ``name`` (with its ``correlation``)
    until its timeout, a timer until it falls due, or the task ``name`` (its title)
    until its due time; ``until`` is None where there is no such time."""

    kind: WaitingKind
    step: str
    name: str | None = None
    correlation: str | None = None
    until: datetime | None = None
    task: str | None = None  # the task's id
    # An operation's durable code waits (not the step): its id, and the position of the
    # journal's entry that waits.
    operation: str | None = None
    position: int | None = None


def waiting_of(snap: WorkflowSnapshot) -> Waiting | None:
    """What the instance waits for now, or None when it waits for nothing outside."""
    if snap.status not in WAITS_WHEN or not snap.current_step:
        return None
    wait = snap.waiting
    if wait is not None and wait.arrived is None and wait.step == snap.current_step:
        return Waiting(wait.kind, wait.step, name=wait.name, correlation=wait.correlation,
                       until=to_datetime(wait.until), operation=wait.operation,
                       position=wait.position)
    task = snap.open_task
    if task is not None:
        return Waiting("task", task.step, name=task.title, until=to_datetime(task.due_at),
                       task=task.id, operation=task.operation, position=task.position)
    return None
