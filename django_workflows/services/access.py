"""Who sees and acts on which instance, judged under the row lock (``docs/rules.md``, Access).

A user sees and acts on the instances they own; the model's view permission
lets a user see every instance, its change permission lets a user act on
every instance; a superuser does everything. The candidates of an open task
see its instance and act on the task (``claim``, ``release``, ``complete``),
not on the instance's other commands. On top of that a definition may add
its own rule, ``Workflow(permission=lambda user, instance, action: ...)``,
asked about ``"list"`` and ``"create"`` (``instance`` is None), ``"view"``,
``"update_state"`` and each command's name. A command declared ``for_operators``
(``pause``, ``resume``) needs the change permission: owning the instance is not
enough. Code that calls the services without a ``user`` is trusted: nothing is judged.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db.models import Q, QuerySet

from .. import registry
from ..engine import COMMANDS, TASK_COMMANDS, FieldError
from ..exceptions import InstanceNotFound, NotAllowed, WorkflowNotMoved
from ..models import TaskCandidate, TaskStatus, WorkflowInstance, WorkflowTask

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


def candidate_keys(user: Any) -> frozenset[str]:
    """What a user answers to as a task's candidate: ``user:<username>``, ``group:<name>``
    for each of their groups, ``perm:<app_label.codename>`` for each permission (kept on
    the user object for the request, as Django keeps its permissions)."""
    cached = getattr(user, "_dwf_candidate_keys", None)
    if cached is None:
        keys = {f"user:{user.get_username()}"}
        if hasattr(user, "groups"):
            keys |= {f"group:{name}" for name in user.groups.values_list("name", flat=True)}
        keys |= {f"perm:{perm}" for perm in user.get_all_permissions()}
        cached = user._dwf_candidate_keys = frozenset(keys)
    return cached


def is_candidate(user: Any, task: Any, owner_id: Any) -> bool:
    """Whether ``user`` may act on ``task`` (a task's snapshot or row) as one of its candidates."""
    if task.exclude_owner and owner_id is not None and user.pk == owner_id:
        return False  # nobody decides their own claim, not even a superuser
    return bool(user.is_superuser or candidate_keys(user) & set(task.candidates))


def acting_on_tasks(user: Any) -> QuerySet[Any]:
    """The open tasks ``user`` may act on, in the inbox's order: overdue first, then the
    soonest due, then the oldest."""
    tasks = WorkflowTask.objects.filter(status=TaskStatus.OPEN)
    if not user.is_superuser:
        tasks = tasks.filter(pk__in=TaskCandidate.objects.filter(
            key__in=candidate_keys(user)).values("task_id"))
    return tasks.exclude(excluded_user=user).order_by(*WorkflowTask.INBOX_ORDER)


def visible_tasks(user: Any) -> QuerySet[Any]:
    """The tasks ``user`` may see: those they may act on, took or decided, and every task
    of an instance they see (their own, or all with a permission)."""
    tasks = WorkflowTask.objects.all()
    if sees_all(user):
        return tasks
    return tasks.filter(Q(pk__in=acting_on_tasks(user).order_by().values("pk"))
                        | Q(instance__owner=user) | Q(claimed_by=user) | Q(completed_by=user))


def visible_instances(user: Any) -> QuerySet[WorkflowInstance]:
    """The instances ``user`` may see: their own, those whose open task they may act on,
    or all with a permission."""
    instances = WorkflowInstance.objects.all()
    if sees_all(user):
        return instances
    tasks = acting_on_tasks(user).order_by().values("instance_id")
    return instances.filter(Q(owner=user) | Q(pk__in=tasks))


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
    # A candidate sees the instance while its task is open; one who comes too late to a
    # task command (another candidate closed it meanwhile) hears so from the rules.
    task = instance.snap.task if action in TASK_COMMANDS else instance.snap.open_task
    candidate = task is not None and is_candidate(user, task, instance.owner_id)
    if not (owns(user, instance) or sees_all(user) or candidate):
        raise InstanceNotFound(f"No workflow instance {instance.pk}")
    if action in TASK_COMMANDS:
        return task_refusal(user, instance, action)
    if action == VIEW:
        return None if definition_allows(user, instance.workflow, instance, VIEW) \
            else NotAllowed("The workflow does not let you see this instance.")
    declared = COMMANDS.get(action)
    if action == "delete":
        allowed = user.is_superuser or user.has_perm(DELETE_PERMISSION)
    elif declared is not None and declared.for_operators:  # not the owner alone (pause)
        allowed = acts_on_all(user)
    else:
        allowed = owns(user, instance) or acts_on_all(user)
    what = action.replace("_", " ")
    if not allowed and declared is not None and declared.for_operators:
        return NotAllowed(f"You do not have permission to {what} this workflow instance: "
                          "it needs the permission to change every workflow instance.")
    if not allowed:
        return NotAllowed(f"You do not have permission to {what} this workflow instance.")
    if not definition_allows(user, instance.workflow, instance, action):
        return NotAllowed(f'The workflow "{instance.workflow}" does not allow you to {what} '
                          "this instance.")
    return None


def task_refusal(user: Any, instance: WorkflowInstance, action: str) -> NotAllowed | None:
    """The task commands: a candidate claims and completes; the claimer (or someone who
    acts on every instance) releases."""
    task = instance.snap.open_task
    if task is None:
        return None  # the rules say there is no open task
    if action == "release":
        allowed = task.claimed_by == str(user.pk) or acts_on_all(user)
    else:
        allowed = is_candidate(user, task, instance.owner_id)
    if not allowed:
        why = " (it is your own instance)" if task.exclude_owner and owns(user, instance) else ""
        return NotAllowed(f'You are not a candidate of the task "{task.title}"{why}.')
    if not definition_allows(user, instance.workflow, instance, action):
        return NotAllowed(f'The workflow "{instance.workflow}" does not allow you to {action} '
                          "this task.")
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


def may_send(user: Any, workflow_id: str, name: str,
             instance: WorkflowInstance | None = None, *, step: str | None = None) -> bool:
    """Whether ``user`` may send the signal ``name`` to the workflow (to ``instance``):
    a user who acts on every instance, or one its ``Signal(senders=[...])`` names (the
    senders of ``step``, or of the step ``instance`` waits in, else of every such signal of
    the workflow), and whom the definition's ``permission`` rule allows ``"signal"``."""
    if user is None:
        return True
    if not getattr(user, "is_authenticated", False):
        return False
    if not acts_on_all(user) and not candidate_keys(user) & senders_of(workflow_id, name,
                                                                       instance, step):
        return False
    return definition_allows(user, workflow_id, instance, "signal")


def senders_of(workflow_id: str, name: str, instance: WorkflowInstance | None,
               step: str | None = None) -> set[str]:
    definition = registry.find(workflow_id)
    if definition is None:
        return set()
    waiting = instance.snap.waiting if instance is not None and step is None else None
    if waiting is not None and waiting.kind == "signal" and waiting.name == name:
        step = waiting.step
    return {sender for where, signal in definition.signal_waits(name)
            if step in (None, where) for sender in signal.senders}


RESERVED_REFERENCE = "reference_reserved"


def refuse_run_reference(workflow_id: str, reference: str | None) -> None:
    """Refuse a reference of a registered schedule's runs (``"<schedule id>@..."``) for
    that schedule's workflow: only the schedule gives one (a field error on
    ``reference``). A user's create is judged so, or a user could fake a run, or take a
    due time's run before the schedule makes it (``services/schedules.py``: ``runs_of``)."""
    schedule_id, at, _ = (reference or "").partition("@")  # a schedule's id has no "@"
    schedule = registry.find_schedule(schedule_id) if at else None
    if schedule is None or schedule.workflow_id != workflow_id:
        return
    message = (f'A reference starting "{schedule.id}@" names a run of the schedule '
               f'"{schedule.id}": only the schedule gives it.')
    raise WorkflowNotMoved(message, RESERVED_REFERENCE,
                           field_errors=[FieldError("reference", message)])
