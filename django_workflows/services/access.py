"""Who sees and acts on which instance (DESIGN.md §4, Access), judged under the row lock.

A user sees and acts on the instances they own; the model's view permission
lets a user see every instance, its change permission lets a user act on
every instance; a superuser does everything. On top of that a definition
may add its own rule, ``Workflow(permission=lambda user, instance, action: ...)``,
asked about ``"list"`` and ``"create"`` (``instance`` is None), ``"view"``,
``"update_state"`` and each command's name. Code that calls the services
without a ``user`` is trusted: nothing is judged.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.db.models import QuerySet

from .. import registry
from ..exceptions import InstanceNotFound, NotAllowed

if TYPE_CHECKING:
    from ..models import WorkflowInstance

logger = logging.getLogger("django_workflows")

VIEW_PERMISSION = "django_workflows.view_workflowinstance"
CHANGE_PERMISSION = "django_workflows.change_workflowinstance"
DELETE_PERMISSION = "django_workflows.delete_workflowinstance"
VIEW = "view"


def sees_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm(VIEW_PERMISSION)
                or user.has_perm(CHANGE_PERMISSION))


def acts_on_all(user: Any) -> bool:
    return bool(user.is_superuser or user.has_perm(CHANGE_PERMISSION))


def owns(user: Any, instance: WorkflowInstance) -> bool:
    return instance.owner_id is not None and instance.owner_id == user.pk


def visible_instances(user: Any) -> QuerySet[WorkflowInstance]:
    """The instances ``user`` may see: their own, or all with a permission."""
    from ..models import WorkflowInstance

    instances = WorkflowInstance.objects.all()
    return instances if sees_all(user) else instances.filter(owner=user)


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


def refusal(user: Any, instance: WorkflowInstance, action: str) -> NotAllowed | None:
    """Why ``user`` may not ``action`` the instance as it is now, or None when they may.

    Raises :class:`InstanceNotFound` when the user may not even see it: another
    user's instance is not there for them.
    """
    if not getattr(user, "is_authenticated", False):
        return NotAllowed("Log in to do this.")
    if not (owns(user, instance) or sees_all(user)):
        raise InstanceNotFound(f"No workflow instance {instance.pk}")
    if action == VIEW:
        return None if definition_allows(user, instance.workflow, instance, VIEW) \
            else NotAllowed("The workflow does not let you see this instance.")
    if action == "delete":
        allowed = user.is_superuser or user.has_perm(DELETE_PERMISSION)
    else:
        allowed = owns(user, instance) or acts_on_all(user)
    what = action.replace("_", " ")
    if not allowed:
        return NotAllowed(f"You do not have permission to {what} this workflow instance.")
    if not definition_allows(user, instance.workflow, instance, action):
        return NotAllowed(f'The workflow "{instance.workflow}" does not allow you to {what} '
                          "this instance.")
    return None


def judge(user: Any, instance: WorkflowInstance, action: str) -> None:
    """Raise unless ``user`` may ``action`` the instance (the row as it is under the lock)."""
    if user is None:
        return
    refused = refusal(user, instance, action)
    if refused is not None:
        raise refused


def judge_create(user: Any, workflow_id: str) -> None:
    if user is not None and not definition_allows(user, workflow_id, None, "create"):
        raise NotAllowed(f'The workflow "{workflow_id}" does not allow you to create '
                         "instances.")
