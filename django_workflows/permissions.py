"""A definition's own permission rule: one answer for the API and the admin alike.

``Workflow(permission=lambda user, instance, action: ...)`` is asked on top of
each interface's access rules (ownership and model permissions); see
``docs/definitions.md``.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from . import registry

if TYPE_CHECKING:
    from .models import WorkflowInstance

logger = logging.getLogger(__name__)


def definition_allows(user: Any, workflow_id: str, instance: WorkflowInstance | None,
                      action: str) -> bool:
    """What the definition's rule says; no rule allows, a rule that raises refuses (logged)."""
    definition = registry.find(workflow_id)
    hook = definition.permission if definition is not None else None
    if hook is None:
        return True
    try:
        return bool(hook(user, instance, action))
    except Exception:
        logger.exception('The permission rule of workflow "%s" raised on "%s"; refusing',
                         workflow_id, action)
        return False
