"""Django signals, sent after commit for every event.

``workflow_event`` is sent with ``sender=WorkflowInstance``, ``instance`` (the
instance row) and ``event`` (the :class:`~django_workflows.models.WorkflowEvent`
row). A receiver that raises changes nothing: the error is logged and given to
the definition's ``on_observer_error``.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from functools import partial
from typing import Any

from django.dispatch import Signal

from . import engine, registry

logger = logging.getLogger("django_workflows")

workflow_event = Signal()


def listened_to(rows: Collection[Any]) -> bool:
    """Whether anyone hears the events of these instance rows: a receiver of
    ``workflow_event`` (its sender is the rows' class), or a definition's ``analytics``."""
    if rows and workflow_event.has_listeners(type(next(iter(rows)))):
        return True
    return any(getattr(registry.find(row.workflow), "analytics", None) for row in rows)


def announce(definitions: dict[str, engine.Workflow], rows: Iterable[Any]) -> None:
    """Give each event to ``analytics`` and then to the signal's receivers (each gets the
    ``WorkflowEvent`` row; the hot path saved it as an ``EventRow``)."""
    for saved in rows:
        row = saved.as_model() if hasattr(saved, "as_model") else saved
        event = engine.Event(type=row.type, instance_id=str(row.instance_id),
                             step=row.step or None, error=row.error, data=row.data,
                             at=row.created_at.timestamp())
        problems = engine.deliver(definitions.get(row.instance.workflow), [event],
                                  [partial(_send, row)])
        for problem in problems:
            logger.error("Observer of workflow event %s #%s failed: %r", row.instance_id,
                         row.sequence, problem, exc_info=problem)


def _send(row: Any, event: engine.Event) -> None:
    """Send the signal to every receiver; those that raised are raised together."""
    from .models import WorkflowInstance

    failed = [result for _receiver, result in workflow_event.send_robust(
        sender=WorkflowInstance, instance=row.instance, event=row)
        if isinstance(result, Exception)]
    if failed:
        raise ExceptionGroup("workflow_event receivers failed", failed)
