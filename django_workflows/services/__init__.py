"""The service layer: the only writer of workflow instances.

Every function takes an instance (or its id) and keyword options:
``user`` (the acting user, given to hooks and recorded on events),
``expected_revision`` (raise :class:`~django_workflows.exceptions.StaleRevision`
when the instance moved on), ``idempotency_key`` (the same key answers the
first result), ``lock_timeout``. A refused command raises
:class:`~django_workflows.exceptions.WorkflowNotMoved` with a stable ``code``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .. import engine
from ..models import WorkflowInstance
from .attempts import claim_attempt, finish_attempt, fire_deadline, interrupt_attempt
from .commands import InstanceRef, create, execute
from .sweep import SweepReport, sweep

__all__ = [
    "COMMAND_NAMES", "SweepReport", "back", "cancel", "claim_attempt", "command", "create",
    "execute", "finish_attempt", "fire_deadline", "interrupt_attempt", "next", "retry",
    "rollback", "skip", "start", "sweep", "update_state", "validate",
]

COMMAND_NAMES = tuple(engine.COMMANDS)


def command(instance: InstanceRef, name: str, **options: Any) -> WorkflowInstance:
    """Run a command by name: start, next, back, skip, validate, retry, cancel, rollback."""
    try:
        command_class = engine.COMMANDS[name]
    except KeyError:
        raise ValueError(f"Unknown command {name!r}; expected one of "
                         f"{', '.join(COMMAND_NAMES)}") from None
    return execute(instance, command_class(), **options)


def start(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Start(), **options)


def next(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Next(), **options)


def back(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Back(), **options)


def skip(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Skip(), **options)


def validate(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Validate(), **options)


def retry(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Retry(), **options)


def cancel(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Cancel(), **options)


def rollback(instance: InstanceRef, **options: Any) -> WorkflowInstance:
    return execute(instance, engine.Rollback(), **options)


def update_state(instance: InstanceRef,
                 value: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]],
                 **options: Any) -> WorkflowInstance:
    """Replace the state with ``value`` (or what ``value(state)`` returns)."""
    return execute(instance, engine.UpdateState(value), **options)
