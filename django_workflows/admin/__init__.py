"""The Django admin for workflows: instances, their diagrams and work, events, definitions.

Every change goes through the service layer: the admin never edits engine
fields, it only calls commands (next, back, skip, retry, cancel, rollback,
start), ``update_state`` and ``create``.
"""

from __future__ import annotations

from .events import WorkflowEventAdmin
from .instances import WorkflowInstanceAdmin
from .schedules import WorkflowScheduleAdmin
from .sweep_failures import SweepFailureAdmin
from .tasks import WorkflowTaskAdmin

__all__ = ["SweepFailureAdmin", "WorkflowEventAdmin", "WorkflowInstanceAdmin",
           "WorkflowScheduleAdmin", "WorkflowTaskAdmin"]
