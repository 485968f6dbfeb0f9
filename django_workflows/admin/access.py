"""Who may do what in the admin: the model permissions, then the definition's own rule."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest

from ..models import WorkflowInstance
from ..permissions import definition_allows


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
    if workflow_id and not definition_allows(request.user, workflow_id, instance, action):
        return f'The workflow "{workflow_id}" does not allow you to {action.replace("_", " ")} ' \
               f"{'instances' if instance is None else 'this instance'}."
    return None
