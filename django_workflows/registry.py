"""Workflow definitions and schedules by id: registered by hand or found in apps'
``workflows.py``."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator

from django.apps import apps
from django.utils.module_loading import module_has_submodule

from .engine import DefinitionError, Workflow
from .engine.schedules import Schedule

_definitions: dict[str, Workflow] = {}
_origins: dict[str, str] = {}  # workflow id -> module that registered it
_schedules: dict[str, Schedule] = {}
_schedule_origins: dict[str, str] = {}  # schedule id -> module that registered it
# Problems met while discovering definitions, reported by the system checks.
discovery_errors: list[tuple[str, DefinitionError]] = []


def _origin(workflow: Workflow | Schedule) -> str:
    for name, module in list(sys.modules.items()):
        if module is not None and any(v is workflow for v in vars(module).values()):
            return name
    return "<unknown module>"


def register(workflow: Workflow, *, origin: str | None = None) -> Workflow:
    """Register a definition; two different definitions with one id is an error."""
    if not isinstance(workflow, Workflow):
        raise DefinitionError(f"register() takes a Workflow, not {workflow!r}")
    existing = _definitions.get(workflow.id)
    if existing is workflow:
        return workflow
    where = origin or _origin(workflow)
    if existing is not None:
        raise DefinitionError(
            f'Workflow id "{workflow.id}" is defined twice: in {_origins[workflow.id]} '
            f"and in {where}", "duplicate_id")
    before = set(_definitions)
    _definitions[workflow.id] = workflow
    _origins[workflow.id] = where
    try:
        for step in workflow.steps:  # nested definitions are found by id too
            if isinstance(step.nested, Workflow):
                register(step.nested, origin=f"{where} (nested in step \"{step.id}\")")
    except DefinitionError:
        for added in set(_definitions) - before:  # all or nothing
            unregister(added)
        raise
    return workflow


def unregister(workflow_id: str) -> None:
    _definitions.pop(workflow_id, None)
    _origins.pop(workflow_id, None)


def get(workflow_id: str) -> Workflow:
    """The registered definition with that id (KeyError if there is none)."""
    try:
        return _definitions[workflow_id]
    except KeyError:
        raise KeyError(f'No workflow "{workflow_id}" is registered') from None


def find(workflow_id: str) -> Workflow | None:
    return _definitions.get(workflow_id)


def all_definitions() -> Iterator[Workflow]:
    return iter(list(_definitions.values()))


def origin_of(workflow_id: str) -> str | None:
    return _origins.get(workflow_id)


def register_schedule(schedule: Schedule, *, origin: str | None = None) -> Schedule:
    """Register a schedule (docs/schedules.md); two different schedules with one id is an
    error."""
    if not isinstance(schedule, Schedule):
        raise DefinitionError(f"register_schedule() takes a Schedule, not {schedule!r}")
    existing = _schedules.get(schedule.id)
    if existing is schedule:
        return schedule
    where = origin or _origin(schedule)
    if existing is not None:
        raise DefinitionError(
            f'Schedule id "{schedule.id}" is defined twice: in '
            f"{_schedule_origins[schedule.id]} and in {where}", "duplicate_id")
    _schedules[schedule.id] = schedule
    _schedule_origins[schedule.id] = where
    return schedule


def unregister_schedule(schedule_id: str) -> None:
    _schedules.pop(schedule_id, None)
    _schedule_origins.pop(schedule_id, None)


def find_schedule(schedule_id: str) -> Schedule | None:
    return _schedules.get(schedule_id)


def all_schedules() -> list[Schedule]:
    return list(_schedules.values())


def _schedules_of(module: object, name: str) -> list[Schedule]:
    """A module's schedules: its ``Schedule`` objects and its ``SCHEDULES`` list."""
    found = [value for value in vars(module).values() if isinstance(value, Schedule)]
    listed = getattr(module, "SCHEDULES", ())
    if not isinstance(listed, list | tuple) or not all(isinstance(s, Schedule)
                                                       for s in listed):
        raise DefinitionError(f"{name}.SCHEDULES must be a list of Schedule objects")
    return [*found, *(s for s in listed if not any(s is f for f in found))]


def autodiscover(module_name: str = "workflows") -> None:
    """Import ``<app>.workflows`` of every installed app and register its definitions and
    schedules (module-level ``Schedule`` objects and a ``SCHEDULES`` list).

    A broken module or a duplicate id does not crash start-up here: it is
    recorded and reported by the system checks, which name the problem.
    """
    for app_config in apps.get_app_configs():
        if not module_has_submodule(app_config.module, module_name):
            continue
        name = f"{app_config.name}.{module_name}"
        try:
            module = importlib.import_module(name)
            for value in list(vars(module).values()):
                if isinstance(value, Workflow):
                    register(value, origin=name)
            for schedule in _schedules_of(module, name):
                register_schedule(schedule, origin=name)
        except DefinitionError as error:
            if not any(m == name and str(e) == str(error) for m, e in discovery_errors):
                discovery_errors.append((name, error))
