"""Running service commands from the admin, and saying how each went as a message.

The buttons are the declared commands (``engine.ACTIONS``): those that act on the
instance on the page's command bar, those that act on an operation on each
operation's row, those offered on a journal's entries (``on_journal``: "Retry from
here") on each entry, each with a form of what it takes (``command_forms.py``). Which ones
apply, and why the others do not, is the service's answer for the user
(``services.applies``, ``services.applies_to_operations``,
``services.applies_to_journal``). A refusal, a stale page,
bad input, a busy row or a broken definition becomes a message: no exception of the
service reaches the user as a 500.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from django import forms
from django.contrib import messages
from django.http import HttpRequest

from .. import engine, services
from ..exceptions import Busy, NotAllowed, StaleRevision, WorkflowError, WorkflowNotMoved
from ..models import WorkflowInstance
from .command_forms import bound_form, given_values

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
    confirm: str | None  # what the page asks first (it undoes work, it reopens...), or None
    allowed: bool
    reason: str | None  # why it does not apply now
    form: forms.Form  # what it takes, with the field it acts on filled in (and hidden)

    @property
    def inputs(self) -> list[forms.BoundField]:
        """What a person types for it (the fields not hidden)."""
        return list(self.form.visible_fields())


def describe(instance: WorkflowInstance) -> str:
    where = f' at step "{instance.current_step}"' if instance.current_step else ""
    return f"{instance.get_status_display().lower()}{where}"


def verdicts(model_admin: Any, request: HttpRequest, instance: WorkflowInstance,
             commands: list[type[engine.PersonCommand]] | None = None
             ) -> dict[str, engine.Verdict]:
    """What each command (and ``update_state``), or each of ``commands``, would answer now
    for this user."""
    names = [c.name for c in commands] if commands is not None else list(engine.COMMANDS)
    if not model_admin.has_change_permission(request, instance):
        refused = engine.Verdict(False, "permission_denied", NO_CHANGE_PERMISSION)
        return dict.fromkeys(names, refused)
    try:
        return services.applies(instance, user=request.user, commands=commands)
    except WorkflowError as error:  # e.g. its workflow is not registered
        return dict.fromkeys(names, engine.Verdict(False, "error", str(error)))


def _button(declared: type[engine.PersonCommand], verdict: engine.Verdict,
            offered: dict[str, tuple[Any, ...]] | None = None, *, label: str | None = None,
            **initial: Any) -> Button:
    confirm = None
    if verdict.confirm:  # the rule says why to ask (back reopens a completed instance)
        confirm = f"{verdict.confirm}. {declared.label}?"
    elif declared.destructive:
        confirm = f"{declared.label} this instance?"
    return Button(declared.name, label or declared.label, declared.summary, confirm,
                  verdict.allowed, verdict.message,
                  bound_form(declared, offered=offered, **initial))


def buttons(found: dict[str, engine.Verdict], instance: WorkflowInstance | None = None
            ) -> list[Button]:
    """The command bar: the actions that act on the instance itself, each field that the
    declaration offers values for (``rewind``'s step) a choice of what it offers now."""
    return [_button(declared, found[name],
                    declared.offers(instance.snap) if instance is not None else None)
            for name, declared in engine.ACTIONS.items() if declared.acts_on == "instance"]


def operation_buttons(model_admin: Any, request: HttpRequest, instance: WorkflowInstance
                      ) -> dict[str, list[Button]]:
    """For each operation of the current step, by its id, the commands that apply to it
    now (the engine's dry run for that very operation)."""
    if not model_admin.has_change_permission(request, instance):
        return {}
    try:
        found = services.applies_to_operations(instance, user=request.user)
    except WorkflowError:
        return {}
    by_operation: dict[str, list[Button]] = {}
    for name, verdicts in found.items():
        declared = engine.ACTIONS.get(name)
        for operation, verdict in verdicts.items():
            if declared is not None and verdict.allowed:
                by_operation.setdefault(operation, []).append(
                    _button(declared, verdict, operation=operation))
    return by_operation


def journal_buttons(model_admin: Any, request: HttpRequest, instance: WorkflowInstance,
                    positions: dict[str, list[int]]) -> dict[str, dict[int, list[Button]]]:
    """For each entry shown of the journals of the current step's operations (``positions``
    by operation id), the commands offered on it that apply now: "Retry from here" (the
    engine's dry run for that very entry, which says what to confirm)."""
    if not model_admin.has_change_permission(request, instance) or not positions:
        return {}
    try:
        found = services.applies_to_journal(instance, user=request.user, positions=positions)
    except WorkflowError:
        return {}
    by_operation: dict[str, dict[int, list[Button]]] = {}
    for name, operations in found.items():
        declared = engine.ACTIONS.get(name)
        for operation, verdicts in operations.items():
            for position, verdict in verdicts.items():
                if declared is not None and verdict.allowed:
                    by_operation.setdefault(operation, {}).setdefault(position, []).append(
                        _button(declared, verdict, label=f"{declared.label} from here",
                                operation=operation, from_step=position))
    return by_operation


def run_command(model_admin: Any, request: HttpRequest, instance: WorkflowInstance, name: str,
                *, expected_revision: int | None = None, data: Any = None) -> Result:
    """Run ``name`` on ``instance`` as ``request.user``, with what its form in ``data`` (a
    POST) gives it, or its defaults; never raises a service error."""
    declared = engine.ACTIONS.get(name)
    if declared is None:
        return Result(False, f'Unknown command "{name}".', messages.ERROR)
    label = declared.label
    if not model_admin.has_change_permission(request, instance):
        return Result(False, f"{label}: {NO_CHANGE_PERMISSION}", messages.ERROR)
    form = bound_form(declared, data if data is not None else {})
    if not form.is_valid():
        problems = "; ".join(f"{form.fields[field].label}: {' '.join(map(str, errors))}"
                             for field, errors in form.errors.items())
        return Result(False, f"{label} not done: {problems}", messages.ERROR)
    try:
        moved = services.execute(instance, declared(**given_values(form)), user=request.user,
                                 expected_revision=expected_revision)
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
