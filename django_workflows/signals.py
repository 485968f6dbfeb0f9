"""Django signals, sent after commit for every event.

``workflow_event`` is sent with ``sender=WorkflowInstance``, ``instance`` (the
instance row) and ``event`` (the :class:`~django_workflows.models.WorkflowEvent`
row). A receiver that raises changes nothing: the error is logged and given to
the definition's ``on_observer_error``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.dispatch import Signal

from . import engine

logger = logging.getLogger("django_workflows")

workflow_event = Signal()


def announce(definitions: dict[str, engine.Workflow], rows: Iterable[Any]) -> None:
    """Give each event to ``analytics`` and then to the signal's receivers."""
    from .models import WorkflowInstance

    for row in rows:
        definition = definitions.get(row.instance.workflow)
        event = engine.Event(type=row.type, instance_id=str(row.instance_id),
                             step=row.step or None, error=row.error, data=row.data,
                             at=row.created_at.timestamp())
        problems: list[BaseException] = []
        if definition is not None:
            problems += engine.deliver(definition, [event])
        for _receiver, result in workflow_event.send_robust(
                sender=WorkflowInstance, instance=row.instance, event=row):
            if isinstance(result, Exception):
                problems.append(result)
                if definition is not None and definition.on_observer_error is not None:
                    try:
                        definition.on_observer_error(result)
                    except Exception as nested:
                        problems.append(nested)
        for problem in problems:
            logger.error("Observer of workflow event %s #%s failed: %r", row.instance_id,
                         row.sequence, problem, exc_info=problem)
