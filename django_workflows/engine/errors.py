"""Errors of the engine. Each carries a message a user can act on."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .schema import FieldError


class WorkflowError(Exception):
    """Base class of every error raised by django-workflows."""


class DefinitionError(WorkflowError):
    """A workflow definition is broken (raised when it is constructed).

    ``kind`` says what is wrong, for the system checks: ``unknown_step``,
    ``duplicate_id``, ``not_callable`` or ``invalid``.
    """

    def __init__(self, message: str, kind: str = "invalid") -> None:
        super().__init__(message)
        self.kind = kind


class InvalidState(WorkflowError):
    """A state that breaks the definition's schema; ``field_errors`` name the fields."""

    def __init__(self, message: str, field_errors: Iterable[FieldError] = ()) -> None:
        super().__init__(message)
        self.field_errors = tuple(field_errors)


class MigrationRequired(WorkflowError):
    """An instance saved under an older version has no migration to the current one."""


class OperationBlockedError(WorkflowError):
    """Raised by ``ctx.block(message)``: the operation cannot go on without outside help."""


class OperationTimeoutError(WorkflowError):
    """An operation attempt outlived its ``timeout``."""


class OperationInterruptedError(WorkflowError):
    """The worker running an attempt stopped sending heartbeats."""


class Cancelled(WorkflowError):
    """Raised by ``check_cancelled()`` once the work should stop.

    The message says why: ``Cancelled`` for a cancelled workflow, or the
    timeout message when the step or the attempt timed out.
    """

    def __init__(self, reason: str = "Cancelled") -> None:
        super().__init__(reason)
        self.reason = reason


class StaleOperation(WorkflowError):
    """Raised by ``ctx.run_child`` from an attempt that already ended."""

    def __init__(self) -> None:
        super().__init__("Stale operation")


class Refused(Exception):
    """A rule refused the command: it answers "not moved" with a stable code."""

    def __init__(self, code: str, message: str, field_errors: Iterable[FieldError] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field_errors = tuple(field_errors)


class HookFailed(Exception):
    """A hook raised; the failure is already recorded in the snapshot."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class MissingStateKey(KeyError):
    """User code read ``state[key]`` and the state has no such key.

    Still a ``KeyError``: code that catches one (``.get()`` too) works as before.
    """

    def __init__(self, key: object) -> None:
        super().__init__(key)
        self.key = key


class Allowed(Exception):
    """Raised where a rule's checks end, in a dry run: the command would be accepted.

    ``confirm``: it would, but a person should say so first, for this reason (``back``
    reopens a completed instance).
    """

    def __init__(self, confirm: str | None = None) -> None:
        super().__init__(confirm)
        self.confirm = confirm


def error_name(error: BaseException) -> str:
    if isinstance(error, MissingStateKey):
        return "KeyError"  # what the user's code raised, as far as it knows
    return type(error).__name__


def error_message(error: BaseException) -> str:
    """The message of an exception, or its class name when it has none."""
    text = str(error)
    return text if text else type(error).__name__
