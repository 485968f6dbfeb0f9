"""Reading tasks as the person deciding sees them (the admin and the API share these).

A task is shown with what its ``show`` says (read from its instance's state when someone
looks), and in the inbox with its instance's reference, owner and root instance: a child
workflow's task belongs to alice's onboarding, not to the child's id. The root is found
through the instance's parents, loaded with the task in one query as deep as the
registered definitions nest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet

from .. import engine, registry
from ..engine.schema import json_schema_of
from ..engine.shown import Shown, shown
from ..models import WorkflowInstance, WorkflowTask

logger = logging.getLogger("django_workflows")

# The instance's columns the inbox never reads (its state and snapshot may be large).
HEAVY = ("state", "snapshot")


# -- what a task shows -----------------------------------------------------------------------

def _titles(definition: engine.Workflow) -> dict[str, str]:
    """The state schema's titles by top-level key (``{"amount": {"title": "Amount"}}``)."""
    try:
        schema = json_schema_of(definition.state_schema) or {}
    except Exception:  # a label is a nicety: without the schema, keys in words
        return {}
    properties = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(properties, dict):
        return {}
    return {key: node["title"] for key, node in properties.items()
            if isinstance(node, dict) and isinstance(node.get("title"), str)}


def shown_for(task: WorkflowTask, instance: WorkflowInstance, user: Any = None) -> list[Shown]:
    """What ``task``'s ``show`` shows, from ``instance``'s state as it is now. A ``show`` hook
    that raises is logged and shown as one line saying so, never a 500."""
    definition = registry.find(task.workflow)
    step = definition.steps_by_id.get(task.step) if definition is not None else None
    defined = step.task if step is not None else None
    if task.asked is not None and definition is not None:  # asked by durable code
        defined = engine.task_of(definition, engine.TaskSnapshot(
            id=str(task.pk), step=task.step, title=task.title, asked=task.asked))
    if definition is None or defined is None or defined.show is None:
        return []
    ctx = engine.HookContext(state=instance.state or {}, instance_id=str(instance.pk),
                             workflow=task.workflow, step=task.step, user=user)

    def log(error: BaseException) -> None:
        logger.error('The show of the task of step "%s" of workflow "%s" raised (task %s, '
                     "instance %s)", task.step, task.workflow, task.pk, instance.pk,
                     exc_info=error)

    return shown(defined, ctx, titles=_titles(definition), on_error=log)


# -- the root instance -----------------------------------------------------------------------

def nesting_depth() -> int:
    """How many parents an instance of the registered definitions may have: 0 when no
    definition nests another, 1 when one does, and so on."""
    def depth(definition: engine.Workflow, seen: frozenset[str]) -> int:
        deepest = 0
        for step in definition.steps:
            child = step.nested
            if isinstance(child, str):
                child = registry.find(child)
            if child is not None and child.id not in seen:  # a cycle is check E003's
                deepest = max(deepest, 1 + depth(child, seen | {child.id}))
        return deepest

    return max((depth(d, frozenset({d.id})) for d in registry.all_definitions()), default=0)


def _parents(prefix: str, depth: int) -> list[str]:
    """``instance``, ``instance__parent``, ... ``depth`` parents up."""
    return [prefix + "__parent" * level for level in range(depth + 1)]


def with_roots(tasks: QuerySet[WorkflowTask], *, state: bool = False) -> QuerySet[WorkflowTask]:
    """``tasks`` with each one's instance, its owner and its parents up to the root, in
    the same query, without their snapshots; ``state``: with the instance's state (what
    its task shows is read from it), never its parents'."""
    paths = _parents("instance", nesting_depth())
    heavy = [f"{path}__{column}" for path in paths for column in HEAVY]
    if state:
        heavy.remove("instance__state")
    return tasks.select_related(*(f"{path}__owner" for path in paths)).defer(*heavy)


def reloaded(tasks: Iterable[WorkflowTask]) -> list[WorkflowTask]:
    """A page of ``tasks`` again, in its order, each with its instance (and its state),
    owner and root as :func:`with_roots` loads them: one query for the page."""
    tasks = list(tasks)
    found = with_roots(WorkflowTask.objects.filter(pk__in=[t.pk for t in tasks]),
                       state=True).in_bulk()
    return [found.get(task.pk, task) for task in tasks]


def root_of(instance: WorkflowInstance) -> WorkflowInstance:
    """The instance at the top of ``instance``'s parents (``instance`` when it has none)."""
    while instance.parent is not None:  # loaded by with_roots; a query beyond that depth
        instance = instance.parent
    return instance


def of_instances(instances: Any, field: str = "instance") -> Q:
    """The tasks whose instance is one of ``instances`` (a query of their ids), or a
    child, grandchild ... of one: a child's task belongs to its root too."""
    found = Q()
    for path in _parents(field, nesting_depth()):
        found |= Q(**{f"{path}__in": instances})
    return found


def of_root(root_id: Any) -> Q:
    """The tasks of the instance ``root_id`` and of the workflows nested in it."""
    found = Q()
    for path in _parents("instance", nesting_depth()):
        found |= Q(**{f"{path}_id": root_id})
    return found


def of_reference(reference: str) -> Q:
    """The tasks of the instances with ``reference``, and of their nested children."""
    return of_instances(WorkflowInstance.objects.filter(reference=reference).values("pk"))


def owner_name(instance: WorkflowInstance) -> str | None:
    owner = instance.owner
    return owner.get_username() if owner is not None else None

