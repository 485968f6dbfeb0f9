"""Errors the service layer raises. Each maps to one HTTP status in the API."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from .engine import FieldError, MigrationRequired, WorkflowError

if TYPE_CHECKING:
    from .models import WorkflowInstance

__all__ = [
    "Busy", "IdempotencyConflict", "InstanceNotFound", "InvalidPayload", "InvalidState",
    "MigrationRequired", "NotAllowed", "ReferenceTaken", "StaleRevision", "StateTooLarge",
    "UnknownSignal", "UnknownWorkflow", "WorkflowError", "WorkflowNotMoved",
]


class WorkflowNotMoved(WorkflowError):
    """A rule refused the command; ``code`` is stable, ``reason`` is for people.

    Nothing changed, except for ``validation_failed``: the errors were stored
    on the instance (status ``blocked``), which ``instance`` shows.
    """

    def __init__(self, reason: str, code: str, *, instance: WorkflowInstance | None = None,
                 field_errors: Iterable[FieldError] = ()) -> None:
        super().__init__(reason)
        self.reason = reason
        self.code = code
        self.instance = instance
        self.field_errors = tuple(field_errors)


class InvalidState(WorkflowNotMoved):
    """A state that breaks the definition's schema (or is not a JSON object)."""

    def __init__(self, reason: str, field_errors: Iterable[FieldError] = (),
                 instance: WorkflowInstance | None = None) -> None:
        super().__init__(reason, "invalid_state", instance=instance, field_errors=field_errors)


class ReferenceTaken(WorkflowNotMoved):
    """Another instance of the workflow already has this reference; ``existing`` is its id."""

    def __init__(self, workflow: str, reference: str, existing: str) -> None:
        super().__init__(f'An instance of workflow "{workflow}" with reference "{reference}" '
                         "already exists", "reference_taken")
        self.existing = existing


class InvalidPayload(WorkflowNotMoved):
    """A signal's payload that breaks the schema its step declares (or a timer's)."""

    def __init__(self, reason: str, field_errors: Iterable[FieldError] = ()) -> None:
        super().__init__(reason, "invalid_payload", field_errors=field_errors)


class UnknownSignal(WorkflowError, LookupError):
    """The workflow has no step that waits for a signal of that name."""

    code = "unknown_signal"


class StateTooLarge(WorkflowNotMoved):
    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"The state is {size} bytes of JSON; the limit is {limit} bytes",
                         "state_too_large")
        self.size = size
        self.limit = limit


class StaleRevision(WorkflowError):
    """The caller expected another revision (If-Match): someone changed it first."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"The instance is at revision {actual}, not {expected}")
        self.expected = expected
        self.actual = actual


class Busy(WorkflowError):
    """The instance's row stayed locked by another command for longer than allowed."""

    code = "busy"


class InstanceNotFound(WorkflowError, LookupError):
    pass


class NotAllowed(WorkflowError):
    """The user may see the instance but not do this to it (the access rules refused)."""

    code = "permission_denied"


class UnknownWorkflow(WorkflowError, LookupError):
    pass


class IdempotencyConflict(WorkflowError):
    """An idempotency key reused for a different request."""

    def __init__(self, key: str, detail: Any = None) -> None:
        super().__init__(f'Idempotency key "{key}" was already used for a different request')
        self.key = key
        self.detail = detail
