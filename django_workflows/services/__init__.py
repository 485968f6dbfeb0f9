"""The service layer: the only writer of workflow instances.

One function per declared command (``engine.COMMANDS``): ``start``, ``next``,
``back``, ``skip``, ``validate``, ``retry``, ``cancel(instance, reason=None)``,
``rollback`` and ``update_state(instance, value)``. Each takes an instance (or
its id) and keyword options: ``user`` (the acting user: access is judged for
them under the row lock, hooks receive them, events record them; without a
user the caller is trusted), ``expected_revision`` (raise
:class:`~django_workflows.exceptions.StaleRevision` when the instance moved
on), ``idempotency_key`` (the same key answers the first result),
``lock_timeout``. A refused command raises
:class:`~django_workflows.exceptions.WorkflowNotMoved` with a stable ``code``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from .. import engine
from ..models import WorkflowInstance
from .attempts import beat, claim_attempt, finish_attempt, fire_deadline, interrupt_attempt
from .commands import InstanceRef, applies, create, delete, execute
from .sweep import SweepReport, sweep

COMMAND_NAMES = tuple(engine.ACTIONS)  # the commands offered as actions


class CommandFunction(Protocol):
    def __call__(self, instance: InstanceRef, /, *args: Any, **options: Any
                 ) -> WorkflowInstance: ...


def command(instance: InstanceRef, name: str, *args: Any, **options: Any) -> WorkflowInstance:
    """Run a command by name; what it takes (``reason``, ``value``) comes first or by name."""
    try:
        declared = engine.COMMANDS[name]
    except KeyError:
        raise ValueError(f"Unknown command {name!r}; expected one of "
                         f"{', '.join(COMMAND_NAMES)}") from None
    takes = declared.takes()
    if len(args) > len(takes):
        raise TypeError(f"{name}() takes {len(takes)} value(s) besides the instance: "
                        f"{', '.join(takes) or 'none'}")
    values = dict(zip(takes, args, strict=False))
    values.update({key: options.pop(key) for key in takes if key in options})
    return execute(instance, declared(**values), **options)


def _function_for(declared: type[engine.PersonCommand]) -> Callable[..., WorkflowInstance]:
    def run(instance: InstanceRef, *args: Any, **options: Any) -> WorkflowInstance:
        return command(instance, declared.name, *args, **options)

    run.__name__ = run.__qualname__ = declared.name
    takes = "".join(f", {name}" for name in declared.takes())
    run.__doc__ = f"{declared.summary}: ``{declared.name}(instance{takes}, **options)``."
    return run


globals().update({name: _function_for(declared) for name, declared in engine.COMMANDS.items()})


def __getattr__(name: str) -> CommandFunction:
    """For type checkers: every declared command is a function of this module."""
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "COMMAND_NAMES", "SweepReport", "applies", "beat", "claim_attempt", "command", "create",
    "delete", "execute", "finish_attempt", "fire_deadline", "interrupt_attempt", "sweep",
    *engine.COMMANDS,
]
