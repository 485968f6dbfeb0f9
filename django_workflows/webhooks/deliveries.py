"""What a webhook's event names: :class:`Delivery`, each checked before any is sent, and
:class:`RejectEvent`, the 4xx or 5xx answer that changes nothing; the service's errors are
turned into such answers here too."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .. import engine
from ..exceptions import (
    Busy,
    InstanceNotFound,
    InvalidPayload,
    NotAllowed,
    StateTooLarge,
    UnknownSignal,
    UnknownWorkflow,
    WorkflowError,
    WorkflowNotMoved,
)
from ..inputs import storable
from ..models import WorkflowInstance

# The longest text the signal's row keeps in a name, an address or a message id.
MAX_TEXT = 200


@dataclass(frozen=True)
class Delivery:
    """One signal to send for an event: to ``workflow``'s instances by exactly one of
    ``instance``, ``reference`` and ``correlation``. ``message_id`` defaults to the event's
    id; give each delivery of one event to the same signal its own."""

    workflow: str
    signal: str
    payload: Any = None
    instance: WorkflowInstance | str | None = None
    reference: str | None = None
    correlation: str | None = None
    message_id: str | None = None


class RejectEvent(Exception):
    """An event this webhook will not take: answered ``status`` (400) with ``detail`` and
    ``code``, nothing sent. ``deliveries`` raises it for an event it cannot read."""

    def __init__(self, detail: str, code: str = "invalid_event", *, status: int = 400,
                 fields: dict[str, list[str]] | None = None) -> None:
        if not 400 <= status < 600:
            raise ValueError(f"A rejection answers 4xx or 5xx, not {status}")
        super().__init__(detail)
        self.detail, self.code, self.status, self.fields = detail, code, status, fields

    def body(self) -> dict[str, Any]:
        return {"detail": self.detail, "code": self.code,
                **({"fields": self.fields} if self.fields else {})}


def check_text(what: str, value: Any) -> None:
    if not isinstance(value, str) or not value:
        raise RejectEvent(f"{what} is not a text", "invalid_delivery")
    if len(value) > MAX_TEXT:
        raise RejectEvent(f"{what} is longer than {MAX_TEXT} characters", "invalid_delivery")
    if storable.json_problems(value):
        raise RejectEvent(f"{what} has characters a database cannot store",
                          "invalid_delivery")


def check_delivery(delivery: Delivery) -> None:
    what = f'The delivery of "{delivery.signal}"'
    check_text(f"{what}'s workflow", delivery.workflow)
    check_text(f"{what}'s signal", delivery.signal)
    addresses = {"instance": delivery.instance, "reference": delivery.reference,
                 "correlation": delivery.correlation}
    given = {key: value for key, value in addresses.items() if value is not None}
    if len(given) != 1:
        raise RejectEvent(f"{what} needs exactly one of instance, reference and correlation; "
                          f"the event gave {', '.join(given) or 'none'}", "invalid_delivery")
    for key, value in given.items():
        if not isinstance(value, WorkflowInstance):
            check_text(f"{what}'s {key}", value)
    if delivery.message_id is not None:
        check_text(f"{what}'s message id", delivery.message_id)
    problems = storable.problem_lines(storable.json_problems(delivery.payload))
    if problems:
        raise RejectEvent(f"{what}'s payload cannot be stored: {'; '.join(problems[:5])}",
                          "invalid_delivery")


def refusal_of(error: WorkflowError) -> RejectEvent | None:
    """The answer to one of the service's errors; None for ``not_waiting`` (acknowledged:
    the instance is finished, and a provider would otherwise send it again for days)."""
    detail = str(error)
    if isinstance(error, Busy):
        return RejectEvent(detail, "busy", status=503)
    if isinstance(error, UnknownSignal | UnknownWorkflow):
        return RejectEvent(detail, getattr(error, "code", "unknown_workflow"))
    if isinstance(error, StateTooLarge):
        return RejectEvent(error.reason, error.code, status=413)
    if isinstance(error, InvalidPayload):
        return RejectEvent(error.reason, error.code,
                           fields=field_errors("payload", error.field_errors))
    if isinstance(error, NotAllowed):
        return RejectEvent(detail, error.code, status=403)
    if isinstance(error, InstanceNotFound):
        return RejectEvent(detail, "not_found", status=404)
    if isinstance(error, WorkflowNotMoved):
        return None if error.code == "not_waiting" else RejectEvent(error.reason, error.code,
                                                                     status=409)
    return RejectEvent(detail, "conflict", status=409)


def field_errors(prefix: str, problems: Iterable[engine.FieldError]) -> dict[str, list[str]]:
    """Field errors named from the top: ``payload.amount``, ``event.data``."""
    fields: dict[str, list[str]] = {}
    for problem in problems:
        fields.setdefault(f"{prefix}.{problem.field}" if problem.field else prefix,
                          []).append(problem.message)
    return fields
