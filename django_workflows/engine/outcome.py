"""What a command returns: the new snapshot, its events, and effects as data."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .events import EventName
from .schema import FieldError
from .slots import Slot
from .snapshot import AttemptKind, TaskSnapshot, WorkflowSnapshot

DeadlineKind = Literal["step-timeout", "attempt-timeout", "retry", "task-due",
                       "signal-timeout", "timer"]

@dataclass(frozen=True)
class Event:
    type: EventName
    instance_id: str
    step: str | None = None
    error: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    at: float = 0.0


@dataclass(frozen=True)
class RunAttempt:
    """Run the work that ``token`` names (an operation attempt, a branch, a compensation)."""

    instance_id: str
    token: str
    kind: AttemptKind
    target: str
    attempt: int = 1
    timeout: float | None = None
    slot: Slot | None = None  # its keys, when it is held to a Limit or a Rate


@dataclass(frozen=True)
class StopAttempt:
    """Tell the worker running ``token`` to stop; its result will be discarded."""

    instance_id: str
    token: str
    reason: str


@dataclass(frozen=True)
class SetDeadline:
    instance_id: str
    kind: DeadlineKind
    token: str
    at: float


@dataclass(frozen=True)
class ClearDeadline:
    instance_id: str
    token: str


@dataclass(frozen=True)
class SaveTask:
    """The task changed (opened, claimed, released, completed, overdue, cancelled).

    ``opened``: it is new; ``candidates_changed``: who may act on it is no longer who
    could (an escalation).
    """

    instance_id: str
    task: TaskSnapshot
    opened: bool = False
    candidates_changed: bool = False


@dataclass(frozen=True)
class KeptSignal:
    """A signal that arrived before its step waited, as the service found it kept (and
    found its sender allowed to send it to this instance)."""

    id: Any  # its row's key
    payload: Any
    message_id: str | None = None
    sender: str | None = None  # who sent it, as the service names users


# What became of a signal's row with this command: taken by the instance; refused (a kept
# one whose payload the step or the state refuses); held by a paused instance; kept again
# (held, then no longer awaited when the instance resumed or was cancelled).
SignalFate = Literal["taken", "refused", "held", "kept"]


@dataclass(frozen=True)
class TakeSignal:
    """The signal ``signal_id``'s row, as this command leaves it for the instance."""

    instance_id: str
    signal_id: Any
    fate: SignalFate = "taken"
    reason: str | None = None  # why it was refused


@dataclass(frozen=True)
class TruncateJournal:
    """Delete the entries of the operation's journal ``journal`` at ``position`` and after,
    in the command's transaction: a retry from that step runs them again."""

    instance_id: str
    journal: str
    position: int


Effect = (RunAttempt | StopAttempt | SetDeadline | ClearDeadline | SaveTask | TakeSignal
          | TruncateJournal)


@dataclass(frozen=True)
class Outcome:
    """The result of one command.

    ``moved`` is False when a rule refused the command (``code`` and
    ``message`` say why); the snapshot may still have changed, as a ``next``
    refused by validation stores the errors. ``error`` is set when a hook
    raised: the failure is recorded in the snapshot. ``detached`` are nested
    children the command let go of (replaced by a new child, or reset by a
    rollback), as they ended: no longer in the tree, but saved all the same.
    """

    snapshot: WorkflowSnapshot
    events: tuple[Event, ...] = ()
    effects: tuple[Effect, ...] = ()
    detached: tuple[WorkflowSnapshot, ...] = ()
    moved: bool = True
    code: str | None = None
    message: str | None = None
    error: str | None = None
    field_errors: tuple[FieldError, ...] = ()


def changed_nodes(before: WorkflowSnapshot | None, after: WorkflowSnapshot,
                  detached: tuple[WorkflowSnapshot, ...] = ()) -> list[WorkflowSnapshot]:
    """The snapshots of the tree (an instance, its nested children, and the children
    it let go of) that changed."""
    def own(node: WorkflowSnapshot) -> tuple[WorkflowSnapshot, str | None]:
        if node.nested is None:
            return node, None
        return node.changed(nested=None), node.nested.id

    old = {node.id: node for node in before.tree()} if before is not None else {}
    nodes = [*after.tree(), *(node for child in detached for node in child.tree())]
    # The same object is the same node, its children too: no need to compare its fields.
    return [node for node in nodes if (was := old.get(node.id)) is not node
            and (was is None or own(was) != own(node))]
