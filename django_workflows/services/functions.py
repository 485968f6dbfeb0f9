"""One typed function per command people give: ``services.cancel(instance, reason=...)``.

Each is :func:`~.commands.execute` with its command's declaration
(``engine/commands.py``), written out so that a reader and a type checker see
what it takes: a misspelt field or option is a type error, not a surprise at
run time. ``tests/services/test_functions.py`` holds them equal to
``engine.COMMANDS``, field by field, and prints the line a new command needs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, TypedDict, Unpack

from .. import engine
from ..models import WorkflowInstance
from .commands import InstanceRef, execute


class CommandOptions(TypedDict, total=False):
    """What every command function takes besides its command's own fields."""

    user: Any  # who acts: access is judged for them under the row lock (None: trusted code)
    expected_revision: int | None  # StaleRevision unless the instance is still at it
    idempotency_key: str | None  # the same key answers the first result
    fingerprint: str | None  # what the key stands for (default: a hash of the command)
    lock_timeout: float | None  # seconds to wait for the row lock (default: its setting)


def start(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Start an idle instance."""
    return execute(instance, engine.Start(), **options)


def next(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Validate and leave the current step, then follow the transitions."""
    return execute(instance, engine.Next(), **options)


def back(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Go back to the previous step."""
    return execute(instance, engine.Back(), **options)


def rewind(instance: InstanceRef, /, step: str, **options: Unpack[CommandOptions]
           ) -> WorkflowInstance:
    """Go back to an earlier step of the history, as that many backs would."""
    return execute(instance, engine.Rewind(step), **options)


def skip(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Skip the current step."""
    return execute(instance, engine.Skip(), **options)


def skip_operation(instance: InstanceRef, /, operation: str | None = None,
                   **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Skip an operation of the current step that has not started (by default the next)."""
    return execute(instance, engine.SkipOperation(operation), **options)


def validate(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Validate the current step (errors: blocked)."""
    return execute(instance, engine.Validate(), **options)


def retry(instance: InstanceRef, /, operation: str | None = None,
          from_step: int | None = None, **options: Unpack[CommandOptions]
          ) -> WorkflowInstance:
    """Retry a failed or blocked instance; with ``operation`` and ``from_step``, from that
    entry of the operation's journal: it and the entries after it are deleted, and the
    operation's code runs those steps again."""
    return execute(instance, engine.Retry(operation, from_step), **options)


def pause(instance: InstanceRef, /, reason: str | None = None,
          **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Hand out no new work and move no step on until resumed; ``reason`` is shown."""
    return execute(instance, engine.Pause(reason), **options)


def resume(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Go on, applying what came back while paused."""
    return execute(instance, engine.Resume(), **options)


def cancel(instance: InstanceRef, /, reason: str | None = None,
           **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Cancel the instance; ``reason`` is recorded on the ``cancel`` event."""
    return execute(instance, engine.Cancel(reason), **options)


def rollback(instance: InstanceRef, /, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Undo what was done and return to idle."""
    return execute(instance, engine.Rollback(), **options)


def update_state(instance: InstanceRef, /,
                 value: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
                 | None = None, **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Replace the state with ``value``, or with ``value(current_state)`` if callable."""
    return execute(instance, engine.UpdateState(value), **options)


def claim(instance: InstanceRef, /, task: str | None = None,
          **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Take the task: until you release it, only you may complete it."""
    return execute(instance, engine.Claim(task), **options)


def release(instance: InstanceRef, /, task: str | None = None,
            **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Give the task back to its candidates."""
    return execute(instance, engine.Release(task), **options)


def complete(instance: InstanceRef, /, task: str | None = None,
             input: Mapping[str, Any] | None = None,
             **options: Unpack[CommandOptions]) -> WorkflowInstance:
    """Give the task's input; the step moves on."""
    return execute(instance, engine.Complete(task, input), **options)
