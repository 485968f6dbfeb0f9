"""Who sees and acts on which instance (DESIGN.md §4, Access).

A user sees and acts on the instances they own; the model's view permission
lets a user see every instance, its change permission lets a user act on
every instance; a superuser does everything. Another user's instance answers
404, as if it did not exist. On top of that a definition may add its own
rule, ``Workflow(permission=lambda user, instance, action: ...)``; the
actions it is asked about are ``"list"`` and ``"create"`` (``instance`` is
None), ``"view"`` (detail and events), ``"update_state"`` and each command
name (``"start"``, ``"next"``, ...).
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .. import registry
from ..models import WorkflowInstance
from ..permissions import definition_allows

VIEW_PERMISSION = "django_workflows.view_workflowinstance"
CHANGE_PERMISSION = "django_workflows.change_workflowinstance"


def sees_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm(VIEW_PERMISSION)
                or user.has_perm(CHANGE_PERMISSION))


def acts_on_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm(CHANGE_PERMISSION))


def visible_instances(user: Any) -> QuerySet[WorkflowInstance]:
    """The instances ``user`` may see: their own, or all with a permission."""
    instances = WorkflowInstance.objects.all()
    return instances if sees_all(user) else instances.filter(owner=user)


def listed(user: Any, instances: QuerySet[WorkflowInstance]) -> QuerySet[WorkflowInstance]:
    """``instances`` without those of workflows whose rule refuses ``user`` the list.

    Only the list: such an instance is still there by its id, unless "view" is refused.
    """
    hidden = [d.id for d in registry.all_definitions()
              if d.permission is not None and not definition_allows(user, d.id, None, "list")]
    return instances.exclude(workflow__in=hidden) if hidden else instances


class InstanceAccess(BasePermission):
    """Object access for the instance endpoints; the queryset already hides others' rows.

    The view names the action in ``view.workflow_action``: ``"view"`` for reads,
    otherwise what the definition hook is asked about. A definition that hides
    an instance from a user ("view") hides it for every action.
    """

    message = "You may not do this to this workflow instance."

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        user = request.user
        if not definition_allows(user, obj.workflow, obj, "view"):
            raise exceptions.NotFound()  # as if it did not exist, like another user's
        action = view.workflow_action
        if action == "view":
            return True
        owns = obj.owner_id is not None and obj.owner_id == user.pk
        return (owns or acts_on_all(user)) and definition_allows(user, obj.workflow, obj, action)
