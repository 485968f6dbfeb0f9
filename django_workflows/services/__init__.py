"""The service layer: the only writer of workflow instances.

One function per command people give (``functions.py``, held equal to
``engine.COMMANDS``): ``start``, ``next``, ``back``, ``rewind(instance, step)``,
``skip``, ``skip_operation(instance, operation=None)``, ``validate``,
``retry(instance, operation=None, from_step=None)``,
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
Every function here has an async twin for async views (``async_twins.py``):
``await services.anext(instance, user=request.user)``.
"""

from __future__ import annotations

from .. import engine
from . import async_twins
from .async_twins import *  # noqa: F403 - the a-twins, named once in async_twins.__all__
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
    applies_to_journal,
    applies_to_operations,
    command,
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


__all__ = [
    "COMMAND_NAMES",
    "CommandOptions",
    "InstanceRef",
    "SignalSent",
    "SweepReport",
    "applies",
    "applies_to_journal",
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
__all__ += async_twins.__all__
