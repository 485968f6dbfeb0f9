"""Running service commands from the admin, and saying how each went as a message.

The buttons are the declared commands (``engine.ACTIONS``); which ones apply,
and why the others do not, is the service's answer for the user
(``services.applies``). A refusal, a stale page, a busy row or a broken
definition becomes a message: no exception of the service reaches the user as a 500.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from .. import engine, services
from ..exceptions import Busy, NotAllowed, StaleRevision, WorkflowError, WorkflowNotMoved
from ..models import WorkflowInstance

logger = logging.getLogger("django_workflows")

NO_CHANGE_PERMISSION = "You do not have permission to change workflow instances."


@dataclass(frozen=True)
class Result:
    moved: bool
    text: str
    level: int


@dataclass(frozen=True)
class Button:
    """A command as the instance page offers it."""

    name: str
    label: str
    summary: str
    confirm: bool  # it undoes work: the page asks first
    takes_reason: bool
    allowed: bool
    reason: str | None  # why it does not apply now


def describe(instance: WorkflowInstance) -> str:
    where = f' at step "{instance.current_step}"' if instance.current_step else ""
    return f"{instance.get_status_display().lower()}{where}"


def verdicts(model_admin: Any, request: HttpRequest, instance: WorkflowInstance
             ) -> dict[str, engine.Verdict]:
    """What each command (and ``update_state``) would answer now for this user."""
    if not model_admin.has_change_permission(request, instance):
        refused = engine.Verdict(False, "permission_denied", NO_CHANGE_PERMISSION)
        return dict.fromkeys(engine.COMMANDS, refused)
    try:
        return services.applies(instance, user=request.user)
    except WorkflowError as error:  # e.g. its workflow is not registered
        return dict.fromkeys(engine.COMMANDS, engine.Verdict(False, "error", str(error)))


# Commands aimed at a part of the instance (an operation) are offered on that part's row.
ON_THE_PAGE = {name: declared for name, declared in engine.ACTIONS.items()
               if set(declared.takes()) <= {"reason"}}


def buttons(found: dict[str, engine.Verdict]) -> list[Button]:
    return [Button(name, declared.label, declared.summary, declared.destructive,
                   "reason" in declared.takes(), found[name].allowed, found[name].message)
            for name, declared in ON_THE_PAGE.items()]


def run_command(model_admin: Any, request: HttpRequest, instance: WorkflowInstance, name: str,
                *, expected_revision: int | None = None, **values: Any) -> Result:
    """Run ``name`` on ``instance`` as ``request.user``; never raises a service error."""
    declared = engine.ACTIONS.get(name)
    if declared is None:
        return Result(False, f'Unknown command "{name}".', messages.ERROR)
    label = declared.label
    if not model_admin.has_change_permission(request, instance):
        return Result(False, f"{label}: {NO_CHANGE_PERMISSION}", messages.ERROR)
    try:
        moved = services.command(instance, name, user=request.user,
                                 expected_revision=expected_revision,
                                 **{k: v for k, v in values.items() if k in declared.takes()})
    except NotAllowed as error:
        return Result(False, f"{label}: {error}", messages.ERROR)
    except WorkflowNotMoved as error:
        return Result(False, f"{label} refused: {error.reason}", messages.WARNING)
    except StaleRevision as error:
        return Result(False, f"{label} not done: the instance changed since the page was "
                             f"loaded (revision {error.actual}, not {error.expected}). "
                             "Look again, then retry.", messages.WARNING)
    except Busy as error:
        return Result(False, f"{label} not done: {error}", messages.WARNING)
    except WorkflowError as error:
        return Result(False, f"{label} failed: {error}", messages.ERROR)
    # Work the command handed to an in-process runner may have moved it on since; the
    # message needs its status and step, not its state and snapshot (a bulk action runs this
    # once per selected instance).
    now = WorkflowInstance.objects.filter(pk=moved.pk).only("status", "current_step").first()
    return Result(True, f"{label}: done; the instance is now {describe(now or moved)}.",
                  messages.SUCCESS)


def run_bulk(model_admin: Any, request: HttpRequest, instances: list[WorkflowInstance],
             name: str) -> None:
    """Run ``name`` on every instance; one message for the moved, one per refusal."""
    label = engine.ACTIONS[name].label
    moved = 0
    for instance in instances:
        result = run_command(model_admin, request, instance, name)
        if result.moved:
            moved += 1
        else:
            short = str(instance.pk)[:8]
            model_admin.message_user(request, f"{instance.workflow} {short}…: {result.text}",
                                     result.level)
    if moved:
        model_admin.message_user(
            request, f"{label}: {moved} instance{'s' if moved != 1 else ''} moved.",
            messages.SUCCESS)
    elif not instances:
        model_admin.message_user(request, f"{label}: no instances selected.", messages.WARNING)
