"""Running service commands from the admin, and saying how each went as a message.

A refusal, a stale page, a busy row or a broken definition becomes a
message; nothing here lets an exception of the service reach the user as a 500.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django.contrib import messages
from django.http import HttpRequest

from .. import services
from ..exceptions import Busy, StaleRevision, WorkflowError, WorkflowNotMoved
from ..models import WorkflowInstance
from .access import refusal_for

logger = logging.getLogger("django_workflows")

# The commands the admin offers, in the order of its buttons.
COMMANDS = ("start", "next", "back", "skip", "retry", "cancel", "rollback")
LABELS = {"start": "Start", "next": "Next", "back": "Back", "skip": "Skip", "retry": "Retry",
          "cancel": "Cancel", "rollback": "Roll back"}
# Commands that undo work: the page asks before sending them.
DESTRUCTIVE = ("cancel", "rollback")


@dataclass(frozen=True)
class Result:
    moved: bool
    text: str
    level: int


def describe(instance: WorkflowInstance) -> str:
    where = f' at step "{instance.current_step}"' if instance.current_step else ""
    return f"{instance.get_status_display().lower()}{where}"


def run_command(model_admin: Any, request: HttpRequest, instance: WorkflowInstance, name: str,
                *, expected_revision: int | None = None) -> Result:
    """Run ``name`` on ``instance`` as ``request.user``; never raises a service error."""
    label = LABELS.get(name, name)
    if name not in COMMANDS:
        return Result(False, f'Unknown command "{name}".', messages.ERROR)
    refusal = refusal_for(model_admin, request, instance, name)
    if refusal:
        return Result(False, f"{label}: {refusal}", messages.ERROR)
    try:
        moved = services.command(instance, name, user=request.user,
                                 expected_revision=expected_revision)
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
    label = LABELS[name]
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
