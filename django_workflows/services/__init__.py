"""The service layer: the only writer of workflow instances.

One function per command people give (``functions.py``, held equal to
``engine.COMMANDS``): ``start``, ``next``, ``back``, ``rewind(instance, step)``,
``skip``, ``skip_operation(instance, operation=None)``, ``validate``, ``retry``,
``pause(instance, reason=None)``, ``resume``, ``cancel(instance, reason=None)``,
``rollback``, ``update_state(instance, value)``,
and for a step's task ``claim``, ``release`` and ``complete(instance, task=None,
input=None)``. Each takes an instance (or its id) and keyword options: ``user``
(the acting user: access is judged for them under the row lock, hooks receive
them, events record them; without a user the caller is trusted),
``expected_revision`` (raise :class:`~django_workflows.exceptions.StaleRevision`
when the instance moved on), ``idempotency_key`` (the same key answers the first
result), ``lock_timeout``. A refused command raises
:class:`~django_workflows.exceptions.WorkflowNotMoved` with a stable ``code``.
``execute(instance, engine.Cancel(reason="..."))`` gives any declared command.
"""

from __future__ import annotations

from typing import Any

from .. import engine
from ..models import WorkflowInstance
from .attempts import (
    beat,
    claim_attempt,
    finish_attempt,
    finish_claimed,
    fire_deadline,
    interrupt_attempt,
)
from .commands import (
    InstanceRef,
    applies,
    applies_to_operations,
    create,
    delete,
    execute,
)
from .functions import (
    CommandOptions,
    back,
    cancel,
    claim,
    complete,
    next,
    pause,
    release,
    resume,
    retry,
    rewind,
    rollback,
    skip,
    skip_operation,
    start,
    update_state,
    validate,
)
from .schedules import fire_due_schedules, pause_schedule, resume_schedule
from .signal_delivery import SignalSent, signal
from .sweep import SweepReport, sweep
from .sweep_items import retry_set_aside

COMMAND_NAMES = tuple(engine.ACTIONS)  # the commands offered as actions


def command(instance: InstanceRef, name: str, *args: Any, **options: Any) -> WorkflowInstance:
    """Give the declared command ``name``; what it takes (``reason``, ``value``) comes first
    or by name, then the options of :class:`CommandOptions`."""
    try:
        declared = engine.COMMANDS[name]
    except KeyError:
        raise ValueError(f"Unknown command {name!r}; expected one of "
                         f"{', '.join(engine.COMMANDS)}") from None
    takes = declared.takes()
    if len(args) > len(takes):
        raise TypeError(f"{name}() takes {len(takes)} value(s) besides the instance: "
                        f"{', '.join(takes) or 'none'}")
    values = dict(zip(takes, args, strict=False))
    values.update({key: options.pop(key) for key in takes if key in options})
    return execute(instance, declared(**values), **options)


__all__ = [
    "COMMAND_NAMES",
    "CommandOptions",
    "InstanceRef",
    "SignalSent",
    "SweepReport",
    "applies",
    "applies_to_operations",
    "back",
    "beat",
    "cancel",
    "claim",
    "claim_attempt",
    "command",
    "complete",
    "create",
    "delete",
    "execute",
    "finish_attempt",
    "finish_claimed",
    "fire_deadline",
    "fire_due_schedules",
    "interrupt_attempt",
    "next",
    "pause",
    "pause_schedule",
    "release",
    "resume",
    "resume_schedule",
    "retry",
    "retry_set_aside",
    "rewind",
    "rollback",
    "signal",
    "skip",
    "skip_operation",
    "start",
    "sweep",
    "update_state",
    "validate",
]
