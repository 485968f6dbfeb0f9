"""Who may do what in the admin: the model permissions, then the definition's own rule."""

from __future__ import annotations

import logging
from typing import Any

from django.http import HttpRequest

from .. import registry
from ..models import WorkflowInstance

logger = logging.getLogger("django_workflows")


def refusal_for(model_admin: Any, request: HttpRequest, instance: WorkflowInstance | None,
                action: str, workflow: str | None = None) -> str | None:
    """Why ``request.user`` may not ``action`` this instance, or None when they may.

    The change permission (the add permission for ``create``) comes first; a
    definition's ``permission(user, instance, action)`` rule may refuse on top
    of it, for every user. A rule that raises refuses.
    """
    allowed = (model_admin.has_add_permission(request) if action == "create"
               else model_admin.has_change_permission(request, instance))
    if not allowed:
        return "You do not have permission to change workflow instances."
    workflow_id = workflow or (instance.workflow if instance is not None else None)
    definition = registry.find(workflow_id) if workflow_id else None
    rule = getattr(definition, "permission", None)
    if rule is None:
        return None
    try:
        permitted = bool(rule(request.user, instance, action))
    except Exception:
        logger.exception("The permission rule of workflow %r raised", workflow_id)
        permitted = False
    if not permitted:
        return f'The workflow "{workflow_id}" does not allow you to {action.replace("_", " ")} ' \
               f"{'instances' if instance is None else 'this instance'}."
    return None
