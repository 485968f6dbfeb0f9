"""Who sees which instance in the API (``docs/rules.md``, Access).

The rules are the service layer's (``services.access``): the API lists what a
user may see and answers 404 for the rest; what a user may *do* is judged by
the service under the row lock, on the instance as it is then.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from rest_framework import exceptions
from rest_framework.permissions import BasePermission
from rest_framework.request import Request

from .. import registry
from ..models import WorkflowInstance
from ..services.access import VIEW, definition_allows, visible_instances

__all__ = ["InstanceAccess", "listed", "visible_instances"]


def listed(user: Any, instances: QuerySet[WorkflowInstance]) -> QuerySet[WorkflowInstance]:
    """``instances`` without those of workflows whose rule refuses ``user`` the list.

    Only the list: such an instance is still there by its id, unless "view" is refused.
    """
    hidden = [d.id for d in registry.all_definitions()
              if d.permission is not None and not definition_allows(user, d.id, None, "list")]
    return instances.exclude(workflow__in=hidden) if hidden else instances


class InstanceAccess(BasePermission):
    """Authenticated users; an instance a definition hides from a user answers 404.

    Reads are judged here; commands are judged by the service under the lock.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        return bool(request.user and request.user.is_authenticated)

    def has_object_permission(self, request: Request, view: Any, obj: Any) -> bool:
        if not definition_allows(request.user, obj.workflow, obj, VIEW):
            raise exceptions.NotFound()  # as if it did not exist, like another user's
        return True
